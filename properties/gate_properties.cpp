// gate_properties.cpp: the gate op (SPEC section 1) through the suite.
//   exact small cases, rapidcheck properties (bitwise vs the bit model, bound vs
//   float64), every width, strides and offsets, in place, T = 0, graph replay,
//   wave32 == wave64, and every bad-argument class.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "device_buffer.h"
#include "gate.h"
#include "gate_harness.h"
#include "numerics.h"
#include "refusals.h"
#include "platform/hy4_numeric.h"
#include "support/suite.h"

using namespace hy4;
using namespace hy4::harness;

namespace {

// Runs a case, checks it, and on failure writes the case file the reproducer replays.
::testing::AssertionResult gate_case_passes(const GateCase& c, const std::string& stem) {
  ScopedStream s;
  const Verdict v = check_gate(c, run_gate_eager(c, s));
  if (v.ok()) return ::testing::AssertionSuccess();
  GateCase keep = c;
  keep.origin = stem;
  return ::testing::AssertionFailure() << "seed " << c.seed << " T=" << c.shape.T << " W=" << c.shape.W << ": "
                                       << v.summary() << "\n"
                                       << test::save_case_for_replay(gate_to_file(keep), stem);
}

// The kernel's case splits (kernels/gate.hip, gate_plan.cpp) and where the tests cross
// each, on both sides, at warp 32 and 64 (every test runs as cpu32 and cpu64):
//   vector | tail       W >= 8 with all three row starts 16-byte aligned (offsets 0 / odd,
//                       pads 0 / odd break it) | scalar; W % 8 = 0 | not (a tail after the vectors)
//   block size          clamp(ceil(units / 64) * 64, 64, 256), units = W / 8 (vector) or W:
//                       units 64 | 65, 128 | 129, 192 | 193, 256 | 257 (EveryWidth: W 1..300
//                       scalar; 504..528, 1016..1032, 1528..1544, 2030..2066 vector)
//   rows per block      1 (T < kPairFromRows) | 2 (from it on; odd T leaves the last pass one
//                       row): PairedRowsBothSidesOfTheSplit, T = kPairFromRows - 1 .. + 2
//   row slices          T < kSliceBelowRows: blocks of kSliceThreads (32), ceil(units /
//                       kSliceThreads) slices per row along grid y | T >= it: one block
//                       per row (EveryWidth at T = 3 and T = 16;
//                       SlicedRowsBothSidesOfTheSplit, T = 15 | 16)
//   grid cap            GatePlan::kMaxGrid blocks = 2 x kMaxGrid rows (RowsPastTheGridCap)
//   in place | not;  T = 0 | 1 | several
rc::Gen<GateShape> gen_gate_shape(int64_t max_T) {
  using namespace rc;
  return gen::apply(
      [](int64_t T, int64_t W, std::tuple<int64_t, int64_t, int64_t> pads, std::tuple<int64_t, int64_t, int64_t> offs,
         bool in_place, bool many_specials) {
        GateShape s;
        s.T = T;
        s.W = W;
        std::tie(s.attn_pad, s.gate_pad, s.out_pad) = pads;
        std::tie(s.attn_offset, s.gate_offset, s.out_offset) = offs;
        s.in_place = in_place;
        s.special_rate = many_specials ? 0.5 : 0.05;
        return s;
      },
      gen::inRange<int64_t>(0, max_T + 1),
      gen::weightedOneOf<int64_t>({{3, gen::inRange<int64_t>(1, 70)},
                                   {2, gen::element<int64_t>(2048, 2047, 2049, 2040, 2056, 4104)},
                                   {1, gen::inRange<int64_t>(1, 3000)}}),
      gen::tuple(gen::inRange<int64_t>(0, 17), gen::inRange<int64_t>(0, 17), gen::inRange<int64_t>(0, 17)),
      gen::tuple(gen::inRange<int64_t>(0, 9), gen::inRange<int64_t>(0, 9), gen::inRange<int64_t>(0, 9)),
      gen::arbitrary<bool>(), gen::arbitrary<bool>());
}

}  // namespace

