// topk_properties.cpp: the topk op (SPEC section 3) through the suite.
//   exact small cases (ties to the lower id, the bias chooses but never weighs, NaN,
//   the sum floor, padded rows), rapidcheck properties over E in 1..512, k in
//   1..min(E, 32), fp32 / bf16, strides, tie-heavy and one-ulp-apart rows, specials,
//   device row counts; HY V4's shape; graph replay; wave32 == wave64; bad arguments.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>

#include "device_buffer.h"
#include "platform/hy4_numeric.h"
#include "refusals.h"
#include "support/suite.h"
#include "topk.h"
#include "topk_harness.h"

using namespace hy4;
using namespace hy4::harness;

namespace {

::testing::AssertionResult topk_case_passes(const TopkCase& c, const std::string& stem) {
  ScopedStream s;
  const Verdict v = check_topk(c, run_topk_eager(c, s));
  if (v.ok()) return ::testing::AssertionSuccess();
  TopkCase keep = c;
  keep.origin = stem;
  return ::testing::AssertionFailure() << "seed " << c.seed << " T=" << c.shape.T << " E=" << c.shape.E
                                       << " k=" << c.shape.k << (c.shape.bf16 ? " bf16" : " fp32") << ": "
                                       << v.summary() << "\n"
                                       << test::save_case_for_replay(topk_to_file(keep), stem);
}

// The kernel's case splits (kernels/topk.hip, topk_plan.cpp) and where the generator
// and the split tests below cross each one, on both sides, at warp 32 and 64 (every
// test runs in the cpu32 and the cpu64 variant):
//   slots per lane        TopkPlan::slots_per_lane(E, warp): 4 | 8 | 16 split at E = 4 warp | + 1
//                         and 8 warp | + 1 (128 | 129, 256 | 257 at warp 32; 256 | 257 at 64)
//   slots a lane fills    ceil(E / warp): E = 32j and 32j + 1 (warp 32), 64j and 64j + 1 (warp 64)
//   dense rows            warp path, fp32 and E = slots x warp (128, 256 at warp 32; 256 at 64):
//                         one row pointer, no clamp | otherwise (bf16, E = 255, 257, ...)
//   ranks per lane        lane r keeps rank r: k = 1 .. 32 (= warp at 32: k = 31 | 32)
//   rows per block        256 / warp rows (8 or 4): T = 3, 4, 5 | 7, 8, 9, several blocks at T <= 12
//   grid cap              TopkPlan::kMaxGrid blocks: T past kMaxGrid * 8 rows (RowsPastTheGridCap)
//   device row count      none | < 0 | within [0, T] | past T; padded rows get -1 / +0
//   logits dtype          fp32 | bf16;   renormalize  on | off (the sum floor when all underflow)
//   warp-path filter      candidates <= warp (shared list) | > warp (k rounds):
//                         tied rows with warp - 1, warp, warp + 1, 2 warp candidates (FilterList);
//                         tie-heavy generated rows reach the rounds too; a lane whose every slot
//                         wins (its slots run out in the rounds: RoundsWhenALaneRunsOutOfSlots)
//   kernel                warp per row | block per row (TopkArgs::path: the property draws auto /
//                         warp / block; HyV4, EveryK and EverySlotSplit run both pinned paths);
//                         auto picks block per row at T <= kBlockPerRowMaxRows = 256
//                         (AutoSplit: T = 256 | 257)
//   block per row         threads = power of two >= E (64 .. 512): E = 63..65, 127..129, 255..257,
//                         511, 512 (the split list); candidates per warp min(k, warp): k = 31 | 32;
//                         its grid cap kMaxGrid rows (BlockPerRowPastItsGridCap: E = 2, no renormalisation);
//                         candidate batches of 16 x parts full (unclamped) | clamped
//                         (BlockPathCandidateBatchesFullAndClamped: every E and k of both)
// Es and, for the warp path's instance splits m x warp (m = 4, 8, 16; warp: this run's), each
// m x warp + d of `offsets` within kMaxExperts that Es lacks.
std::vector<int> with_instance_splits(std::vector<int> Es, std::initializer_list<int> offsets) {
  const int ws = hy4::rt::warp_size();
  for (int m : {4, 8, 16})
    for (int d : offsets)
      if (m * ws + d <= TopkPlan::kMaxExperts && std::find(Es.begin(), Es.end(), m * ws + d) == Es.end())
        Es.push_back(m * ws + d);
  return Es;
}

std::vector<int> topk_split_experts() {
  std::vector<int> e = {1, 2, 3};
  for (int j = 1; j <= 16; ++j)
    for (int d : {-1, 0, 1})
      if (32 * j + d <= 512) e.push_back(32 * j + d);
  return e;
}

rc::Gen<TopkShape> gen_topk_shape(int64_t max_T) {
  using namespace rc;
  return gen::mapcat(gen::weightedOneOf<int>({{3, gen::just(256)}, {2, gen::inRange(1, 513)}, {2, gen::elementOf(topk_split_experts())}}),
                     [max_T](int E) {
                       return gen::apply(
                           [E](int64_t T, int k, bool bf16, std::tuple<int64_t, int64_t, int64_t, int64_t> pads,
                               bool renorm, bool has_count, int64_t count, int values) {
                             TopkShape s;
                             s.T = T;
                             s.E = E;
                             s.k = std::min(k, E);
                             s.bf16 = bf16;
                             std::tie(s.logits_pad, s.weights_pad, s.ids_pad, s.logits_offset) = pads;
                             s.renormalize = renorm;
                             s.has_num_rows = has_count;
                             s.num_rows = count;
                             s.values = static_cast<TopkValues>(values);
                             return s;
                           },
                           gen::inRange<int64_t>(0, max_T + 1),
                           gen::weightedOneOf<int>({{3, gen::just(8)}, {2, gen::inRange(1, 33)}, {1, gen::element(1, 32)}}),
                           gen::arbitrary<bool>(),
                           gen::tuple(gen::inRange<int64_t>(0, 9), gen::inRange<int64_t>(0, 4), gen::inRange<int64_t>(0, 4),
                                      gen::inRange<int64_t>(0, 5)),
                           gen::weightedOneOf<bool>({{3, gen::just(true)}, {1, gen::just(false)}}), gen::arbitrary<bool>(),
                           gen::inRange<int64_t>(-1, max_T + 2), gen::inRange(0, 6));
                     });
}

// A one-row case with explicit logits and bias (fp32), k, renorm.
TopkCase explicit_case(const std::vector<float>& logits, const std::vector<float>& bias, int k, bool renorm,
                       float rsf) {
  TopkShape s;
  s.T = 1;
  s.E = static_cast<int>(logits.size());
  s.k = k;
  s.renormalize = renorm;
  s.rsf = rsf;
  TopkCase c = make_topk_case(1, s);
  for (int e = 0; e < s.E; ++e) {
    c.logits[e] = f32_bits(logits[e]);
    c.bias[e] = f32_bits(bias[e]);
  }
  return c;
}

int32_t id_at(const TopkOutput& o, const TopkCase& c, int64_t t, int r) {
  return static_cast<int32_t>(o.ids[t * c.ids_stride() + r]);
}
float w_at(const TopkOutput& o, const TopkCase& c, int64_t t, int r) {
  return f32_from_bits(o.weights[t * c.weights_stride() + r]);
}

}  // namespace

