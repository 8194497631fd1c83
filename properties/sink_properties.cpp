// sink_properties.cpp: the sink op (SPEC section 2) through the suite.
//   exact small cases worked out by hand, rapidcheck properties (bitwise vs the bit
//   model over whole buffers, float64 within the bound, empty rows exactly +0 with
//   lse = sink, NaN lse stays NaN), every case split of the kernel, rows past the
//   grid cap, graph replay with the upstream length patterns, wave32 == wave64, the
//   head-bucket policy and every bad-argument class.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "device_buffer.h"
#include "numerics.h"
#include "platform/hy4_numeric.h"
#include "refusals.h"
#include "sink.h"
#include "sink_harness.h"
#include "support/suite.h"

using namespace hy4;
using namespace hy4::harness;

namespace {

::testing::AssertionResult sink_case_passes(const SinkCase& c, const std::string& stem) {
  ScopedStream s;
  const Verdict v = check_sink(c, run_sink_eager(c, s));
  if (v.ok()) return ::testing::AssertionSuccess();
  SinkCase keep = c;
  keep.origin = stem;
  return ::testing::AssertionFailure() << "seed " << c.seed << " T=" << c.shape.T << " H=" << c.shape.H
                                       << " D=" << c.shape.D << (c.shape.out_bf16 ? " bf16" : " fp32") << ": "
                                       << v.summary() << "\n"
                                       << test::save_case_for_replay(sink_to_file(keep), stem);
}

// The generator crosses the kernel's splits listed above random_sink_case
// (harness/sink_harness.cpp): D around the vector width and the group sizes, H around
// the group sizes, pads and offsets that break alignment, every value mode.
rc::Gen<SinkShape> gen_sink_shape(int64_t max_T) {
  using namespace rc;
  return gen::apply(
      [](int64_t T, int64_t H, int64_t D, bool bf16, std::tuple<int64_t, int64_t, int64_t, int64_t> pads,
         std::tuple<int64_t, int64_t> offs, int values) {
        SinkShape s;
        s.T = T;
        s.H = H;
        s.D = std::max<int64_t>(1, std::min<int64_t>(D, 16384 / H));
        s.out_bf16 = bf16;
        std::tie(s.out_head_pad, s.out_token_pad, s.lse_head_stride, s.lse_token_pad) = pads;
        std::tie(s.out_offset, s.lse_offset) = offs;
        s.values = static_cast<SinkValues>(values);
        return s;
      },
      // T: mostly small; one case in eight just past the few-token head groups
      gen::weightedOneOf<int64_t>({{7, gen::inRange<int64_t>(0, max_T + 1)},
                                   {1, gen::inRange<int64_t>(SinkPlan::kSpreadHeadsMaxTokens - 1,
                                                             SinkPlan::kSpreadHeadsMaxTokens + 3)}}),
      gen::weightedOneOf<int64_t>({{2, gen::element<int64_t>(1, 2, 3, 7, 8, 9, 16, 31, 32, 33, 64, 128)},
                                   {1, gen::inRange<int64_t>(1, 129)}}),
      gen::weightedOneOf<int64_t>({{3, gen::element<int64_t>(1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 128, 511, 512, 513, 1024)},
                                   {1, gen::inRange<int64_t>(1, 1025)}}),
      gen::arbitrary<bool>(),
      gen::tuple(gen::element<int64_t>(0, 0, 1, 4, 8, 512), gen::element<int64_t>(0, 0, 3, 8),
                 gen::inRange<int64_t>(1, 4), gen::inRange<int64_t>(0, 3)),
      gen::tuple(gen::element<int64_t>(0, 0, 0, 1, 4, 8), gen::inRange<int64_t>(0, 3)), gen::inRange(0, 5));
}

const float kInf = std::numeric_limits<float>::infinity();

// One token per row of `rows`: (kv length, lse, sink, out value), H = 1, D = 8, bf16;
// the sink of the first row serves all (one head).
struct ExactRow {
  int32_t len;
  float lse, sink, out;
};
SinkOutput run_rows(const std::vector<ExactRow>& rows, SinkCase* used) {
  SinkShape sh;  // one head, one token per row (the kv length is per token)
  sh.T = static_cast<int64_t>(rows.size());
  sh.H = 1;
  sh.D = 8;
  for (const auto& r : rows) sh.lengths.push_back(r.len);
  SinkCase c = make_sink_case(3, sh);
  c.sinks.assign(1, f32_bits(rows[0].sink));
  for (std::size_t t = 0; t < rows.size(); ++t) {
    c.lse[t * c.lse_ts()] = f32_bits(rows[t].lse);
    for (int d = 0; d < 8; ++d) c.out[t * c.out_ts() + d] = bf16_from_f32(rows[t].out);
  }
  *used = c;
  ScopedStream s;
  return run_sink_eager(c, s);
}

}  // namespace