// ---- small exact cases (expected values worked out by hand / in float64) ----------
TEST(GateExact, SpecValuesOfTheGate) {
  HY4_REQUIRE_DEVICE();
  // attn = 2.0 everywhere; gate = -inf, -20, -0, +0, 20, +inf, NaN, 3.
  //   sigmoid(-inf) = 0 -> +0;  sigmoid(-20) = 2.0611536e-9 -> bf16 0x310e -> x2 = 0x318e
  //   sigmoid(+-0) = 0.5 -> 1.0;  sigmoid(20) -> bf16 1.0 -> 2.0;  sigmoid(inf) = 1 -> 2.0
  //   NaN -> canonical NaN;  sigmoid(3) = 0.952574 -> bf16 0x3f74 (0.953125) -> x2 = 0x3ff4
  GateShape shape;
  shape.T = 1;
  shape.W = 8;
  GateCase c = make_gate_case(1, shape);
  const float gates[8] = {-INFINITY, -20.0f, -0.0f, 0.0f, 20.0f, INFINITY, NAN, 3.0f};
  for (int i = 0; i < 8; ++i) {
    c.attn[i] = 0x4000;  // 2.0
    c.gate[i] = bf16_from_f32(gates[i]);
  }
  const uint16_t want[8] = {0x0000, 0x318e, 0x3f80, 0x3f80, 0x4000, 0x4000, 0x7FC0, 0x3ff4};
  ScopedStream s;
  const auto got = run_gate_eager(c, s);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], want[i]) << "gate " << gates[i] << " at i=" << i;
}

TEST(GateExact, InfTimesZeroIsNaNAndNaNNeverBecomesInf) {
  HY4_REQUIRE_DEVICE();
  GateShape shape;
  shape.T = 1;
  shape.W = 4;
  GateCase c = make_gate_case(2, shape);
  c.attn = {0x7F80, 0xFF80, 0x7FC0, 0xFFC1};  // +inf, -inf, NaN, -NaN with payload
  c.gate = {0xFF80, 0x7F80, 0x7F80, 0x3F80};  // -inf, +inf, +inf, 1
  ScopedStream s;
  const auto got = run_gate_eager(c, s);
  EXPECT_EQ(got[0], 0x7FC0);  // inf * sigmoid(-inf) = inf * 0 = NaN
  EXPECT_EQ(got[1], 0xFF80);  // -inf * 1
  EXPECT_EQ(got[2], 0x7FC0);
  EXPECT_EQ(got[3], 0x7FC0);  // any NaN comes out canonical
}

// ---- properties ----------------------------------------------------------------------
TEST(GateProperties, MatchesBitModelAndFloat64) {
  HY4_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("gate == bit model bitwise, within bound of float64", [] {
    const auto shape = *gen_gate_shape(24);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const GateCase c = make_gate_case(seed, shape);
    RC_TAG(c.shape.W % 8 == 0 ? "W%8==0" : "ragged W");
    const auto r = gate_case_passes(c, "gate.MatchesBitModelAndFloat64");
    if (!r) RC_FAIL(r.message());
  }));
}

TEST(GateProperties, ProductionShapeT64W2048) {
  HY4_REQUIRE_DEVICE();
  // HY V4 TP8: 8 heads x v_head_dim 256 = 2048 wide; the decode batch up to 64 rows.
  for (uint64_t seed : test::seed_list()) {
    GateShape shape;
    shape.T = 64;
    shape.W = 2048;
    EXPECT_TRUE(gate_case_passes(make_gate_case(seed, shape), "gate.ProductionShape." + std::to_string(seed)));
  }
}

TEST(GateProperties, EveryWidthFrom1To300AndAroundEveryBlockSplit) {
  HY4_REQUIRE_DEVICE();
  std::vector<int64_t> widths;
  for (int64_t w = 1; w <= 300; ++w) widths.push_back(w);
  for (int64_t lo : {504, 1016, 1528, 2030})
    for (int64_t w = lo; w <= (lo == 2030 ? 2066 : lo + 24); ++w) widths.push_back(w);
  for (int64_t T : {int64_t{3}, GatePlan::kSliceBelowRows})  // sliced rows | a block per row
    for (int64_t w : widths) {
      GateShape shape;
      shape.T = T;
      shape.W = w;
      shape.out_pad = w % 3;
      EXPECT_TRUE(gate_case_passes(make_gate_case(1000 * T + w, shape),
                                   "gate.EveryWidth.T" + std::to_string(T) + "W" + std::to_string(w)));
    }
}

TEST(GateProperties, ZeroRowsLaunchesNothingAndWritesNothing) {
  HY4_REQUIRE_DEVICE();
  GateShape shape;
  shape.T = 0;
  shape.W = 2048;
  EXPECT_TRUE(gate_case_passes(make_gate_case(7, shape), "gate.ZeroRows"));
}

