// sink: grouped attention-sink application with empty-row repair (SPEC section 2).
//
// In place on sparse MLA decode's output.  Per token t and head h:
//   active   = kv_indptr[t+1] > kv_indptr[t]  and  lse[t,h] is finite or NaN
//   safe     = active ? lse : -inf                       (+-inf lse counts as empty)
//   m        = max(safe, sink[h])                         (NaN if either is NaN)
//   sink_lse = m + log_f32(exp_f32(safe - m) + exp_f32(sink - m))
//   scale    = exp_f32(safe - sink_lse)
//   out      = active ? round(float(out) * scale) : +0    (whatever out held)
//   lse      = sink_lse
// Choices written down here (SPEC is silent or leaves it open):
// - m = -inf (empty row, sink -inf): sink_lse = -inf, out +0, no -inf - -inf anywhere.
// - m = +inf (a +inf sink): sink_lse = +inf and scale = 0 (the sink takes everything).
// - max() is written out so that a NaN lse on an active row, or a NaN sink, makes m
//   NaN: out and lse of that (t, h) become the canonical NaN, never swallowed.
// - Every NaN result is canonical (bf16 0x7FC0, fp32 0x7FC00000).
// - Nothing outside the [T, H, D] view of out and the [T, H] view of lse is written:
//   the padded heads and the padding between tokens keep their bits.
// - kv_indptr[t+1] <= kv_indptr[t] (a decreasing pair) is an empty row.
//
// Head-bucket policy of the upstream AITER sparse-MLA backend: when the layout is
// AITER's (aiter_padded_heads > 0), the padded head count must be a bucket of the
// attention dtype: BF16 {16, 32, 64, 128}, FP8 {16, 128}; gfx942 rejects BF16 64.
// The plan is told the target (SinkArgs::target).  A build that serves several AMD
// targets (gfx942;gfx950 in one fat binary) must refuse what any of them refuses
// unless the caller names the device it runs on: SinkTarget::AnyBuilt, the default,
// is the strictest rule (gfx942's), and a caller that knows the device passes it.
#pragma once

#include "op_common.h"
#include "platform/runtime.h"

namespace hy4 {

enum class SinkTarget { AnyBuilt, Gfx942, Gfx950 };
enum class AttnDType { BF16, FP8 };

// A strided [T, H, C] view: element (t, h, c) at data + t*token_stride + h*head_stride + c.
struct HeadView {
  void* data = nullptr;
  DType dtype = DType::BF16;
  int64_t tokens = 0, heads = 0, cols = 0;
  int64_t token_stride = 0, head_stride = 0;
};

struct SinkArgs {
  HeadView out;                      // [T, H, D] bf16 or fp32, updated in place
  HeadView lse;                      // [T, H, 1] fp32, updated in place (cols = 1)
  const float* sinks = nullptr;      // [H] fp32
  const int32_t* kv_indptr = nullptr;  // [T + 1] int32, device memory
  int aiter_padded_heads = 0;        // AITER's padded head count (0: not an AITER layout)
  AttnDType attn_dtype = AttnDType::BF16;  // the attention kernel's dtype (bucket policy)
  SinkTarget target = SinkTarget::AnyBuilt;
};

class SinkPlan {
 public:
  static constexpr int64_t kMaxTokens = int64_t{1} << 24;
  static constexpr int64_t kMaxHeads = 128;
  static constexpr int64_t kMaxDim = 1024;
  static constexpr int64_t kMaxStride = int64_t{1} << 30;
  static constexpr int64_t kMaxGrid = 65535;   // token blocks; more tokens: grid-stride loop
  static constexpr int kBlockThreads = 256;
  static constexpr int kMaxGroupHeads = 32;    // heads one block serves (shared scale slots)
  // Up to this many tokens a block serves a quarter of the heads (about half a unit per
  // thread instead of two: HY V4 2 heads, not 8): four times the blocks, so a decode
  // batch's loads and scalar chains are spread over more SMs (H200, T = 1 / 8 / 64:
  // 2.60 / 2.64 / 2.73 -> 2.11 / 2.24 / 2.44 us).
  static constexpr int64_t kSpreadHeadsMaxTokens = 64;
  // Tokens per block: 1 up to 2047 tokens, then T / 1024 up to 4 below 5120 tokens, then 2
  // (a block's scalar phase and loads cover several tokens at once where there are tokens
  // enough to fill the GPU; H200, HY V4 at T = 4096: 2 tokens per block 18.4 us, 4 tokens
  // 16.7; 8 tokens at 8192 40.8 against 4 tokens' 39.1).  A set's later tokens are read and
  // written one at a time (ncu, H100, T = 4096: 46 % of the samples wait on their loads), and
  // once the grid takes several waves (from about 5120 tokens) two tokens per block beat
  // four: H100, twenty-eighth session, two calls, x0.95 - 0.99 from 5120 to 32768 (8192:
  // 49.67 / 49.90 -> 48.57 / 48.48 us), while 4 stays best at 4096 (2: x1.04) and 3072
  // (2: x1.07).  Measured on the H100 only.
  static constexpr int kMaxTokensPerBlock = 4;
  static constexpr int64_t kTokensPerBlockStep = 1024;
  static constexpr int64_t kTwoTokensFromSteps = 5;  // from 5 x 1024 tokens on: 2 per block
  static int tokens_per_block(int64_t T) {
    const int64_t n = T / kTokensPerBlockStep;
    if (n < 1) return 1;
    if (n >= kTwoTokensFromSteps) return 2;
    return static_cast<int>(n);  // 1 .. kTwoTokensFromSteps - 1 = kMaxTokensPerBlock
  }
  static_assert(kTwoTokensFromSteps - 1 <= kMaxTokensPerBlock, "a set's tokens fit the shared scale slots");

  // Units (16-byte vectors or elements) of one token's G head rows per thread: G x units
  // <= max(2 kBlockThreads, units), so 2 on the vector path (units <= kMaxDim / 4) and
  // kMaxDim / kBlockThreads = 4 elements otherwise.  The kernel keeps a set's units (up to
  // kMaxTokensPerBlock tokens) in registers; the plan checks the bound.
  static constexpr int kRowSlotsVector = 2;
  static constexpr int kRowSlotsScalar = kMaxDim > 2 * kBlockThreads ? static_cast<int>(kMaxDim) / kBlockThreads : 2;

  explicit SinkPlan(const SinkArgs& args);  // throws ArgumentError naming the argument
  void launch(hy4::rt::Stream stream) const;
  const SinkArgs& args() const { return args_; }
  bool vector_path() const { return vector_; }
  int group_heads() const { return group_; }
  int64_t grid_tokens() const { return grid_x_; }  // blocks along the tokens (each tokens_per_block tokens)
  int64_t grid_groups() const { return grid_y_; }
  // Whether the bucket policy allows an AITER layout (also used by the tests).
  static bool bucket_allowed(int padded_heads, AttnDType dtype, SinkTarget target);

 private:
  SinkArgs args_;
  bool vector_ = false;  // D % vec == 0 and every row start aligned: 16-byte vectors
  int group_ = 1;        // heads per block
  uint32_t units_magic_ = 0;  // small_div_magic(units of a head row): the kernel's r / units
  int64_t grid_x_ = 0, grid_y_ = 0;
};

}  // namespace hy4