// ---- small exact cases ------------------------------------------------------------------
TEST(TopkExact, TiesGoToTheLowerExpertId) {
  HY4_REQUIRE_DEVICE();
  // 70 experts, all equal: the top 5 must be ids 0..4 in order, whatever the lanes.
  const TopkCase c = explicit_case(std::vector<float>(70, 0.5f), std::vector<float>(70, 0.0f), 5, false, 1.0f);
  ScopedStream s;
  const auto o = run_topk_eager(c, s);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(id_at(o, c, 0, r), r);
  // expert 69 strictly best, then a tie among 3, 40, 66 (bias equal): 69, 3, 40, 66
  std::vector<float> b(70, -1.0f);
  b[69] = 0.5f;
  b[3] = b[40] = b[66] = 0.25f;
  const TopkCase c2 = explicit_case(std::vector<float>(70, 0.0f), b, 4, false, 1.0f);
  const auto o2 = run_topk_eager(c2, s);
  EXPECT_EQ(id_at(o2, c2, 0, 0), 69);
  EXPECT_EQ(id_at(o2, c2, 0, 1), 3);
  EXPECT_EQ(id_at(o2, c2, 0, 2), 40);
  EXPECT_EQ(id_at(o2, c2, 0, 3), 66);
}

TEST(TopkExact, BiasChoosesButNeverWeighs) {
  HY4_REQUIRE_DEVICE();
  // logits 0 -> s = 0.5 exactly for both chosen; bias makes expert 2 and 0 win.
  // Not renormalised, rsf 2: weights are 0.5 * 2 = 1.0 exactly, bias or not.
  const TopkCase c = explicit_case({0.0f, -3.0f, 0.0f, -3.0f}, {0.5f, 0.0f, 1.0f, 0.0f}, 2, false, 2.0f);
  ScopedStream s;
  const auto o = run_topk_eager(c, s);
  EXPECT_EQ(id_at(o, c, 0, 0), 2);
  EXPECT_EQ(id_at(o, c, 0, 1), 0);
  EXPECT_EQ(w_at(o, c, 0, 0), 1.0f);
  EXPECT_EQ(w_at(o, c, 0, 1), 1.0f);
  // renormalised: 0.5 / (0.5 + 0.5) * 2 = 1.0 each as well
  const TopkCase c2 = explicit_case({0.0f, -3.0f, 0.0f, -3.0f}, {0.5f, 0.0f, 1.0f, 0.0f}, 2, true, 2.0f);
  const auto o2 = run_topk_eager(c2, s);
  EXPECT_EQ(w_at(o2, c2, 0, 0), 1.0f);
  EXPECT_EQ(w_at(o2, c2, 0, 1), 1.0f);
}

