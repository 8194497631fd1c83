// case_file_fuzzer: libFuzzer target for the case-file reader and every op's
// from_file, the path a reproducer handed between people takes through hy4-repro:
// bytes -> CaseFile::parse -> replay_case (the op's from_file, a plan, an eager launch
// or a graph replay, the check).  Under ASan + UBSan.  A file must end in one of:
//   a run (pass; a FAIL verdict is a finding: a file the reader accepts must describe
//   a case the bit model and the kernel agree on),
//   CaseFileError (a one-line error naming the line or the integer),
//   ArgumentError (the plan refusing a shape the file asked for, naming the argument).
// Anything else - a crash, an access outside a buffer, another exception - is a finding.
// Chain files re-create their run from a seed; T is kept small here so that one input
// stays fast (the reader's range check itself is covered).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "case_file.h"
#include "device_buffer.h"
#include "op_common.h"
#include "platform/runtime.h"
#include "registry.h"

using namespace hy4::harness;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool graph = data[0] & 1;  // first byte: eager or graph, warp 32 or 64
  hy4::rt::set_warp_size(data[0] & 2 ? 64 : 32);
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static ScopedStream stream;
  try {
    const CaseFile f = CaseFile::parse(text, "fuzz-input");
    if (f.op == "chain" && f.get_or("T", 0) > 64) return 0;
    const Verdict v = replay_case(f, stream, graph);
    if (!v.ok()) {
      std::fprintf(stderr, "case_file_fuzzer: an accepted file FAILS (%s): %s\n", graph ? "graph" : "eager",
                   v.summary().c_str());
      std::abort();
    }
  } catch (const CaseFileError&) {
  } catch (const hy4::ArgumentError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "case_file_fuzzer: a file ended in an unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
