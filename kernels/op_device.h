// op_device.h: what the ops' kernels share on the device side (op_common.h is the plans'
// side).  Included after platform/hy4_platform.h.
#pragma once

#include <cstdint>

namespace hy4 {

// The device row count of SPEC's graph mode: *num_rows clamped to [0, rows]; without
// one every row is real.  Rows at or past it are graph padding.
HY4_DEVICE inline int64_t device_row_count(const int32_t* num_rows, int64_t rows) {
  if (!num_rows) return rows;
  const int32_t v = *num_rows;
  return v < 0 ? 0 : (v < rows ? v : rows);
}

// r / d for r < kSmallDivMaxDividend and d <= kSmallDivMaxDivisor, magic = small_div_magic(d)
// (op_common.h says why it is exact).
HY4_DEVICE inline uint32_t small_div(uint32_t r, uint32_t magic) {
  return static_cast<uint32_t>((static_cast<uint64_t>(r) * magic) >> 31);
}

}  // namespace hy4