TEST(TopkExact, NaNChoosesLikeMinusInfAndAllUnderflowHitsTheSumFloor) {
  HY4_REQUIRE_DEVICE();
  ScopedStream s;
  // NaN logit at 0 and NaN bias at 1: both rank below every finite score.
  const TopkCase c = explicit_case({NAN, 0.0f, -1.0f, -2.0f}, {0.0f, NAN, 0.0f, 0.0f}, 2, true, 1.0f);
  const auto o = run_topk_eager(c, s);
  EXPECT_EQ(id_at(o, c, 0, 0), 2);
  EXPECT_EQ(id_at(o, c, 0, 1), 3);
  // k = 4: the NaN-logit expert is chosen last-but-tied with expert 1 (both -inf): 0 before 1;
  // its weight is NaN and, renormalised, the NaN sum makes every weight NaN (canonical).
  const TopkCase c4 = explicit_case({NAN, 0.0f, -1.0f, -2.0f}, {0.0f, NAN, 0.0f, 0.0f}, 4, true, 1.0f);
  const auto o4 = run_topk_eager(c4, s);
  EXPECT_EQ(id_at(o4, c4, 0, 2), 0);
  EXPECT_EQ(id_at(o4, c4, 0, 3), 1);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(o4.weights[r], 0x7fc00000u) << "rank " << r;
  // every selected sigmoid underflows to 0: sum 0 -> floor 1e-20 -> weights exactly +0
  const TopkCase cu = explicit_case({-100.0f, -110.0f, -120.0f}, {0.0f, 0.0f, 0.0f}, 2, true, 2.827f);
  const auto ou = run_topk_eager(cu, s);
  EXPECT_EQ(id_at(ou, cu, 0, 0), 0);
  EXPECT_EQ(ou.weights[0], 0u);
  EXPECT_EQ(ou.weights[1], 0u);
}

TEST(TopkExact, RowsPastTheDeviceCountGetMinusOneAndZero) {
  HY4_REQUIRE_DEVICE();
  TopkShape sh;
  sh.T = 6;
  sh.has_num_rows = true;
  sh.num_rows = 2;
  const TopkCase c = make_topk_case(3, sh);
  ScopedStream s;
  const auto o = run_topk_eager(c, s);
  for (int64_t t = 2; t < 6; ++t)
    for (int r = 0; r < sh.k; ++r) {
      EXPECT_EQ(id_at(o, c, t, r), -1);
      EXPECT_EQ(o.weights[t * c.weights_stride() + r], 0u);  // +0, bitwise
    }
  EXPECT_NE(id_at(o, c, 1, 0), -1);
}

// ---- properties ----------------------------------------------------------------------------
TEST(TopkProperties, MatchesBitModelAndFloat64) {
  HY4_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("topk == bit model bitwise; float64 choice and weights within bounds", [] {
    auto shape = *gen_topk_shape(12);
    shape.path = *rc::gen::inRange(0, 3);  // auto | warp per row | block per row
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const TopkCase c = make_topk_case(seed, shape);
    RC_TAG(shape.path == 1 ? "warp per row" : shape.path == 2 ? "block per row" : "auto");
    RC_CLASSIFY(shape.values == TopkValues::Ties || shape.values == TopkValues::UlpApart, "tie-heavy");
    RC_CLASSIFY(shape.bf16, "bf16");
    const auto r = topk_case_passes(c, "topk.MatchesBitModelAndFloat64");
    if (!r) RC_FAIL(r.message());
  }));
}

