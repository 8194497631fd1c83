// executor_control.h: host-side controls of the CPU SIMT executor (no kernel macros).
#pragma once

namespace hy4::cpu {
// Warp size the next launches run with: 32 or 64 (default: $HY4_CPU_WARP_SIZE or 64).
void set_warp_size(int w);
int warp_size();
}  // namespace hy4::cpu