// ---- small exact cases (worked out by hand) ----------------------------------------------
TEST(SinkExact, EqualLseAndSinkHalveTheOutput) {
  HY4_REQUIRE_DEVICE();
  // lse = sink = 0: sink_lse = log 2 = 0.6931472 (fp32 0x3f317218), scale = 1/2; 2.0 -> 1.0.
  SinkCase c;
  const auto o = run_rows({{3, 0.0f, 0.0f, 2.0f}}, &c);
  EXPECT_EQ(o.lse[0], 0x3f317218u) << hex32(o.lse[0]);
  for (int d = 0; d < 8; ++d) EXPECT_EQ(o.out[d], 0x3F80u) << "d=" << d;
  EXPECT_TRUE(check_sink(c, o).ok()) << check_sink(c, o).summary();
}

TEST(SinkExact, EmptyRowsEndExactlyZeroWithLseEqualToTheSink) {
  HY4_REQUIRE_DEVICE();
  // sink 1.5 for every token: (0 keys, out NaN), (0 keys, lse +inf), (5 keys but lse
  // +inf: empty), (5 keys, lse -inf: empty), (0 keys, out inf and lse NaN: still empty)
  SinkCase c;
  const auto o = run_rows({{0, 2.0f, 1.5f, NAN}, {0, kInf, 1.5f, 3.0f}, {5, kInf, 1.5f, 3.0f},
                           {5, -kInf, 1.5f, 3.0f}, {0, NAN, 1.5f, kInf}},
                          &c);
  for (int t = 0; t < 5; ++t) {
    EXPECT_EQ(o.lse[t * c.lse_ts()], f32_bits(1.5f)) << "token " << t;
    for (int d = 0; d < 8; ++d) EXPECT_EQ(o.out[t * c.out_ts() + d], 0u) << "token " << t << " d " << d;
  }
}

TEST(SinkExact, MinusInfSinkOnAnEmptyRowGivesMinusInfLseAndZeroOut) {
  HY4_REQUIRE_DEVICE();
  SinkCase c;
  const auto o = run_rows({{0, 2.0f, -kInf, NAN}, {4, 3.0f, -kInf, 1.5f}}, &c);
  EXPECT_EQ(o.lse[0], f32_bits(-kInf));  // no NaN from -inf - -inf
  for (int d = 0; d < 8; ++d) EXPECT_EQ(o.out[d], 0u);
  // active with a -inf sink: nothing to add, lse stays 3 and out stays 1.5
  EXPECT_EQ(o.lse[c.lse_ts()], f32_bits(3.0f));
  for (int d = 0; d < 8; ++d) EXPECT_EQ(o.out[c.out_ts() + d], bf16_from_f32(1.5f));
}

TEST(SinkExact, NaNLseOnAnActiveRowStaysVisible) {
  HY4_REQUIRE_DEVICE();
  SinkCase c;
  const auto o = run_rows({{2, NAN, 0.0f, 1.0f}, {2, NAN, 100.0f, 1.0f}}, &c);
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(o.lse[t * c.lse_ts()], 0x7fc00000u) << "token " << t;
    for (int d = 0; d < 8; ++d) EXPECT_EQ(o.out[t * c.out_ts() + d], 0x7FC0u) << "token " << t;
  }
}