TEST(TopkProperties, HyV4ShapeE256K8) {
  HY4_REQUIRE_DEVICE();
  // E = 256, k = 8, fp32, rsf 2.827, renormalised, outputs [:, :8] of [T, 9] and [T, 10].
  for (uint64_t seed : test::seed_list())
    for (TopkValues v : {TopkValues::Normal, TopkValues::Ties, TopkValues::UlpApart, TopkValues::Specials}) {
      TopkShape sh;
      sh.T = 64;
      sh.values = v;
      sh.weights_pad = 1;
      sh.ids_pad = 2;
      for (int path : {1, 2}) {
        sh.path = path;
        EXPECT_TRUE(topk_case_passes(make_topk_case(seed, sh), "topk.HyV4." + std::to_string(seed) + ".path" + std::to_string(path)));
      }
    }
}

TEST(TopkProperties, EveryKForEveryEdgeE) {
  HY4_REQUIRE_DEVICE();
  for (int E : {1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 257, 511, 512})
    for (int k = 1; k <= std::min(E, 32); k += (k < 4 ? 1 : 7)) {
      TopkShape sh;
      sh.T = 3;
      sh.E = E;
      sh.k = k;
      sh.bf16 = (E + k) % 2 == 0;
      sh.values = TopkValues::Mixed;
      for (int path : {1, 2}) {
        sh.path = path;
        EXPECT_TRUE(topk_case_passes(make_topk_case(E * 100 + k, sh), "topk.EveryK.E" + std::to_string(E) + "k" +
                                                                          std::to_string(k) + ".path" + std::to_string(path)));
      }
    }
}

// The block path's candidate rank reads its keys in batches of 16 x parts: unclamped where
// that divides the candidate count nc = warps x min(k, warp), clamped elsewhere (HY V4:
// full batches at warp 32, clamped at wave64; k = 16 at wave64: full).  Every E of the
// block path's thread counts with every k, block path pinned; both sides must be seen at
// this warp size (the counts are the kernel's own formulas, written out again here).
TEST(TopkProperties, BlockPathCandidateBatchesFullAndClamped) {
  HY4_REQUIRE_DEVICE();
  const int ws = hy4::rt::warp_size();
  int full = 0, clamped = 0;
  for (int E : {33, 64, 65, 128, 129, 256, 257, 512})
    for (int k : {1, 2, 4, 8, 9, 16, 31, 32}) {
      if (k > E) continue;
      const int nt = TopkPlan::row_block_threads(E), warps = nt / ws, nc = warps * std::min(k, ws);
      int parts = 1;
      while (2 * parts * nc <= nt && 2 * parts <= ws) parts *= 2;
      const bool is_full = nc % (16 * parts) == 0;
      (is_full ? full : clamped)++;
      TopkShape sh;
      sh.T = 3;
      sh.E = E;
      sh.k = k;
      sh.bf16 = k % 2 == 1;
      sh.values = TopkValues::Mixed;
      sh.path = 2;
      EXPECT_TRUE(topk_case_passes(make_topk_case(static_cast<uint64_t>(E) * 64 + static_cast<uint64_t>(k) + 0xb47c, sh),
                                   "topk.BlockBatches.E" + std::to_string(E) + "k" + std::to_string(k) +
                                       (is_full ? ".full" : ".clamped")));
    }
  EXPECT_GT(full, 0) << "no shape took the full-batch side at warp " << ws;
  EXPECT_GT(clamped, 0) << "no shape took the clamped side at warp " << ws;
}

// Both sides of every E split at this warp size (see the list above gen_topk_shape).
TEST(TopkProperties, EverySlotSplitBothSides) {
  HY4_REQUIRE_DEVICE();
  for (int E : topk_split_experts())
    for (int k : {1, 8, 31, 32}) {
      if (k > E) continue;
      TopkShape sh;
      sh.T = 5;
      sh.E = E;
      sh.k = k;
      sh.bf16 = (E / 32) % 2 == 1;
      sh.has_num_rows = true;
      sh.num_rows = 4;
      sh.values = TopkValues::Mixed;
      for (int path : {1, 2}) {
        sh.path = path;
        EXPECT_TRUE(topk_case_passes(make_topk_case(E * 131 + k, sh), "topk.EverySlotSplit.E" + std::to_string(E) + "k" +
                                                                          std::to_string(k) + ".path" + std::to_string(path)));
      }
    }
}

