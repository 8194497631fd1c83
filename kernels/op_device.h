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

}  // namespace hy4
