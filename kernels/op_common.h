// op_common.h: what every op's plan shares: dtypes, strided 2-D views of device
// buffers, and the argument checks whose messages name the argument and the limit.
// Plans validate at construction; a plan that exists is safe to launch.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hy4 {

enum class DType { BF16, F32, I32 };
const char* dtype_name(DType d);
int dtype_size(DType d);

// A bad argument: the plan refuses it, nothing is launched and no buffer touched.
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// rows x cols elements, row r starts at data + r * row_stride elements, the elements
// of a row are contiguous.
struct MatrixView {
  void* data = nullptr;
  DType dtype = DType::BF16;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
};

// Threads for a block that gives one thread to each of n items: the power of two >= n,
// at least lo (a full wave64: 64), at most hi.
constexpr int pow2_threads(int64_t n, int lo, int hi) {
  int t = lo;
  while (t < n && t < hi) t *= 2;
  return t;
}

// r / d on the device with no integer division (about 30 instructions around a reciprocal,
// on the chain to a kernel's first loads): the plan makes small_div_magic(d) = 2^31 / d + 1
// once, and op_device.h's small_div(r, magic) = (r * magic) >> 31.  That is r / d + e with
// 0 < e < r / 2^31 <= 2^-16 < 1 / d for r < kSmallDivMaxDividend = 2^15 and d <= 2^10, so the
// floor is r / d's (which is at most 1 - 1 / d past an integer).  Every d in [1, 2^10] and
// r < 2^15 is checked by SmallDiv.MagicDividesExactly (properties/sink_properties.cpp).
constexpr int64_t kSmallDivMaxDividend = int64_t{1} << 15;
constexpr int64_t kSmallDivMaxDivisor = int64_t{1} << 10;
constexpr uint32_t small_div_magic(int64_t d) { return static_cast<uint32_t>((int64_t{1} << 31) / d + 1); }

namespace check {
// Each throws ArgumentError("<op>: argument '<name>' ...") when the rule is broken.
void dtype_is(const char* op, const char* name, const MatrixView& v, DType want);
void shape(const char* op, const char* name, const MatrixView& v, int64_t rows, int64_t cols_min, int64_t cols_max);
// Row stride in [cols, max_stride]; a view of 0 or 1 rows may have any stride in
// [0, max_stride], since it is never used (PyTorch gives size-1 dimensions any stride:
// a [W, 1] tensor transposed has row stride 1).  SPEC's "stride smaller than the row" is
// read as a stride that a second row would overlap with.
void stride(const char* op, const char* name, const MatrixView& v, int64_t max_stride);
// Null is refused only for a view with elements (an empty tensor's pointer may be null).
void pointer(const char* op, const char* name, const MatrixView& v, int64_t align_bytes);
// out may be exactly the same view as in (in place) but must not overlap it otherwise.
// A view's extent ends with its last row's last element (its row padding is not in it).
void no_partial_overlap(const char* op, const char* out_name, const MatrixView& out, const char* in_name,
                        const MatrixView& in);
[[noreturn]] void fail(const char* op, const std::string& what);
}  // namespace check

}  // namespace hy4