// The warp path's filter (kernels/topk.hip): the candidates (estimate >= the threshold
// below the k-th largest lane maximum; with exact keys, order word >= that maximum) go
// through a one-slot-per-lane list when there are at most warp
// of them, through k rounds of warp maxima when there are more.  n experts tied at the
// row's best score (the rest strictly below) make exactly n candidates once they sit in
// k lanes or more: n = warp - 1, warp, warp + 1 and 2 x warp, in every instance with its
// every slot real: E = 4, 8, 16 x warp (4 | 8 | 16 slots per lane; 16 x 64 is past E's limit).
TEST(TopkProperties, FilterListBothSidesOfOneSlotPerLane) {
  HY4_REQUIRE_DEVICE();
  const int ws = hy4::rt::warp_size();
  for (int E : {4 * ws, 8 * ws, 16 * ws})
    for (int k : {1, 8, 32})
      for (int n : {ws - 1, ws, ws + 1, 2 * ws})
        for (bool distinct_s : {false, true}) {
          std::mt19937_64 rng(static_cast<uint64_t>(E * 1000 + k * 100 + n));
          if (n < k || E > TopkPlan::kMaxExperts) continue;
          std::vector<float> x(E), b(E, 0.0f);
          for (int e = 0; e < E; ++e) x[e] = -1.0f - static_cast<float>(rng() % 1000) / 256.0f;
          // tied expert i in lane i % ws (min(n, ws) >= k lanes), slot (i / ws + lane) % slots.
          // distinct_s: the tie is in c only - s differs per expert and bias = 1 - s makes
          // c = 1 exactly (1 - s is exact for s in [0.5, 1], and so is s + (1 - s)) - so the
          // weights' sum in rank order is seen (equal s would sum alike in any order).
          const int slots = E / ws;
          for (int i = 0; i < n; ++i) {
            const int e = (i % ws) + ws * ((i / ws + i % ws) % slots);
            x[e] = distinct_s ? 0.25f + 0.1f * static_cast<float>(i % 37) : 1.5f;
            if (distinct_s) b[e] = 1.0f - sigmoid_f32(x[e]);
          }
          TopkCase c = explicit_case(x, b, k, true, 2.5f);
          c.shape.path = 1;
          EXPECT_TRUE(topk_case_passes(c, "topk.FilterList.E" + std::to_string(E) + "k" + std::to_string(k) + "n" +
                                              std::to_string(n) + (distinct_s ? "distinct" : "")));
        }
}

// Every expert is read: row t of E rows has expert t as its unique best (the rest random
// below), so an expert that no lane's slot or no block thread holds is missing from rank 0
// of its own row - whatever the values.  E on both sides of each instance split of the warp
// path (4 | 8 | 16 slots: 4 w | 4 w + 1, 8 w | 8 w + 1, w = warp) and of the block path's
// thread counts, both pinned paths, fp32 and bf16 logits.  (A random row shows a missing
// expert only when it would have been chosen: the plant "four slots one expert too far"
// passed every property and regression test and was caught only by the 30 s fuzz run.)
TEST(TopkProperties, EveryExpertWinsItsOwnRow) {
  HY4_REQUIRE_DEVICE();
  for (int E : with_instance_splits({63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512}, {0, 1}))
    for (int path : {1, 2})
      for (bool bf16 : {false, true}) {
        TopkShape sh;
        sh.T = E;
        sh.E = E;
        sh.k = 2;
        sh.bf16 = bf16;
        sh.path = path;
        TopkCase c = make_topk_case(static_cast<uint64_t>(E * 4 + path * 2 + bf16), sh);
        std::mt19937_64 rng(static_cast<uint64_t>(E));
        for (int64_t t = 0; t < E; ++t)
          for (int e = 0; e < E; ++e) {
            const float x = e == t ? 2.0f : -4.0f + static_cast<float>(rng() % 1024) / 256.0f;  // others < 0
            c.logits[t * c.logits_stride() + e] = bf16 ? bf16_from_f32(x) : f32_bits(x);
          }
        for (int e = 0; e < E; ++e) c.bias[e] = f32_bits(0.0f);
        ScopedStream s;
        const auto o = run_topk_eager(c, s);
        int wrong = 0;
        for (int64_t t = 0; t < E; ++t)
          if (id_at(o, c, t, 0) != t && ++wrong <= 3)
            ADD_FAILURE() << "E " << E << " path " << path << (bf16 ? " bf16" : " fp32") << ": row " << t << " chose "
                          << id_at(o, c, t, 0) << " first, not its best expert " << t;
        EXPECT_TRUE(topk_case_passes(c, "topk.EveryExpertWins.E" + std::to_string(E) + ".path" + std::to_string(path) +
                                            (bf16 ? ".bf16" : "")));
      }
}