// The grid is capped (GatePlan::kMaxGrid blocks, one row each per pass): rows past the
// cap are reached only through the grid-stride loop.  1-element rows keep it cheap;
// W = 8 and 9 take the vector path with and without a tail past the cap.
TEST(GateProperties, RowsPastTheGridCapAreWritten) {
  HY4_REQUIRE_DEVICE();
  for (int64_t W : {1, 8, 9}) {
    GateShape shape;
    shape.T = 2 * GatePlan::kMaxGrid + 3;  // two rows per block per pass: past the cap from 2 x kMaxGrid
    shape.W = W;
    shape.out_pad = W == 1 ? 1 : 0;
    const GateCase c = make_gate_case(0x9c0 + W, shape);
    EXPECT_TRUE(gate_case_passes(c, "gate.RowsPastTheGridCap.W" + std::to_string(W)));
  }
}

// From GatePlan::kPairFromRows rows a block takes two rows per pass: both sides, odd and
// even T (the last pass of an odd T has one row), vector with and without a tail, scalar.
TEST(GateProperties, PairedRowsBothSidesOfTheSplit) {
  HY4_REQUIRE_DEVICE();
  for (int64_t dT : {-1, 0, 1, 2})
    for (int64_t W : {8, 9, 3}) {
      GateShape shape;
      shape.T = GatePlan::kPairFromRows + dT;
      shape.W = W;
      shape.in_place = dT == 2;
      const GateCase c = make_gate_case(0x9a1 + dT * 16 + W, shape);
      EXPECT_TRUE(gate_case_passes(c, "gate.PairedRows.T" + std::to_string(shape.T) + "W" + std::to_string(W)));
    }
  // The plan's grid itself: a block per row below the split, ceil(T / 2) from it on, capped
  // at kMaxGrid.  The grid-stride loop gives the same bits with a block more or less, so only
  // the plan can tell (a mutant sweep found ceil(T / 2) - 1 unseen).  The plan only checks the
  // views (never dereferenced here): far_address (refusals.h) stands in for the buffers.
  auto plan_of = [](int64_t T) {
    auto at = [](int n) { return static_cast<uint16_t*>(far_address(n)); };
    return GatePlan(dense_gate_args(at(1), at(2), at(3), T, 8));
  };
  const int64_t split = GatePlan::kPairFromRows;
  EXPECT_EQ(plan_of(1).grid_blocks(), 1);
  EXPECT_EQ(plan_of(GatePlan::kSliceBelowRows - 1).grid_blocks(), GatePlan::kSliceBelowRows - 1);
  EXPECT_EQ(plan_of(GatePlan::kSliceBelowRows).grid_blocks(), GatePlan::kSliceBelowRows);
  EXPECT_EQ(plan_of(split - 1).grid_blocks(), split - 1);
  EXPECT_EQ(plan_of(split).grid_blocks(), split / 2);
  EXPECT_EQ(plan_of(split + 1).grid_blocks(), split / 2 + 1);
  EXPECT_EQ(plan_of(2 * GatePlan::kMaxGrid - 1).grid_blocks(), GatePlan::kMaxGrid);
  EXPECT_EQ(plan_of(2 * GatePlan::kMaxGrid + 1).grid_blocks(), GatePlan::kMaxGrid);
}

