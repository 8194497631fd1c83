// case_file.h: the reproducer file format every op shares.
//
//   hy4check-case 1
//   op gate
//   int T 3                      named integers (shapes, strides, seeds, flags)
//   text origin gate.prop ...    free text (where the case came from)
//   tensor attn 16 15            name, element bits (16 or 32), element count
//   3f80 bf80 ...                hex words, 16 per line
//   end
//
// Property failures, fuzzer crashes and conformance failures write such files;
// hy4-repro replays them; regressions/cases/ keeps the ones worth keeping.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hy4::harness {

struct CaseFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CaseFile {
 public:
  std::string op;
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::string> text;
  struct Tensor {
    int bits = 16;
    std::vector<uint32_t> words;
  };
  std::map<std::string, Tensor> tensors;

  int64_t get(const std::string& name) const;
  int64_t get_or(const std::string& name, int64_t fallback) const;
  // The same, refused (CaseFileError naming the integer and the range) outside [lo, hi]:
  // every size a harness computes from a file goes through these, so no product of
  // checked values can overflow.
  int64_t get_in(const std::string& name, int64_t lo, int64_t hi) const;
  int64_t get_or_in(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const;
  // A file with no tensor at all is generated from its seed and shape (each op's
  // from_file calls make_<op>_case): a hand-written reproducer can be a few lines, and
  // `hy4-repro --expand` writes it out whole.  Refused (CaseFileError) when the shape
  // asks for more than kMaxGeneratedElements elements.
  static constexpr int64_t kMaxGeneratedElements = int64_t{1} << 24;
  bool generated() const { return tensors.empty(); }
  // A text line's value, or `fallback` when the file has none.
  std::string text_or(const std::string& name, const std::string& fallback) const;
  void check_generated_size(int64_t elements) const;
  std::vector<uint16_t> tensor16(const std::string& name) const;
  std::vector<uint32_t> tensor32(const std::string& name) const;
  void put16(const std::string& name, const std::vector<uint16_t>& v);
  void put32(const std::string& name, const std::vector<uint32_t>& v);

  std::string serialize() const;
  static CaseFile parse(const std::string& content, const std::string& source_name);
  void write(const std::string& path) const;
  static CaseFile read(const std::string& path);
};

// Directory failing cases are written to: $HY4_CASE_DIR, else ./hy4-failed-cases.
std::string failed_case_dir();
// Writes the case as <dir>/<stem>.case and returns the path ("" if it could not); when
// that name holds another case, as <stem>.2.case, .3, ... (never overwriting one).  On
// the CPU backend it adds `int sched_seed` (the executor's scheduling seed: replay_case
// runs under it again) and `int cpu_warp` (the warp size: hy4-repro's default for the
// file) unless the case has them.
std::string save_failed_case(const CaseFile& c, const std::string& stem);

// A fuzzer's differential check failed: writes the case as <op>_fuzzer.<seed>.case
// (text origin: fuzzer, warp, eager | graph; text description: the verdict's first
// line), prints the verdict and the hy4-repro command line, and aborts (libFuzzer keeps
// the input as a crash artifact).
[[noreturn]] void report_fuzz_failure(const CaseFile& c, const std::string& verdict_summary, int warp, bool graph,
                                      uint64_t seed);

// Every fuzzer's step before it runs the decoded case: nothing, unless
//   HY4_FUZZ_ECHO=1        prints the decoded case (ints, tensor sizes) to stderr - what
//                          an input means, for a person reading a corpus;
//   HY4_FUZZ_CASE_OUT=FILE writes the decoded case as a case file (origin and
//                          description from $HY4_FUZZ_DESCRIPTION) - how ci/fuzz_campaign.sh
//                          turns a crash or timeout artifact, which never reaches the
//                          check, into a case file for hy4-repro.
// to_file is only called when needed (serialising costs more than a small input's run).
bool fuzz_announce_enabled();
void announce_fuzz_case(const CaseFile& c, int warp, bool graph);
template <class ToFile>
void before_fuzz_run(ToFile&& to_file, int warp, bool graph) {
  if (fuzz_announce_enabled()) announce_fuzz_case(to_file(), warp, graph);
}
// Every fuzzer's last step: report_fuzz_failure when the check failed.
template <class ToFile>
void finish_fuzz_input(bool ok, const std::string& verdict_summary, ToFile&& to_file, int warp, bool graph,
                       uint64_t seed) {
  if (!ok) report_fuzz_failure(to_file(), verdict_summary, warp, graph, seed);
}

}  // namespace hy4::harness