// Nothing past expert E - 1 is read: every logit gap of a row (columns E .. stride - 1, and a
// whole row past the last one) holds a logit of 100 and the bias buffer goes on past E with
// 1e30, so an expert E that a kernel reads wins its row (and its id E is out of range).  E
// at and around each split of the warp path's instances (4 w - 1 | 4 w | 4 w + 1, the same
// at 8 w and 16 w, w = warp: at 4 w - 1 a lane's last slot is past E and the dense-row read
// must not be taken) and of the block path's thread counts, both pinned paths, fp32 and
// bf16.  (The plant "dense rows one
// expert short", reading expert 255 at E = 255, passed every other test.)
TEST(TopkProperties, NothingPastTheLastExpertIsRead) {
  HY4_REQUIRE_DEVICE();
  for (int E : with_instance_splits({1, 31, 33, 63, 65, 127, 129, 255, 257, 511}, {-1, 0, 1}))
    for (int path : {1, 2})
      for (bool bf16 : {false, true}) {
        TopkShape sh;
        sh.T = 6;
        sh.E = E;
        sh.k = std::min(E, 8);
        sh.bf16 = bf16;
        sh.path = path;
        sh.logits_pad = 1 + E % 3;
        TopkCase c = make_topk_case(static_cast<uint64_t>(E * 8 + path * 2 + bf16) ^ 0x9a5e, sh);
        const uint32_t big = bf16 ? bf16_from_f32(100.0f) : f32_bits(100.0f);
        c.logits.resize(c.logits.size() + static_cast<size_t>(c.logits_stride()), big);  // a row past the last
        for (int64_t t = 0; t < sh.T; ++t)
          for (int64_t e = E; e < c.logits_stride(); ++e) c.logits[t * c.logits_stride() + e] = big;
        c.bias.resize(static_cast<size_t>(E) + 64, f32_bits(1e30f));
        EXPECT_TRUE(topk_case_passes(c, "topk.NothingPastE.E" + std::to_string(E) + ".path" + std::to_string(path) +
                                            (bf16 ? ".bf16" : "")));
      }
}

// The warp path's k rounds (more than warp candidates): a lane pops its head each time it
// wins, so a lane can run out of slots.  Lane 0's experts (ids 0, ws, 2 ws, ...) are the
// row's strictly best, every other expert ties below them (so the candidates overflow the
// list): the first `slots` ranks empty lane 0, rank slots + 1 on must come from the tie
// (lowest id first), never from lane 0 again.  slots = E / warp = 4 | 8 | 16, each kernel
// instance with every slot real (a popped lane must refill with an empty key).
TEST(TopkProperties, RoundsWhenALaneRunsOutOfSlots) {
  HY4_REQUIRE_DEVICE();
  const int ws = hy4::rt::warp_size();
  for (int E : {4 * ws, 8 * ws, 16 * ws}) {
    if (E > TopkPlan::kMaxExperts) continue;
    const int slots = E / ws;
    ASSERT_EQ(TopkPlan::slots_per_lane(E, ws), slots);
    for (int k : {slots, slots + 1, 32}) {  // slots <= 16
      std::vector<float> x(E, 0.0f), b(E, 0.0f);
      for (int j = 0; j < slots; ++j) x[j * ws] = 3.0f + 0.125f * static_cast<float>(slots - j);
      TopkCase c = explicit_case(x, b, k, true, 2.5f);
      for (int path : {1, 2}) {
        c.shape.path = path;
        EXPECT_TRUE(topk_case_passes(c, "topk.LaneOutOfSlots.E" + std::to_string(E) + "k" + std::to_string(k) + ".path" +
                                            std::to_string(path)));
      }
    }
  }
}

