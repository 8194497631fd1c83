#include "case_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "platform/runtime.h"

namespace hy4::harness {

int64_t CaseFile::get(const std::string& name) const {
  auto it = ints.find(name);
  if (it == ints.end()) throw CaseFileError("case file (op " + op + "): missing integer '" + name + "'");
  return it->second;
}
int64_t CaseFile::get_or(const std::string& name, int64_t fallback) const {
  auto it = ints.find(name);
  return it == ints.end() ? fallback : it->second;
}
namespace {
int64_t in_range(const std::string& op, const std::string& name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw CaseFileError("case file (op " + op + "): int " + name + " = " + std::to_string(v) + " is outside [" +
                        std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}
}  // namespace
int64_t CaseFile::get_in(const std::string& name, int64_t lo, int64_t hi) const { return in_range(op, name, get(name), lo, hi); }
int64_t CaseFile::get_or_in(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const {
  return in_range(op, name, get_or(name, fallback), lo, hi);
}
std::string CaseFile::text_or(const std::string& name, const std::string& fallback) const {
  auto it = text.find(name);
  return it != text.end() ? it->second : fallback;
}

void CaseFile::check_generated_size(int64_t elements) const {
  if (elements < 0 || elements > kMaxGeneratedElements)
    throw CaseFileError("case file (op " + op + ") has no tensors, so its data would be generated from the seed, but its shape needs " +
                        std::to_string(elements) + " elements, more than the " + std::to_string(kMaxGeneratedElements) +
                        " a generated case may hold; include the tensors");
}

std::vector<uint16_t> CaseFile::tensor16(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw CaseFileError("case file (op " + op + "): missing tensor '" + name + "'");
  if (it->second.bits != 16) throw CaseFileError("case file: tensor '" + name + "' is not 16-bit");
  return std::vector<uint16_t>(it->second.words.begin(), it->second.words.end());
}
std::vector<uint32_t> CaseFile::tensor32(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw CaseFileError("case file (op " + op + "): missing tensor '" + name + "'");
  if (it->second.bits != 32) throw CaseFileError("case file: tensor '" + name + "' is not 32-bit");
  return it->second.words;
}
void CaseFile::put16(const std::string& name, const std::vector<uint16_t>& v) {
  tensors[name] = Tensor{16, std::vector<uint32_t>(v.begin(), v.end())};
}
void CaseFile::put32(const std::string& name, const std::vector<uint32_t>& v) { tensors[name] = Tensor{32, v}; }

std::string CaseFile::serialize() const {
  std::ostringstream os;
  os << "hy4check-case 1\nop " << op << "\n";
  for (auto& [k, v] : ints) os << "int " << k << " " << v << "\n";
  for (auto& [k, v] : text) {
    std::string one = v;
    for (char& c : one)
      if (c == '\n') c = ' ';
    os << "text " << k << " " << one << "\n";
  }
  for (auto& [k, t] : tensors) {
    os << "tensor " << k << " " << t.bits << " " << t.words.size() << "\n";
    char buf[16];
    for (std::size_t i = 0; i < t.words.size(); ++i) {
      std::snprintf(buf, sizeof buf, t.bits == 16 ? "%04x" : "%08x", t.words[i]);
      os << buf << ((i % 16 == 15 || i + 1 == t.words.size()) ? "\n" : " ");
    }
  }
  os << "end\n";
  return os.str();
}

CaseFile CaseFile::parse(const std::string& content, const std::string& src) {
  CaseFile c;
  std::istringstream is(content);
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& why) -> CaseFileError {
    return CaseFileError(src + ":" + std::to_string(lineno) + ": " + why);
  };
  if (!std::getline(is, line) || line != "hy4check-case 1") {
    lineno = 1;
    throw fail("not an hy4check case file (first line must be 'hy4check-case 1')");
  }
  lineno = 1;
  bool ended = false;
  while (std::getline(is, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "op") {
      ls >> c.op;
    } else if (kind == "int") {
      std::string k;
      long long v;
      if (!(ls >> k >> v)) throw fail("expected 'int NAME VALUE'");
      c.ints[k] = v;
    } else if (kind == "text") {
      std::string k, rest;
      ls >> k;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      c.text[k] = rest;
    } else if (kind == "tensor") {
      std::string k;
      int bits;
      long long n;
      if (!(ls >> k >> bits >> n) || (bits != 16 && bits != 32) || n < 0 || n > (1LL << 31))
        throw fail("expected 'tensor NAME 16|32 COUNT'");
      Tensor t;
      t.bits = bits;
      // The count is the file's word: reserve no more than the file can hold (each
      // element takes at least two characters), or a hostile count allocates gigabytes.
      if (static_cast<unsigned long long>(n) > content.size() / 2 + 1)
        throw fail("tensor '" + k + "' declares " + std::to_string(n) + " elements; the file has room for at most " +
                   std::to_string(content.size() / 2 + 1));
      t.words.reserve(static_cast<std::size_t>(n));
      while (static_cast<long long>(t.words.size()) < n) {
        std::string word;
        if (!(is >> word)) throw fail("tensor '" + k + "' ends after " + std::to_string(t.words.size()) + " of " + std::to_string(n) + " elements");
        char* end = nullptr;
        unsigned long w = std::strtoul(word.c_str(), &end, 16);
        if (word[0] == '-' || word[0] == '+' || *end != '\0' || (bits == 16 && w > 0xFFFF) || w > 0xFFFFFFFFul)
          throw fail("bad hex word '" + word + "' in tensor '" + k + "' (" + std::to_string(bits) + "-bit)");
        t.words.push_back(static_cast<uint32_t>(w));
      }
      std::getline(is, line);  // rest of the last data line
      c.tensors[k] = std::move(t);
    } else if (kind == "end") {
      ended = true;
      break;
    } else {
      throw fail("unknown line kind '" + kind + "'");
    }
  }
  if (!ended) throw fail("missing 'end' line (truncated file?)");
  if (c.op.empty()) throw fail("no 'op' line");
  return c;
}

void CaseFile::write(const std::string& path) const {
  std::ofstream f(path);
  if (!f) throw CaseFileError("cannot write case file " + path);
  f << serialize();
}

CaseFile CaseFile::read(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw CaseFileError("cannot read case file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

std::string failed_case_dir() {
  const char* d = std::getenv("HY4_CASE_DIR");
  return d && *d ? d : "hy4-failed-cases";
}

std::string save_failed_case(const CaseFile& c, const std::string& stem) {
  const std::string dir = failed_case_dir();
  ::mkdir(dir.c_str(), 0755);
  CaseFile keep = c;
  // On the CPU executor: the scheduling seed (with the case's own seed it fixes every
  // block's thread order, hy4::rt::begin_case_schedule; replay_case runs under it again)
  // and the warp size it ran at (hy4-repro's default for the file).
  if (hy4::rt::backend() == hy4::rt::Backend::Cpu) {
    if (!keep.ints.count("sched_seed")) keep.ints["sched_seed"] = static_cast<int64_t>(hy4::rt::schedule_seed());
    if (!keep.ints.count("cpu_warp")) keep.ints["cpu_warp"] = hy4::rt::warp_size();
  }
  const std::string content = keep.serialize();
  // <stem>.case, or <stem>.2.case, .3, ... when a file of another content holds the name
  // (two tests failing with the same seed, warp 32 and 64 running in parallel): created
  // exclusively, so no failing case overwrites another's file.
  for (int n = 1; n <= 100; ++n) {
    const std::string path = dir + "/" + stem + (n == 1 ? "" : "." + std::to_string(n)) + ".case";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      if (errno != EEXIST) return "";
      std::ifstream in(path, std::ios::binary);
      std::ostringstream held;
      held << in.rdbuf();
      if (held.str() == content) return path;  // the same case failed again
      continue;
    }
    std::size_t done = 0;
    while (done < content.size()) {
      const ssize_t w = ::write(fd, content.data() + done, content.size() - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    ::close(fd);
    return done == content.size() ? path : "";
  }
  return "";
}

namespace {
// "<op>_fuzzer warp<N> eager|graph": hy4-repro's flags, which ci/fuzz_campaign.py reads back.
std::string fuzz_origin(const CaseFile& c, int warp, bool graph) {
  return c.op + "_fuzzer warp" + std::to_string(warp) + (graph ? " graph" : " eager");
}
}  // namespace

void report_fuzz_failure(const CaseFile& c, const std::string& verdict_summary, int warp, bool graph, uint64_t seed) {
  CaseFile keep = c;
  keep.text["origin"] = fuzz_origin(c, warp, graph);
  keep.text["description"] = verdict_summary.substr(0, verdict_summary.find('\n'));
  const std::string path = save_failed_case(keep, c.op + "_fuzzer." + std::to_string(seed));
  std::fprintf(stderr, "%s_fuzzer: FAIL (warp %d, %s): %s\ncase file: %s (replay: hy4-repro%s --warp %d %s)\n",
               c.op.c_str(), warp, graph ? "graph" : "eager", verdict_summary.c_str(), path.c_str(),
               graph ? " --graph" : "", warp, path.c_str());
  std::abort();
}

namespace {
const char* env_or_null(const char* name) {
  const char* e = std::getenv(name);
  return e && *e ? e : nullptr;
}
}  // namespace

bool fuzz_announce_enabled() {
  static const bool on = [] {
    const char* echo = env_or_null("HY4_FUZZ_ECHO");
    return (echo && std::string(echo) != "0") || env_or_null("HY4_FUZZ_CASE_OUT");
  }();
  return on;
}

void announce_fuzz_case(const CaseFile& c, int warp, bool graph) {
  const char* echo = env_or_null("HY4_FUZZ_ECHO");
  if (echo && std::string(echo) != "0") {
    std::string line = "fuzz case: op " + c.op + " warp " + std::to_string(warp) + (graph ? " graph" : " eager");
    for (const auto& [name, value] : c.ints) line += " " + name + "=" + std::to_string(value);
    for (const auto& [name, t] : c.tensors) line += " |" + name + "|=" + std::to_string(t.words.size());
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  if (const char* out = env_or_null("HY4_FUZZ_CASE_OUT")) {
    CaseFile keep = c;
    keep.text["origin"] = fuzz_origin(c, warp, graph);
    if (const char* d = env_or_null("HY4_FUZZ_DESCRIPTION")) keep.text["description"] = d;
    keep.write(out);
  }
}

}  // namespace hy4::harness