// Below GatePlan::kSliceBelowRows rows a row is cut into slices of kSliceThreads (32)
// threads (grid y): both sides of the split, at HY V4's width (8 slices), with a tail
// (vector) and on the scalar path (unaligned rows: 65 slices of 2049 elements), one slice
// (W = 8), in place and not, and the plan's choice itself.
TEST(GateProperties, SlicedRowsBothSidesOfTheSplit) {
  HY4_REQUIRE_DEVICE();
  for (int64_t T : {int64_t{1}, GatePlan::kSliceBelowRows - 1, GatePlan::kSliceBelowRows})
    for (int64_t W : {8, 2048, 2049, 2056}) {
      for (int64_t offset : {0, 1})
        for (bool in_place : {false, true}) {  // in place, a slice written twice would be gated twice
          GateShape shape;
          shape.T = T;
          shape.W = W;
          shape.gate_offset = offset;
          shape.in_place = in_place;
          const GateCase c = make_gate_case(0x5c + T * 4096 + W + offset, shape);
          EXPECT_TRUE(gate_case_passes(c, "gate.SlicedRows.T" + std::to_string(T) + "W" + std::to_string(W) + "o" +
                                              std::to_string(offset) + (in_place ? "inplace" : "")));
        }
    }
  // The plan's choice (the views are only validated, never launched).
  // (In the plan's constants, so a retuning - ci/variants.txt - keeps this test meaningful:
  // a 2048-wide row is 256 vectors, one slice per kSliceThreads of them.)
  alignas(16) static uint16_t buf[3][GatePlan::kSliceBelowRows * 2048];
  auto plan_of = [](int64_t T) { return GatePlan(dense_gate_args(buf[0], buf[1], buf[2], T, 2048)); };
  constexpr int64_t kSlices = (2048 / GatePlan::kVector + GatePlan::kSliceThreads - 1) / GatePlan::kSliceThreads;
  EXPECT_EQ(plan_of(1).grid_slices(), kSlices);
  EXPECT_EQ(plan_of(1).block_threads(), GatePlan::kSliceThreads);
  EXPECT_EQ(plan_of(GatePlan::kSliceBelowRows - 1).grid_slices(), kSlices);
  EXPECT_EQ(plan_of(GatePlan::kSliceBelowRows).grid_slices(), 1);
  EXPECT_EQ(plan_of(GatePlan::kSliceBelowRows).block_threads(), 256);
}

TEST(GateProperties, InPlaceEqualsOutOfPlace) {
  HY4_REQUIRE_DEVICE();
  for (uint64_t seed : test::seed_list()) {
    GateShape shape;
    shape.T = 5;
    shape.W = 2048 + static_cast<int64_t>(seed % 9);
    shape.in_place = true;
    EXPECT_TRUE(gate_case_passes(make_gate_case(seed, shape), "gate.InPlace." + std::to_string(seed)));
  }
}

// ---- graph replay ----------------------------------------------------------------------
// Capture once at the largest shape; replay with new data written into the same
// buffers, graph-padded rows holding stale data and NaN, outputs poisoned before each
// replay; each replay == the bit model of what the buffers held, and == an eager launch.
TEST(GateGraph, ReplayWithNewDataEqualsEagerAndBitModel) {
  HY4_REQUIRE_DEVICE();
  // T = 4: gate_decode_kernel; kSliceBelowRows: gate_kernel.
  for (int64_t T : {int64_t{4}, GatePlan::kSliceBelowRows})
  for (bool in_place : {false, true}) {
    ScopedStream s;
    const auto r = gate_graph_scenario(0xca97 + T, T, in_place, 12, s);
    ASSERT_EQ(r.outs.size(), 12u);
    for (std::size_t k = 0; k < r.outs.size(); ++k) {
      const Verdict v = check_gate(r.as_run[k], r.outs[k]);
      EXPECT_TRUE(v.ok()) << "T " << T << ", replay " << k << " (in_place " << in_place << "): " << v.summary() << "\n"
                          << test::save_case_for_replay(gate_to_file(r.as_run[k]), "gate.GraphReplay." + std::to_string(k));
      EXPECT_EQ(run_gate_eager(r.as_run[k], s), r.outs[k]) << "replay " << k << " differs from an eager launch on the same data";
    }
  }
}