TEST(SinkExact, LargeSinkTakesEverythingAndTinyLseScalesToZero) {
  HY4_REQUIRE_DEVICE();
  // sink 200 vs lse 0: sink_lse = 200 (exp(-200) vanishes next to 1), scale = exp(-200) = 0
  // in fp32 (below 2^-149); +inf sink: lse +inf, scale 0, 1.0 * 0 = +0.
  SinkCase c;
  const auto o = run_rows({{1, 0.0f, 200.0f, 1.0f}}, &c);
  EXPECT_EQ(o.lse[0], f32_bits(200.0f));
  for (int d = 0; d < 8; ++d) EXPECT_EQ(o.out[d], 0u);
  const auto p = run_rows({{1, 0.0f, kInf, 1.0f}}, &c);
  EXPECT_EQ(p.lse[0], f32_bits(kInf));
  for (int d = 0; d < 8; ++d) EXPECT_EQ(p.out[d], 0u);
}

// ---- properties ------------------------------------------------------------------------------
TEST(SinkProperties, MatchesBitModelAndFloat64) {
  HY4_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("sink == bit model bitwise (whole buffers), promises hold, float64 within bound", [] {
    const auto shape = *gen_sink_shape(10);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const SinkCase c = make_sink_case(seed, shape);
    RC_CLASSIFY(shape.D % (shape.out_bf16 ? 8 : 4) == 0, "D multiple of the vector");
    RC_CLASSIFY(shape.out_bf16, "bf16");
    const auto r = sink_case_passes(c, "sink.MatchesBitModelAndFloat64");
    if (!r) RC_FAIL(r.message());
  }));
}

TEST(SinkProperties, HyV4Tp8StrideTwoHeadView) {
  HY4_REQUIRE_DEVICE();
  for (uint64_t seed : test::seed_list())
    for (int64_t T : {1, 8, 64})
      for (SinkValues v : {SinkValues::Normal, SinkValues::Specials, SinkValues::Empty, SinkValues::Mixed}) {
        SinkShape sh = sink_hyv4_shape(T);
        sh.values = v;
        EXPECT_TRUE(sink_case_passes(make_sink_case(seed + T, sh), "sink.HyV4." + std::to_string(seed)));
      }
}

// Both sides of the vector / scalar split and of every heads-per-block group size, with
// the few-token groups (T = 3: half a unit per thread) and the many-token ones (T =
// kSpreadHeadsMaxTokens + 1: two units per thread).
TEST(SinkProperties, EveryVectorAndGroupSplitBothSides) {
  HY4_REQUIRE_DEVICE();
  for (int64_t T : {int64_t{3}, SinkPlan::kSpreadHeadsMaxTokens + 1})
    for (bool bf16 : {true, false})
      for (int64_t D : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024})
        for (int64_t H : {1, 3, 8, 33}) {
          if (T > 3 && H * D > 8 * 1024) continue;  // the CPU executor's time: H = 33 with D > 248 at T = 3 only
          SinkShape sh;
          sh.T = T;
          sh.H = H;
          sh.D = D;
          sh.out_bf16 = bf16;
          sh.values = SinkValues::Mixed;
          const std::string at = "T" + std::to_string(T) + "D" + std::to_string(D) + "H" + std::to_string(H);
          EXPECT_TRUE(sink_case_passes(make_sink_case(T * 100000 + D * 1000 + H, sh), "sink.Split." + at));
          sh.out_offset = bf16 ? 4 : 2;  // 8 bytes off: the plan must take the scalar path
          sh.out_head_pad = 8;
          EXPECT_TRUE(sink_case_passes(make_sink_case(T * 100000 + D * 1000 + H + 1, sh), "sink.SplitMisaligned." + at));
        }
  for (int64_t H : {32, 64, 127, 128}) {  // many heads: groups of 32 and a short last one
    SinkShape sh;
    sh.T = 2;
    sh.H = H;
    sh.D = 16;
    sh.values = SinkValues::Mixed;
    EXPECT_TRUE(sink_case_passes(make_sink_case(H, sh), "sink.ManyHeads.H" + std::to_string(H)));
  }
}

