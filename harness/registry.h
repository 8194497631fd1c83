// registry.h: replay any op's case file by the op name it holds (used by hy4-repro,
// the conformance run and the fuzzers' crash files).
#pragma once

#include <string>
#include <vector>

#include "case_file.h"
#include "platform/runtime.h"
#include "verdict.h"

namespace hy4::harness {

// Ops with a harness, in SPEC order.
const std::vector<std::string>& harnessed_ops();

// Runs the case on the current backend, eagerly or (graph = true) captured once and
// replayed, and checks it.  Throws CaseFileError for an unknown op or a bad file.  On the
// CPU executor it runs under the file's `int sched_seed` (save_failed_case writes it) and
// the case's seed (the harness's begin_case_schedule key), so each block runs in the
// thread order it ran in when the case failed: a race inside a block replays exactly.
Verdict replay_case(const CaseFile& c, hy4::rt::Stream s, bool graph);

// The case as the op's harness reads it, written out whole (a generated file gets its
// tensors; text lines are kept).  Throws CaseFileError like replay_case.
CaseFile expand_case(const CaseFile& c);

}  // namespace hy4::harness
