// hy4-repro: replays case files (from failing properties, fuzzer crashes, conformance
// runs, or regressions/cases/) on this build's backend and prints the first elements
// that differ from the bit model or break the float64 bound.
//
//   hy4-repro [--warp 32|64] [--graph] [--require-gpu] CASE_FILE...
//   hy4-repro --expand CASE_FILE      print the case whole (a file without tensors is
//                                     generated from its seed and shape), run nothing
//
//   --warp N        CPU backend: run the kernels at warp size N (default: the file's
//                   `int cpu_warp`, the warp size it failed at; else $HY4_CPU_WARP_SIZE or 64)
//   --graph         capture the launch once and replay it, instead of an eager launch
//   --require-gpu   fail (exit 3) when the backend has no device, instead of skipping
// Exit status: 0 every case passes, 1 a case fails, 2 bad usage or unreadable file,
// 3 no device (skipped, or failed with --require-gpu).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "case_file.h"
#include "device_buffer.h"
#include "fault_case.h"
#include "registry.h"
#include "session.h"

int main(int argc, char** argv) {
  bool graph = false, require_gpu = false, expand = false;
  int warp = 0;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--graph") {
      graph = true;
    } else if (a == "--require-gpu") {
      require_gpu = true;
    } else if (a == "--expand") {
      expand = true;
    } else if (a == "--warp" && i + 1 < argc) {
      warp = std::atoi(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: hy4-repro [--warp 32|64] [--graph] [--require-gpu] CASE_FILE...\n       hy4-repro --expand CASE_FILE\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "hy4-repro: unknown option '%s'\n", a.c_str());
      return 2;
    } else {
      files.push_back(a);
    }
  }
  hy4::harness::KeepCaseOnFault::set_enabled(false);  // the files replayed are the reproducers
  if (files.empty()) {
    std::fprintf(stderr, "usage: hy4-repro [--warp 32|64] [--graph] [--require-gpu] CASE_FILE...\n");
    return 2;
  }
  if (expand) {
    for (const auto& path : files) {
      try {
        std::fputs(hy4::harness::expand_case(hy4::harness::CaseFile::read(path)).serialize().c_str(), stdout);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "hy4-repro: %s\n", e.what());
        return 2;
      }
    }
    return 0;
  }
  if (hy4::rt::device_count() == 0) {
    std::fprintf(stderr, "hy4-repro: %s: no %s device: %s\n", require_gpu ? "FAILED" : "SKIPPED",
                 hy4::rt::backend_name(), hy4::rt::no_device_reason().c_str());
    return 3;
  }
  try {
    const std::string assigned = hy4::harness::select_assigned_device();
    if (!assigned.empty()) std::printf("hy4-repro: %s\n", assigned.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hy4-repro: FAILED: %s\n", e.what());
    return 1;
  }
  if (warp) {
    try {
      hy4::rt::set_warp_size(warp);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hy4-repro: --warp: %s\n", e.what());
      return 2;
    }
  }
  const int default_warp = hy4::rt::warp_size();  // the CPU backend's, for files without cpu_warp
  std::printf("hy4-repro: backend %s, device %s, %s\n", hy4::rt::backend_name(), hy4::rt::device_name().c_str(),
              graph ? "graph replay" : "eager launch");
  int status = 0;
  hy4::harness::ScopedStream s;
  for (const auto& path : files) {
    try {
      const auto c = hy4::harness::CaseFile::read(path);
      std::string at_warp;
      if (hy4::rt::backend() == hy4::rt::Backend::Cpu) {
        const int64_t w = warp ? warp : c.get_or("cpu_warp", default_warp);
        if (w != 32 && w != 64) throw hy4::harness::CaseFileError(path + ": int cpu_warp " + std::to_string(w) + ": must be 32 or 64");
        hy4::rt::set_warp_size(static_cast<int>(w));
        at_warp = ", warp " + std::to_string(w);
      }
      const auto v = hy4::harness::replay_case(c, s, graph);
      std::printf("%s %s (op %s%s): %s\n", v.ok() ? "PASS" : "FAIL", path.c_str(), c.op.c_str(), at_warp.c_str(),
                  v.summary().c_str());
      if (!v.ok()) status = 1;
    } catch (const hy4::harness::CaseFileError& e) {
      std::fprintf(stderr, "hy4-repro: %s\n", e.what());
      return 2;
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", path.c_str(), e.what());
      status = 1;
    }
  }
  return status;
}