// Up to SinkPlan::kSpreadHeadsMaxTokens tokens a block serves a quarter of the heads (HY V4:
// 2 of 8, four blocks per token), past it the usual group (8, one block): both sides at the
// HY V4 stride-2 view and at H = 7 (short last group: 2+2+2+1 | 7), every value mode, and
// the plan's choice.
TEST(SinkProperties, SpreadHeadsBothSidesOfTheSplit) {
  HY4_REQUIRE_DEVICE();
  for (int64_t T : {SinkPlan::kSpreadHeadsMaxTokens, SinkPlan::kSpreadHeadsMaxTokens + 1})
    for (SinkValues v : {SinkValues::Normal, SinkValues::Specials, SinkValues::Empty, SinkValues::Mixed}) {
      SinkShape sh = sink_hyv4_shape(T);
      sh.values = v;
      EXPECT_TRUE(sink_case_passes(make_sink_case(0x5d + T * 8 + static_cast<int>(v), sh),
                                   "sink.SpreadHeads.HyV4.T" + std::to_string(T)));
      SinkShape odd;
      odd.T = T;
      odd.H = 7;
      odd.D = 512;
      odd.values = v;
      EXPECT_TRUE(sink_case_passes(make_sink_case(0x5e + T * 8 + static_cast<int>(v), odd),
                                   "sink.SpreadHeads.H7.T" + std::to_string(T)));
    }
  // The plan's choice (views validated, never launched): HY V4 bf16 D = 512, 8 heads.
  alignas(16) static uint16_t out[(SinkPlan::kSpreadHeadsMaxTokens + 1) * 8 * 512];
  static float lse[(SinkPlan::kSpreadHeadsMaxTokens + 1) * 8], sinks[8];
  static int32_t indptr[SinkPlan::kSpreadHeadsMaxTokens + 2];
  auto plan_of = [&](int64_t T) {
    SinkArgs a;
    a.out = HeadView{out, DType::BF16, T, 8, 512, 8 * 512, 512};
    a.lse = HeadView{lse, DType::F32, T, 8, 1, 8, 1};
    a.sinks = sinks;
    a.kv_indptr = indptr;
    return SinkPlan(a);
  };
  EXPECT_EQ(plan_of(1).group_heads(), 2);
  EXPECT_EQ(plan_of(SinkPlan::kSpreadHeadsMaxTokens).group_heads(), 2);
  EXPECT_EQ(plan_of(SinkPlan::kSpreadHeadsMaxTokens).grid_groups(), 4);
  EXPECT_EQ(plan_of(SinkPlan::kSpreadHeadsMaxTokens + 1).group_heads(), 8);
  EXPECT_EQ(plan_of(SinkPlan::kSpreadHeadsMaxTokens + 1).grid_groups(), 1);
}

// The vector path is exact like the scalar one, so only the plan's choice shows a split
// moved the wrong way (a decode batch falling back to scalar loads).  16-byte vectors
// whenever D is a multiple of the vector and every row that exists starts aligned: a
// stride of a size-1 dimension (one token, one head) is never used, so it does not count.
TEST(SinkProperties, VectorPathWheneverEveryRowStartsAligned) {
  alignas(16) static uint16_t out[2 * 4 * 520 + 8];
  static float lse[64], sinks[4];
  static int32_t indptr[4];
  auto plan_of = [&](int64_t T, int64_t H, int64_t D, int64_t token_stride, int64_t head_stride, int64_t offset) {
    SinkArgs a;
    a.out = HeadView{out + offset, DType::BF16, T, H, D, token_stride, head_stride};
    a.lse = HeadView{lse, DType::F32, T, H, 1, H, 1};
    a.sinks = sinks;
    a.kv_indptr = indptr;
    return SinkPlan(a);
  };
  EXPECT_TRUE(plan_of(2, 4, 512, 4 * 520, 520, 0).vector_path());    // aligned strides
  EXPECT_TRUE(plan_of(1, 4, 512, 2073, 520, 0).vector_path());       // one token: its stride unused
  EXPECT_TRUE(plan_of(2, 1, 512, 2048, 517, 0).vector_path());       // one head: its stride unused
  EXPECT_TRUE(plan_of(1, 1, 512, 1, 1, 0).vector_path());            // neither stride used
  EXPECT_FALSE(plan_of(2, 4, 512, 2073, 520, 0).vector_path());      // an odd token stride
  EXPECT_FALSE(plan_of(2, 4, 512, 4 * 520, 516, 0).vector_path());   // a head stride of 4 elements
  EXPECT_FALSE(plan_of(2, 4, 508, 4 * 520, 520, 0).vector_path());   // D not a multiple of 8
  EXPECT_FALSE(plan_of(1, 1, 512, 512, 512, 4).vector_path());       // row 0 starts 8 bytes off
}