// The warp path's estimate filter with a large bias: c = s + b is rounded to the ulp of b,
// and an estimate of s within the fast_sigmoid promise can land c a whole ulp lower when s
// sits just above a rounding midpoint.  The bounds' margin must grow with |c| (its 2^-20 |c|
// part).  Built so that an absolute margin alone fails: bias B (2^12, 2^14, 2^16) on every
// expert; experts 0..7 (lanes 0..7) get logits whose exact c rounds to V = B + 0.75 by
// less than 2^-17 above the midpoint below it (so a low estimate gives V - ulp); nine
// experts in lanes 8..16 sit at s = 0.75 (c = V, far from any midpoint); the rest far
// below.  The top 8 are experts 0..7 (ties in c go to the lower id); a floor from the nine
// lanes at V must not drop them.  Each row takes the next 8 such logits.
TEST(TopkProperties, LargeBiasRoundsEstimatesAcrossAnUlpOfC) {
  HY4_REQUIRE_DEVICE();
  const int E = 256, k = 8, T = 8;
  for (int lg : {12, 14, 16}) {
    const float B = std::ldexp(1.0f, lg), ulp = std::ldexp(1.0f, lg - 23);
    const float V = B + 0.75f, mid = 0.75f - ulp / 2;
    // logits x with sigmoid_f32(x) + B == V and sigmoid_f32(x) - mid in (0, 2^-17]
    std::vector<float> near;
    for (float x = std::log(mid / (1.0f - mid)) - 1e-4f; near.size() < static_cast<std::size_t>(k * T) && x < 1.2f;
         x = std::nextafter(x, 2.0f)) {
      const float sx = sigmoid_f32(x);
      if (sx > mid && sx - mid <= 0x1p-17f && sx + B == V) near.push_back(x);
    }
    ASSERT_EQ(near.size(), static_cast<std::size_t>(k * T)) << "B = 2^" << lg;
    TopkShape sh;
    sh.T = T;
    sh.E = E;
    sh.k = k;
    TopkCase c = make_topk_case(0x1b1a5u + static_cast<uint64_t>(lg), sh);
    const float tied = std::log(3.0f);  // s = 0.75 (to within an ulp of s)
    for (int t = 0; t < T; ++t)
      for (int e = 0; e < E; ++e) {
        const float x = e < k ? near[t * k + e] : (e <= 16 ? tied : -4.0f);
        c.logits[t * c.logits_stride() + e] = f32_bits(x);
      }
    for (int e = 0; e < E; ++e) c.bias[e] = f32_bits(B);
    for (int path : {1, 2}) {
      c.shape.path = path;
      EXPECT_TRUE(topk_case_passes(c, "topk.LargeBias.2e" + std::to_string(lg) + ".path" + std::to_string(path)));
    }
  }
}

// Rows past the grid cap (kMaxGrid blocks x 8 rows at warp 32, x 4 at warp 64) are
// reached only through the grid-stride loop: E = 1, k = 1 keeps it cheap.  A device row
// count inside the last pass checks the padded-row path there too.
TEST(TopkProperties, RowsPastTheGridCapAreWritten) {
  HY4_REQUIRE_DEVICE();
  for (bool count : {false, true}) {
    TopkShape sh;
    sh.T = TopkPlan::kMaxGrid * (TopkPlan::kBlockThreads / 32) + 3;
    sh.E = 1;
    sh.k = 1;
    sh.weights_pad = 0;
    sh.ids_pad = 1;
    sh.has_num_rows = count;
    sh.num_rows = sh.T - 2;
    EXPECT_TRUE(topk_case_passes(make_topk_case(0x9c1 + count, sh), "topk.RowsPastTheGridCap"));
  }
  // The warp path's grid itself: ceil(rows / rows per block), capped.  The grid-stride loop
  // gives the same bits with a block more or less, so only the plan can tell (a mutant
  // sweep found an extra, empty block unseen).
  const int64_t per32 = TopkPlan::kBlockThreads / 32, per64 = TopkPlan::kBlockThreads / 64;
  EXPECT_EQ(TopkPlan::warp_path_grid(1, 32), 1);
  EXPECT_EQ(TopkPlan::warp_path_grid(per32, 32), 1);
  EXPECT_EQ(TopkPlan::warp_path_grid(per32 + 1, 32), 2);
  EXPECT_EQ(TopkPlan::warp_path_grid(per64, 64), 1);
  EXPECT_EQ(TopkPlan::warp_path_grid(per64 + 1, 64), 2);
  EXPECT_EQ(TopkPlan::warp_path_grid(TopkPlan::kMaxGrid * per32, 32), TopkPlan::kMaxGrid);
  EXPECT_EQ(TopkPlan::warp_path_grid(TopkPlan::kMaxGrid * per32 + 1, 32), TopkPlan::kMaxGrid);
  EXPECT_EQ(TopkPlan::warp_path_grid(TopkPlan::kMaxGrid * per64 - 1, 64), TopkPlan::kMaxGrid);
}

