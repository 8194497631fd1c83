#include "op_common.h"

#include <sstream>

namespace hy4 {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::BF16: return "bf16";
    case DType::F32: return "fp32";
    case DType::I32: return "int32";
  }
  return "unknown";
}
int dtype_size(DType d) { return d == DType::BF16 ? 2 : 4; }

namespace check {

void fail(const char* op, const std::string& what) { throw ArgumentError(std::string(op) + ": " + what); }

void dtype_is(const char* op, const char* name, const MatrixView& v, DType want) {
  if (v.dtype != want)
    fail(op, std::string("argument '") + name + "' has dtype " + dtype_name(v.dtype) + "; only " + dtype_name(want) +
                 " is supported");
}

void shape(const char* op, const char* name, const MatrixView& v, int64_t rows, int64_t cols_min, int64_t cols_max) {
  std::ostringstream os;
  if (v.rows != rows) {
    os << "argument '" << name << "' has " << v.rows << " rows; expected " << rows;
    fail(op, os.str());
  }
  if (v.cols < cols_min || v.cols > cols_max) {
    os << "argument '" << name << "' has " << v.cols << " columns; must be in [" << cols_min << ", " << cols_max
       << "]";
    fail(op, os.str());
  }
}

void stride(const char* op, const char* name, const MatrixView& v, int64_t max_stride) {
  std::ostringstream os;
  if (v.rows > 1 && v.row_stride < v.cols) {
    os << "argument '" << name << "' has row stride " << v.row_stride << ", smaller than its row of " << v.cols
       << " elements";
    fail(op, os.str());
  }
  if (v.row_stride > max_stride || v.row_stride < 0) {
    os << "argument '" << name << "' has row stride " << v.row_stride << "; must be in [" << v.cols << ", "
       << max_stride << "]";
    fail(op, os.str());
  }
}

void pointer(const char* op, const char* name, const MatrixView& v, int64_t align_bytes) {
  if (v.rows > 0 && v.cols > 0 && v.data == nullptr)
    fail(op, std::string("argument '") + name + "' is a null pointer");
  if (reinterpret_cast<uintptr_t>(v.data) % static_cast<uintptr_t>(align_bytes) != 0) {
    std::ostringstream os;
    os << "argument '" << name << "' at " << v.data << " is not aligned to " << align_bytes << " bytes";
    fail(op, os.str());
  }
}

void no_partial_overlap(const char* op, const char* out_name, const MatrixView& out, const char* in_name,
                        const MatrixView& in) {
  if (out.rows == 0 || in.rows == 0) return;
  const bool same = out.data == in.data && out.row_stride == in.row_stride && out.cols == in.cols &&
                    out.dtype == in.dtype;
  if (same) return;
  auto span = [](const MatrixView& v) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(v.data);
    const uintptr_t e = b + static_cast<uintptr_t>(((v.rows - 1) * v.row_stride + v.cols) * dtype_size(v.dtype));
    return std::pair<uintptr_t, uintptr_t>(b, e);
  };
  auto [ob, oe] = span(out);
  auto [ib, ie] = span(in);
  if (ob < ie && ib < oe)
    fail(op, std::string("argument '") + out_name + "' overlaps '" + in_name +
                 "' without being the same view; only an exact in-place view is allowed");
}

}  // namespace check
}  // namespace hy4
