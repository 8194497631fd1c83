// fault_case.h: a case that ends in a kernel fault still leaves a reproducer.
//
// A differential check writes its case file when outputs differ; a fault gives no
// outputs to compare.  While a KeepCaseOnFault scope is open around a case's launches:
//  - a runtime error leaving the scope (the CPU executor's KernelFault: shared memory out
//    of bounds, a barrier or collective not reached, a misaligned vector; a GPU's
//    illegal address, thrown by the next synchronizing call) writes the case as it
//    passes and goes on unchanged;
//  - a kernel thread touching unmapped memory on the CPU executor (SIGSEGV), or a block
//    that runs past HY4_CPU_BLOCK_TIMEOUT_S there (a hang): the process ends, and
//    rt::set_fault_hook writes the case, its `fault` saying which, before it dies.
// The file is <case dir>/<op>.fault.<seed>.case (text fault: what happened), and one
// stderr line names it with its hy4-repro command (--warp, --graph as it ran).
// Every op harness opens one in run_<op>_eager and run_<op>_replays, after its plan is
// made (an argument refusal is not a fault).  The open scope is process-wide (the fault
// arrives on an executor thread); scopes nest, the innermost is written.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "case_file.h"

namespace hy4::harness {

class KeepCaseOnFault {
 public:
  // `to_file` makes the case file (only when a fault happened); graph: the launches are
  // a capture and its replays (hy4-repro --graph).
  KeepCaseOnFault(std::function<CaseFile()> to_file, bool graph);
  ~KeepCaseOnFault();
  KeepCaseOnFault(const KeepCaseOnFault&) = delete;
  KeepCaseOnFault& operator=(const KeepCaseOnFault&) = delete;

  // Writes the case (text fault = what) and prints its line; returns the path, "" if it
  // could not be written.  Never throws.
  std::string save(const std::string& what) const noexcept;
  // Off: scopes write nothing (hy4-repro: the file it replays is the reproducer).
  static void set_enabled(bool on);

 private:
  std::function<CaseFile()> to_file_;
  bool graph_;
  int exceptions_at_open_;
  KeepCaseOnFault* outer_;
};

}  // namespace hy4::harness