// Block per row: rows past its grid cap (kMaxGrid blocks, a row each) come from the
// grid-stride loop; and the plan's choice on both sides of kBlockPerRowMaxRows.  Two
// experts and no renormalisation, so that every row's id and weight depend on that row's
// own logits (a block that kept its first row's would fail).
TEST(TopkProperties, BlockPerRowPastItsGridCapAndTheAutoSplit) {
  HY4_REQUIRE_DEVICE();
  TopkShape sh;
  sh.T = TopkPlan::kMaxGrid + 3;
  sh.E = 2;
  sh.k = 1;
  sh.renormalize = false;
  sh.path = 2;
  sh.has_num_rows = true;
  sh.num_rows = sh.T - 1;
  EXPECT_TRUE(topk_case_passes(make_topk_case(0x9c7, sh), "topk.BlockPerRowPastTheGridCap"));
  for (int64_t T : {TopkPlan::kBlockPerRowMaxRows, TopkPlan::kBlockPerRowMaxRows + 1}) {
    TopkShape a;
    a.T = T;
    a.E = 33;
    a.k = 5;
    a.values = TopkValues::Mixed;
    EXPECT_TRUE(topk_case_passes(make_topk_case(0x5a + T, a), "topk.AutoSplit.T" + std::to_string(T)));
  }
  // The choice itself (both paths give the same bits, so only this pins the split): HY V4's
  // shape, a plan only (views at far fake addresses, nothing launched).
  auto auto_plan = [](int64_t T, TopkPath path = TopkPath::Auto) {
    using hy4::harness::far_address;
    TopkArgs x;
    x.logits = MatrixView{far_address(1), DType::F32, T, 256, 256};
    x.bias = static_cast<const float*>(far_address(4));
    x.k = 8;
    x.weights = MatrixView{far_address(2), DType::F32, T, 8, 8};
    x.ids = MatrixView{far_address(3), DType::I32, T, 8, 8};
    x.path = path;
    return TopkPlan(x);
  };
  EXPECT_TRUE(auto_plan(TopkPlan::kBlockPerRowMaxRows).block_per_row());
  EXPECT_FALSE(auto_plan(TopkPlan::kBlockPerRowMaxRows + 1).block_per_row());
  // A pinned path is taken on either side of the split.
  for (int64_t T : {int64_t{1}, TopkPlan::kBlockPerRowMaxRows + 1}) {
    EXPECT_FALSE(auto_plan(T, TopkPath::WarpPerRow).block_per_row()) << "T = " << T;
    EXPECT_TRUE(auto_plan(T, TopkPath::BlockPerRow).block_per_row()) << "T = " << T;
  }
}

// ---- graph replay ----------------------------------------------------------------------------
TEST(TopkGraph, ReplayWithNewDataAndCountsEqualsEagerAndBitModel) {
  HY4_REQUIRE_DEVICE();
  for (bool bf16 : {false, true}) {
    ScopedStream s;
    const auto r = topk_graph_scenario(0xca97, 40, bf16, 10, s);
    for (std::size_t k = 0; k < r.outs.size(); ++k) {
      const Verdict v = check_topk(r.as_run[k], r.outs[k]);
      EXPECT_TRUE(v.ok()) << "replay " << k << ": " << v.summary() << "\n"
                          << test::save_case_for_replay(topk_to_file(r.as_run[k]), "topk.GraphReplay." + std::to_string(k));
      EXPECT_TRUE(run_topk_eager(r.as_run[k], s) == r.outs[k]) << "replay " << k << " differs from an eager launch";
    }
  }
}

// ---- wave32 == wave64 ------------------------------------------------------------------------
TEST(TopkWarp, Wave32AndWave64GiveTheSameBits) {
  HY4_REQUIRE_DEVICE();
  HY4_REQUIRE_BOTH_WARP_SIZES();
  for (uint64_t seed : test::seed_list())
    EXPECT_TRUE(test::same_bits_at_warp_32_and_64(random_topk_case(seed, 16), run_topk_eager)) << "seed " << seed;
}

// ---- bad arguments -----------------------------------------------------------------------------
TEST(TopkArguments, EveryBadArgumentClassIsRefusedWithItsName) {
  HY4_REQUIRE_DEVICE();
  int classes = 0;
  const auto failures = topk_bad_argument_failures(&classes);
  EXPECT_GE(classes, 23);
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// ---- hostile case files -----------------------------------------------------------------------
// Found by a user: `int logits_offset 9223372036854775807` overflowed the span computed from the
// file and the case ran.  Every size read from a file is range-checked now (CaseFile::get_in).
TEST(TopkCaseFiles, AnOverflowingOffsetIsRefusedNamingIt) {
  TopkShape sh;
  sh.T = 2;
  sh.E = 4;
  sh.k = 2;
  CaseFile f = topk_to_file(make_topk_case(1, sh));
  f.ints["logits_offset"] = INT64_MAX;
  try {
    (void)topk_from_file(CaseFile::parse(f.serialize(), "hostile.case"));
    ADD_FAILURE() << "a case with logits_offset = INT64_MAX was accepted";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("logits_offset"), std::string::npos) << e.what();
  }
  for (const char* name : {"T", "E", "k", "logits_pad", "ids_pad", "weights_pad"}) {
    CaseFile g = topk_to_file(make_topk_case(1, sh));
    g.ints[name] = INT64_MIN;
    EXPECT_THROW((void)topk_from_file(g), CaseFileError) << name;
    g.ints[name] = INT64_MAX;
    EXPECT_THROW((void)topk_from_file(g), CaseFileError) << name;
  }
}