// ---- exhaustive: every bf16 gate value ------------------------------------------------
// The gate's input is bf16, so s = bf16(sigmoid_f32(g)) takes at most 65536 values and
// the product is one IEEE rounding: running the kernel itself over all 65536 gate
// patterns, at attn values that include 1.0 (out = s, seen directly), +-0, +-inf, NaN,
// the largest and the smallest subnormal bf16, covers the gate's arithmetic completely.
// Vector path (aligned rows of 65536) and scalar path (attn offset 1), each through both
// kernels (gate_decode_kernel below GatePlan::kSliceBelowRows rows, gate_kernel from
// there), bitwise against the bit model; the attn = 1.0 row also against s computed here
// from hy4_numeric.h.
// Also reports how many gate values a platform expf (the host's libm) would change.
TEST(GateExhaustive, EveryBf16GateValueAtSeveralAttnValues) {
  HY4_REQUIRE_DEVICE();
  const std::vector<uint16_t> attn_values = {0x3f80 /* 1.0 */, 0xbf80 /* -1.0 */, 0x4040 /* 3.0 */, 0x0000,
                                             0x8000,           0x7f80 /* +inf */, 0xff80,           0x7fc0 /* NaN */,
                                             0x7f7f /* max */, 0x0001 /* min subnormal */};
  const int64_t W = 65536;
  static_assert(GatePlan::kSliceBelowRows > 10, "the decode rows below are gate_decode_kernel's");
  for (int64_t attn_offset : {0, 1})  // 0: the 8-wide vector path; 1: misaligned rows, the scalar path
  for (bool decode : {true, false}) {
    GateShape shape;
    shape.T = !decode ? GatePlan::kSliceBelowRows : attn_offset == 0 ? static_cast<int64_t>(attn_values.size()) : 2;
    shape.W = W;
    shape.attn_offset = attn_offset;
    GateCase c = make_gate_case(0xe7a0 + attn_offset, shape);
    for (int64_t t = 0; t < shape.T; ++t)
      for (int64_t i = 0; i < W; ++i) {
        c.attn[attn_offset + t * c.attn_stride() + i] = attn_values[t % attn_values.size()];
        c.gate[t * c.gate_stride() + i] = static_cast<uint16_t>(i);
      }
    const std::string name = "gate.Exhaustive." + std::to_string(attn_offset) + (decode ? ".decode" : "");
    ScopedStream st;
    const std::vector<uint16_t> out = run_gate_eager(c, st);
    const Verdict v = check_gate(c, out);
    EXPECT_TRUE(v.ok()) << "attn offset " << attn_offset << ", T " << shape.T << ": " << v.summary() << "\n"
                        << test::save_case_for_replay(gate_to_file(c), name);
    int64_t wrong_s = 0;
    for (int64_t i = 0; i < W; ++i) {  // row 0 (attn = 1.0): out is s itself
      const uint16_t s_expected = bf16_from_f32(sigmoid_f32(bf16_to_f32(static_cast<uint16_t>(i))));
      const uint16_t got = out[c.shape.out_offset + i];
      const bool both_nan = (s_expected & 0x7fff) > 0x7f80 && (got & 0x7fff) > 0x7f80;
      if (got != s_expected && !both_nan && ++wrong_s <= 5)
        ADD_FAILURE() << "gate 0x" << std::hex << i << ": out 0x" << got << ", s = 0x" << s_expected << std::dec;
    }
    EXPECT_EQ(wrong_s, 0) << "gate values whose 1.0 * s is not s";
  }
  int64_t libm_changes = 0, first = -1;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float g = bf16_to_f32(static_cast<uint16_t>(i));
    if (g != g) continue;
    const uint16_t ours = bf16_from_f32(sigmoid_f32(g));
    const uint16_t libm = bf16_from_f32(1.0f / (1.0f + std::exp(-g)));
    if (ours != libm && ++libm_changes == 1) first = i;
  }
  char first_hex[16] = "";
  if (first >= 0) std::snprintf(first_hex, sizeof first_hex, " (first 0x%04llx)", static_cast<long long>(first));
  std::printf("[hy4] gate exhaustive: a platform expf (host libm) would change s for %lld of the 65536 bf16 gate "
              "values%s\n", static_cast<long long>(libm_changes), first_hex);
  ::testing::Test::RecordProperty("libm_expf_changes", static_cast<int>(libm_changes));
}

// ---- wave32 == wave64 --------------------------------------------------------------------
TEST(GateWarp, Wave32AndWave64GiveTheSameBits) {
  HY4_REQUIRE_DEVICE();
  HY4_REQUIRE_BOTH_WARP_SIZES();
  for (uint64_t seed : test::seed_list())
    EXPECT_TRUE(test::same_bits_at_warp_32_and_64(random_gate_case(seed, 12, 2100), run_gate_eager)) << "seed " << seed;
}

// ---- bad arguments: refused at plan construction, message names the argument -----------
// The classes live in the harness (shared with the conformance run): null pointer,
// negative / oversized / mismatched shape, stride smaller than the row, oversized
// stride, unsupported dtype, misalignment, partial overlap.
TEST(GateArguments, EveryBadArgumentClassIsRefusedWithItsName) {
  HY4_REQUIRE_DEVICE();
  int classes = 0;
  const auto failures = gate_bad_argument_failures(&classes);
  EXPECT_GE(classes, 13);
  for (const auto& f : failures) ADD_FAILURE() << f;
}
