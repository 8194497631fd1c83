// executor_control.h: host-side controls of the CPU SIMT executor (no kernel macros).
#pragma once

namespace hy4::cpu {
// Warp size the next launches run with: 32 or 64 (default: $HY4_CPU_WARP_SIZE or 64).
void set_warp_size(int w);
int warp_size();
// Seed of the block and thread scheduling order (default: $HY4_CPU_SCHED_SEED or
// 0x5eed).  Every launch mixes in its own launch number, so launches differ too.
void set_sched_seed(unsigned long long seed);
unsigned long long sched_seed();
// Starts a case's schedule: the launches after this call, numbered 0, 1, ... from it, are
// scheduled from (sched_seed(), key, their number), whatever the process ran before.  A
// case run twice under its own key runs each block with the same thread order, schedule
// and shared-memory garbage, so a race inside a block replays exactly from the case file.
// (Which pool thread runs which block, and so the timing between blocks, still varies.)
void begin_case_schedule(unsigned long long key);
// Called once, with what happened, before the process dies of a kernel fault: from the
// fault reporter when a kernel thread touches unmapped memory (SIGSEGV / SIGBUS), after
// the line naming the kernel, block and thread (under ASan, from ASan's death callback);
// from the block watchdog when a block runs past HY4_CPU_BLOCK_TIMEOUT_S, after its
// report.  nullptr: none.
void set_fault_hook(void (*hook)(const char* what));
}  // namespace hy4::cpu
