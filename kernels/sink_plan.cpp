// The sink op's plan: argument validation, the head-bucket policy and the launch
// shape (backend independent).
#include <algorithm>

#include "sink.h"

namespace hy4 {

bool SinkPlan::bucket_allowed(int padded, AttnDType dtype, SinkTarget target) {
  if (dtype == AttnDType::FP8) return padded == 16 || padded == 128;
  const bool bucket = padded == 16 || padded == 32 || padded == 64 || padded == 128;
  if (!bucket) return false;
  // gfx942 has no BF16 64-head kernel; AnyBuilt serves gfx942 too, so it refuses it.
  if (padded == 64 && target != SinkTarget::Gfx950) return false;
  return true;
}

namespace {
const char* kOp = "sink";

std::string str(int64_t v) { return std::to_string(v); }

// Elements a [T, H, C] view spans from its first element (T, H, C >= 1: validated).
int64_t span_elems(const HeadView& v) {
  return (v.tokens - 1) * v.token_stride + (v.heads - 1) * v.head_stride + v.cols;
}

void check_view(const char* name, const HeadView& v, int64_t T, int64_t H, int64_t C) {
  if (v.tokens != T) check::fail(kOp, "argument '" + std::string(name) + "' has " + str(v.tokens) + " tokens; expected " + str(T));
  if (v.heads != H) check::fail(kOp, "argument '" + std::string(name) + "' has " + str(v.heads) + " heads; expected " + str(H));
  if (v.cols != C) check::fail(kOp, "argument '" + std::string(name) + "' has " + str(v.cols) + " columns; expected " + str(C));
  if (v.head_stride < 0 || v.head_stride > SinkPlan::kMaxStride || v.token_stride < 0 || v.token_stride > SinkPlan::kMaxStride)
    check::fail(kOp, "argument '" + std::string(name) + "' has a stride outside [0, " + str(SinkPlan::kMaxStride) + "]");
  if (H > 1 && v.head_stride < C)
    check::fail(kOp, "argument '" + std::string(name) + "' has head stride " + str(v.head_stride) +
                         ", smaller than its head of " + str(C) + " elements");
  if (T > 1 && v.token_stride < (H - 1) * v.head_stride + C)
    check::fail(kOp, "argument '" + std::string(name) + "' has token stride " + str(v.token_stride) +
                         ", smaller than its " + str(H) + " heads span (" + str((H - 1) * v.head_stride + C) + ")");
  const int size = dtype_size(v.dtype);
  if (T > 0 && v.data == nullptr) check::fail(kOp, "argument '" + std::string(name) + "' is a null pointer");
  if (reinterpret_cast<uintptr_t>(v.data) % static_cast<uintptr_t>(size) != 0)
    check::fail(kOp, "argument '" + std::string(name) + "' is not aligned to " + str(size) + " bytes");
}
}  // namespace

SinkPlan::SinkPlan(const SinkArgs& a) : args_(a) {
  const int64_t T = a.out.tokens, H = a.out.heads, D = a.out.cols;
  if (T < 0 || T > kMaxTokens)
    check::fail(kOp, "argument 'out' has " + str(T) + " tokens; must be in [0, " + str(kMaxTokens) + "]");
  if (H < 1 || H > kMaxHeads) check::fail(kOp, "argument 'out' has " + str(H) + " heads; must be in [1, " + str(kMaxHeads) + "]");
  if (D < 1 || D > kMaxDim) check::fail(kOp, "argument 'out' has head dim " + str(D) + "; must be in [1, " + str(kMaxDim) + "]");
  if (a.out.dtype != DType::BF16 && a.out.dtype != DType::F32)
    check::fail(kOp, std::string("argument 'out' has dtype ") + dtype_name(a.out.dtype) + "; only bf16 and fp32 are supported");
  if (a.lse.dtype != DType::F32)
    check::fail(kOp, std::string("argument 'lse' has dtype ") + dtype_name(a.lse.dtype) + "; only fp32 is supported");
  check_view("out", a.out, T, H, D);
  check_view("lse", a.lse, T, H, 1);
  if (T > 0 && a.sinks == nullptr) check::fail(kOp, "argument 'sinks' is a null pointer");
  if (T > 0 && a.kv_indptr == nullptr) check::fail(kOp, "argument 'kv_indptr' is a null pointer");
  if (reinterpret_cast<uintptr_t>(a.sinks) % 4 != 0) check::fail(kOp, "argument 'sinks' is not aligned to 4 bytes");
  if (reinterpret_cast<uintptr_t>(a.kv_indptr) % 4 != 0) check::fail(kOp, "argument 'kv_indptr' is not aligned to 4 bytes");
  if (T > 0) {
    const uintptr_t ob = reinterpret_cast<uintptr_t>(a.out.data), lb = reinterpret_cast<uintptr_t>(a.lse.data);
    const uintptr_t oe = ob + static_cast<uintptr_t>(span_elems(a.out) * dtype_size(a.out.dtype));
    const uintptr_t le = lb + static_cast<uintptr_t>(span_elems(a.lse) * 4);
    if (ob < le && lb < oe) check::fail(kOp, "argument 'lse' overlaps 'out'");
  }
  if (a.aiter_padded_heads < 0) check::fail(kOp, "argument 'aiter_padded_heads' is negative");
  if (a.aiter_padded_heads > 0) {
    if (a.aiter_padded_heads < H)
      check::fail(kOp, "argument 'aiter_padded_heads' is " + str(a.aiter_padded_heads) + ", fewer than the " + str(H) + " heads");
    if (!bucket_allowed(a.aiter_padded_heads, a.attn_dtype, a.target)) {
      const bool fp8 = a.attn_dtype == AttnDType::FP8;
      std::string why = fp8 ? "FP8 allows padded heads {16, 128}" : "BF16 allows padded heads {16, 32, 64, 128}";
      if (!fp8 && a.aiter_padded_heads == 64)
        why = a.target == SinkTarget::Gfx942 ? "gfx942 has no BF16 64-head bucket"
                                             : "gfx942 has no BF16 64-head bucket and the target is not named "
                                               "(SinkTarget::AnyBuilt: the build also serves gfx942)";
      check::fail(kOp, "argument 'aiter_padded_heads' is " + str(a.aiter_padded_heads) + " for " +
                           (fp8 ? "FP8" : "BF16") + " attention: " + why);
    }
  }
  // Launch shape: 16-byte vectors when every head row starts aligned; G heads per
  // block so a block has about two units (vectors or elements) per thread, or half a
  // unit up to kSpreadHeadsMaxTokens tokens (more blocks for a decode batch).
  const int vec = a.out.dtype == DType::BF16 ? 8 : 4;
  auto aligned = [&](int64_t stride, int64_t count) { return count <= 1 || stride % vec == 0; };
  vector_ = D % vec == 0 && reinterpret_cast<uintptr_t>(a.out.data) % 16 == 0 && aligned(a.out.head_stride, H) &&
            aligned(a.out.token_stride, T);
  const int64_t units = vector_ ? D / vec : D;
  units_magic_ = small_div_magic(units);
  const int64_t block_units = T <= kSpreadHeadsMaxTokens ? kBlockThreads / 2 : 2 * kBlockThreads;
  group_ = static_cast<int>(std::clamp<int64_t>(block_units / units, 1, std::min<int64_t>(H, kMaxGroupHeads)));
  const int tb = tokens_per_block(T);
  grid_x_ = std::min<int64_t>((T + tb - 1) / tb, kMaxGrid);
  grid_y_ = (H + group_ - 1) / group_;
  const int64_t per_thread = (group_ * units + kBlockThreads - 1) / kBlockThreads;  // per token
  const int slots = vector_ ? kRowSlotsVector : kRowSlotsScalar;
  if (per_thread > slots)
    throw std::logic_error("sink plan: " + str(per_thread) + " units per thread and token exceed the kernel's " + str(slots));
}

}  // namespace hy4