TEST(SinkProperties, EveryRowEmptyAndOnlyTheLastEmpty) {
  HY4_REQUIRE_DEVICE();
  for (uint64_t seed : test::seed_list()) {
    SinkShape sh = sink_hyv4_shape(9);
    sh.lengths = std::vector<int32_t>(9, 0);
    EXPECT_TRUE(sink_case_passes(make_sink_case(seed, sh), "sink.AllEmpty"));
    sh.lengths = {3, 3, 3, 3, 3, 3, 3, 3, 0};
    EXPECT_TRUE(sink_case_passes(make_sink_case(seed, sh), "sink.LastEmpty"));
  }
}

TEST(SinkProperties, ZeroTokensLaunchNothingAndWriteNothing) {
  HY4_REQUIRE_DEVICE();
  EXPECT_TRUE(sink_case_passes(make_sink_case(7, sink_hyv4_shape(0)), "sink.ZeroTokens"));
}

// The kernels divide by a plan-made magic, not by d (op_common.h, small_div_magic; sink's
// r / units, routing's j / k): (r * magic) >> 31 as op_device.h's small_div computes it, for
// every divisor in [1, kSmallDivMaxDivisor] against every r below kSmallDivMaxDividend, on
// the host (no backend needed).  That sink's and routing's operands are inside those bounds
// is held by static_asserts next to their kernels (sink.hip, routing.hip).
TEST(SmallDiv, MagicDividesExactly) {
  for (int64_t d = 1; d <= kSmallDivMaxDivisor; ++d) {
    const uint64_t m = small_div_magic(d);
    for (int64_t r = 0; r < kSmallDivMaxDividend; ++r) {
      const int64_t q = static_cast<int64_t>((static_cast<uint64_t>(r) * m) >> 31);
      if (q != r / d) FAIL() << "small_div_magic(" << d << ") = " << m << ": r = " << r << " gives " << q;
    }
  }
}

// Tokens per block (1 below 2048 tokens, then T / 1024 up to 4, then 2 from 5120 tokens)
// on both sides of each step, with a last set shorter than the rest (T % P != 0); H = 2
// with D = 8 (vector) and D = 3 (scalar) keeps the large T cheap.
TEST(SinkProperties, EveryTokensPerBlockSplitBothSides) {
  HY4_REQUIRE_DEVICE();
  const int64_t step = SinkPlan::kTokensPerBlockStep;  // P = T / step from 2 steps on
  const int64_t two = SinkPlan::kTwoTokensFromSteps * step;  // back to 2 from here
  for (int64_t T : {2 * step - 1, 2 * step, 2 * step + 1, 3 * step - 1, 3 * step, 3 * step + 1, 4 * step - 1, 4 * step,
                    4 * step + 1, 4 * step + 2, 4 * step + 3, two - 1, two, two + 1})
    for (int64_t D : {3, 8}) {
      SinkShape sh;
      sh.T = T;
      sh.H = 2;
      sh.D = D;
      sh.values = SinkValues::Mixed;
      EXPECT_TRUE(sink_case_passes(make_sink_case(0x7b + T * 2 + D, sh), "sink.TokensPerBlock.T" + std::to_string(T) + "D" + std::to_string(D)))
          << SinkPlan::tokens_per_block(T) << " tokens per block";
    }
  EXPECT_EQ(SinkPlan::tokens_per_block(2047), 1);
  EXPECT_EQ(SinkPlan::tokens_per_block(2048), 2);
  EXPECT_EQ(SinkPlan::tokens_per_block(3072), 3);
  EXPECT_EQ(SinkPlan::tokens_per_block(4096), 4);
  EXPECT_EQ(SinkPlan::tokens_per_block(5119), 4);
  EXPECT_EQ(SinkPlan::tokens_per_block(5120), 2);
  EXPECT_EQ(SinkPlan::tokens_per_block(8192), 2);
  EXPECT_EQ(SinkPlan::tokens_per_block(int64_t{1} << 24), 2);
  // The plan's grid along the tokens: ceil(T / tokens per block), capped at kMaxGrid.  The
  // grid-stride loop gives the same bits with a block more or less, so only the plan can
  // tell (a mutant sweep found an extra block unseen).  Plan only: the views are checked,
  // never dereferenced, so far_address (refusals.h) stands in for the buffers.
  auto grid_of = [](int64_t T) {
    SinkArgs a;
    a.out = HeadView{far_address(1), DType::BF16, T, 2, 8, 16, 8};
    a.lse = HeadView{far_address(2), DType::F32, T, 2, 1, 2, 1};
    a.sinks = static_cast<const float*>(far_address(3));
    a.kv_indptr = static_cast<const int32_t*>(far_address(4));
    return SinkPlan(a).grid_tokens();
  };
  EXPECT_EQ(grid_of(1), 1);
  EXPECT_EQ(grid_of(2 * step - 1), 2 * step - 1);
  EXPECT_EQ(grid_of(2 * step), step);
  EXPECT_EQ(grid_of(2 * step + 1), step + 1);
  EXPECT_EQ(grid_of(3 * step + 1), step + 1);
  EXPECT_EQ(grid_of(4 * step + 3), step + 1);
  EXPECT_EQ(grid_of(two + 1), two / 2 + 1);
  EXPECT_EQ(grid_of(2 * SinkPlan::kMaxGrid - 3), SinkPlan::kMaxGrid - 1);
  EXPECT_EQ(grid_of(2 * SinkPlan::kMaxGrid + 1), SinkPlan::kMaxGrid);
}

// Several tokens per block with a partial last head group (grid y: groups of G heads,
// the last one with H mod G): a token's shared scale slots are dt * (the group's heads) + g,
// so the partial group packs them tighter than a full one.  bf16 D = 64 (G = 32) with
// H = 33, and fp32 D = 512 (G = 4) with H = 5, at 2, 3 and 4 tokens per block.
TEST(SinkProperties, PartialHeadGroupAtSeveralTokensPerBlock) {
  HY4_REQUIRE_DEVICE();
  struct Shape { int64_t T, H, D; bool bf16; };
  for (const Shape& s : {Shape{2049, 33, 64, true}, Shape{4099, 33, 64, true}, Shape{3073, 5, 512, false}}) {
    SinkShape sh;
    sh.T = s.T;
    sh.H = s.H;
    sh.D = s.D;
    sh.out_bf16 = s.bf16;
    sh.values = SinkValues::Mixed;
    EXPECT_TRUE(sink_case_passes(make_sink_case(0x9a + s.T, sh), "sink.PartialGroup.T" + std::to_string(s.T) + "H" +
                                                                    std::to_string(s.H)));
  }
}

// A thread's units at their most: four tokens per block (T = 4097, the last set one
// token; the first token of a set is read before the scalar phase, the others after it)
// with 512 vectors per token (fp32 D = 1024, two heads: SinkPlan::kRowSlotsVector = 2 per
// thread and token) and 1024 elements per token on the scalar path (fp32 D = 1024
// misaligned, bf16 D = 1023: kRowSlotsScalar = 4), and one unit fewer per token.
TEST(SinkProperties, EveryUnitSlotOfAThreadAtFourTokensPerBlock) {
  HY4_REQUIRE_DEVICE();
  struct Shape { int64_t H, D; bool bf16, misaligned; };
  for (const Shape& s : {Shape{2, 1024, false, false}, Shape{2, 1020, false, false}, Shape{1, 1024, false, true},
                         Shape{1, 1023, true, false}}) {
    SinkShape sh;
    sh.T = 4097;
    sh.H = s.H;
    sh.D = s.D;
    sh.out_bf16 = s.bf16;
    if (s.misaligned) {
      sh.out_offset = 2;
      sh.out_head_pad = 8;
    }
    sh.values = SinkValues::Mixed;
    const std::string name = "sink.UnitSlots.H" + std::to_string(s.H) + "D" + std::to_string(s.D) + (s.bf16 ? "bf16" : "f32");
    EXPECT_TRUE(sink_case_passes(make_sink_case(0x51 + s.D, sh), name));
  }
}

// Tokens past the grid cap (SinkPlan::kMaxGrid blocks of tokens_per_block(T) tokens: 2 at
// this T) are reached only through the grid-stride loop: H = 1, D = 1 keeps it cheap; D = 8
// takes the vector path there.  H = 8, D = 8: every block takes two sets or more (blocks 0
// and 1 a third), and a set's scalar phase (16 (token, head) slots, threads 0..15) must
// wait until every thread has scaled the previous set's units from those slots (the
// barrier between sets); with H = 1 one thread both reads and writes almost every slot, so
// a missing barrier showed only in some fiber orders.
TEST(SinkProperties, RowsPastTheGridCapAreWritten) {
  HY4_REQUIRE_DEVICE();
  for (auto [H, D] : {std::pair<int64_t, int64_t>{1, 1}, {1, 8}, {8, 8}}) {
    SinkShape sh;
    sh.T = SinkPlan::kMaxGrid * SinkPlan::kMaxTokensPerBlock + 3;
    EXPECT_GT(sh.T, SinkPlan::kMaxGrid * SinkPlan::tokens_per_block(sh.T)) << "not past the grid cap";
    sh.H = H;
    sh.D = D;
    sh.values = SinkValues::Mixed;
    EXPECT_TRUE(sink_case_passes(make_sink_case(0x9c2 + (H - 1) * 16 + D, sh),
                                 "sink.RowsPastTheGridCap.H" + std::to_string(H) + "D" + std::to_string(D)));
  }
}

// ---- graph replay --------------------------------------------------------------------------
TEST(SinkGraph, ReplayWithUpstreamLengthPatternsEqualsEagerAndBitModel) {
  HY4_REQUIRE_DEVICE();
  ScopedStream s;
  const auto r = sink_graph_scenario(0x51, 16, 8, s);
  ASSERT_EQ(r.outs.size(), 11u);
  for (std::size_t k = 0; k < r.outs.size(); ++k) {
    const Verdict v = check_sink(r.as_run[k], r.outs[k]);
    EXPECT_TRUE(v.ok()) << "replay " << k << ": " << v.summary() << "\n"
                        << test::save_case_for_replay(sink_to_file(r.as_run[k]), "sink.GraphReplay." + std::to_string(k));
    EXPECT_EQ(run_sink_eager(r.as_run[k], s), r.outs[k]) << "replay " << k << " differs from an eager launch";
  }
}

// ---- wave32 == wave64 ------------------------------------------------------------------------
TEST(SinkWarp, Wave32AndWave64GiveTheSameBits) {
  HY4_REQUIRE_DEVICE();
  HY4_REQUIRE_BOTH_WARP_SIZES();
  for (uint64_t seed : test::seed_list())
    EXPECT_TRUE(test::same_bits_at_warp_32_and_64(random_sink_case(seed, 8), run_sink_eager)) << "seed " << seed;
}

// ---- bad arguments and the head-bucket policy ------------------------------------------------
TEST(SinkArguments, EveryBadArgumentClassIsRefusedWithItsName) {
  HY4_REQUIRE_DEVICE();
  int classes = 0;
  const auto failures = sink_bad_argument_failures(&classes);
  EXPECT_GE(classes, 34);
  for (const auto& f : failures) ADD_FAILURE() << f;
}

TEST(SinkArguments, HeadBucketPolicy) {
  // SPEC: BF16 padded heads {16, 32, 64, 128}, FP8 {16, 128}, gfx942 BF16 64 rejected.
  for (int p = 1; p <= 256; ++p)
    for (SinkTarget tg : {SinkTarget::AnyBuilt, SinkTarget::Gfx942, SinkTarget::Gfx950}) {
      const bool bf16 = p == 16 || p == 32 || p == 128 || (p == 64 && tg == SinkTarget::Gfx950);
      const bool fp8 = p == 16 || p == 128;
      EXPECT_EQ(SinkPlan::bucket_allowed(p, AttnDType::BF16, tg), bf16) << "BF16 " << p;
      EXPECT_EQ(SinkPlan::bucket_allowed(p, AttnDType::FP8, tg), fp8) << "FP8 " << p;
    }
}
