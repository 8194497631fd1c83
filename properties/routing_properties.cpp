// routing_properties.cpp: the routing op (SPEC section 4) through the suite.
//   exact small layouts worked out by hand, rapidcheck properties (bitwise vs the bit
//   model with guards past every output, the sort reference, the layout invariants),
//   strided == contiguous (the upstream stride bug), every case split, the chunk cap,
//   graph replay with new ids / mask / row counts, wave32 == wave64, bad arguments.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "numerics.h"
#include "platform/hy4_numeric.h"
#include "routing.h"
#include "chain_harness.h"
#include "routing_harness.h"
#include "support/suite.h"

using namespace hy4;
using namespace hy4::harness;

namespace {

::testing::AssertionResult routing_case_passes(const RoutingCase& c, const std::string& stem) {
  ScopedStream s;
  const Verdict v = check_routing(c, run_routing_eager(c, s));
  if (v.ok()) return ::testing::AssertionSuccess();
  RoutingCase keep = c;
  keep.origin = stem;
  return ::testing::AssertionFailure() << "seed " << c.seed << " T=" << c.shape.T << " E=" << c.shape.E
                                       << " k=" << c.shape.k << " block=" << c.shape.block_size << ": " << v.summary()
                                       << "\n"
                                       << test::save_case_for_replay(routing_to_file(keep), stem);
}

// Crosses the splits listed above random_routing_case (harness/routing_harness.cpp).
rc::Gen<RoutingShape> gen_routing_shape(int64_t max_T) {
  using namespace rc;
  return gen::mapcat(gen::weightedOneOf<int>({{3, gen::just(256)}, {2, gen::element(1, 2, 7, 31, 32, 33, 63, 64, 65, 257, 512)}, {1, gen::inRange(1, 513)}}),
                     [max_T](int E) {
                       return gen::apply(
                           [E](int64_t T, int k, int bs, std::tuple<int64_t, int64_t, bool, bool, int64_t> misc,
                               int64_t hidden, int values) {
                             RoutingShape s;
                             s.T = T;
                             s.E = E;
                             s.k = std::min(k, E);
                             s.block_size = bs;
                             std::tie(s.ids_pad, s.weights_pad, s.has_mask, s.has_num_rows, s.num_rows) = misc;
                             s.hidden = hidden;
                             s.values = static_cast<RoutingValues>(values);
                             return s;
                           },
                           gen::weightedOneOf<int64_t>({{3, gen::inRange<int64_t>(0, 20)}, {1, gen::inRange<int64_t>(0, max_T + 1)}}),
                           gen::weightedOneOf<int>({{3, gen::just(8)}, {1, gen::inRange(1, 33)}}),
                           gen::element(1, 2, 16, 32, 64, 128, 256, 1024),
                           gen::tuple(gen::inRange<int64_t>(0, 3), gen::inRange<int64_t>(0, 3), gen::arbitrary<bool>(),
                                      gen::arbitrary<bool>(), gen::inRange<int64_t>(-2, max_T + 3)),
                           gen::element<int64_t>(0, 0, 1, 7, 64), gen::inRange(0, 5));
                     });
}

// Two tokens, k = 2, E = 4, block 4, hand-worked: ids [[2, 0], [0, 3]] ->
// expert 0: (t0 s1), (t1 s0), pad, pad | expert 2: (t0 s0), pad x3 | expert 3: (t1 s1), pad x3
RoutingCase hand_case() {
  RoutingShape sh;
  sh.T = 2;
  sh.E = 4;
  sh.k = 2;
  sh.block_size = 4;
  sh.ids_pad = 1;
  sh.weights_pad = 0;
  RoutingCase c = make_routing_case(1, sh);
  const int32_t ids[2][2] = {{2, 0}, {0, 3}};
  const float w[2][2] = {{0.25f, 0.5f}, {0.125f, 2.0f}};
  for (int t = 0; t < 2; ++t)
    for (int s = 0; s < 2; ++s) {
      c.ids[t * c.ids_stride() + s] = static_cast<uint32_t>(ids[t][s]);
      c.weights[t * c.weights_stride() + s] = f32_bits(w[t][s]);
    }
  return c;
}

}  // namespace

TEST(RoutingExact, HandWorkedLayout) {
  HY4_REQUIRE_DEVICE();
  const RoutingCase c = hand_case();
  ScopedStream s;
  const RoutingOutput o = run_routing_eager(c, s);
  const uint32_t P = (2u << 24) | 2u;  // (k << 24) | T
  const uint32_t want_ids[] = {(1u << 24) | 0, (0u << 24) | 1, P, P, 0u, P, P, P, (1u << 24) | 1, P, P, P};
  // max_padded = 2*2 + 4*4 - 2 = 18: slots 12..17 are tail
  for (int j = 0; j < 12; ++j) EXPECT_EQ(o.sorted_ids[j], want_ids[j]) << "slot " << j;
  for (int j = 12; j < 18; ++j) EXPECT_EQ(o.sorted_ids[j], P) << "tail slot " << j;
  const float want_w[] = {0.5f, 0.125f, 0, 0, 0.25f, 0, 0, 0, 2.0f, 0, 0, 0};
  for (int j = 0; j < 12; ++j) EXPECT_EQ(o.sorted_weights[j], f32_bits(want_w[j])) << "slot " << j;
  const int32_t want_eob[] = {0, 2, 3, -1, -1};  // ceil(18 / 4) = 5 blocks
  for (int b = 0; b < 5; ++b) EXPECT_EQ(static_cast<int32_t>(o.expert_of_block[b]), want_eob[b]) << "block " << b;
  EXPECT_EQ(o.counts[0], 12u);
  EXPECT_EQ(o.counts[1], 2u);
  EXPECT_EQ(o.sorted_ids[18], kRoutingPoison) << "written past the end of sorted_ids";
}

TEST(RoutingExact, MaskDropsAndRenumbers) {
  HY4_REQUIRE_DEVICE();
  RoutingCase c = hand_case();
  c.shape.has_mask = true;
  c.mask = {1, 1, 0, 1};  // expert 2 lives elsewhere: 0 -> 0, 1 -> 1, 3 -> 2
  ScopedStream s;
  const RoutingOutput o = run_routing_eager(c, s);
  const uint32_t P = (2u << 24) | 2u;
  const uint32_t want_ids[] = {(1u << 24) | 0, (0u << 24) | 1, P, P, (1u << 24) | 1, P, P, P};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(o.sorted_ids[j], want_ids[j]) << "slot " << j;
  EXPECT_EQ(static_cast<int32_t>(o.expert_of_block[0]), 0);
  EXPECT_EQ(static_cast<int32_t>(o.expert_of_block[1]), 2) << "expert 3 renumbered to local 2";
  EXPECT_EQ(static_cast<int32_t>(o.expert_of_block[2]), -1);
  EXPECT_EQ(o.counts[0], 8u);
}

TEST(RoutingExact, InvalidIdsAndRowsPastTheCountAreSkipped) {
  HY4_REQUIRE_DEVICE();
  RoutingCase c = hand_case();
  c.ids[0 * c.ids_stride() + 0] = static_cast<uint32_t>(-1);  // padded-row id
  c.ids[1 * c.ids_stride() + 1] = 4u;                         // == E
  ScopedStream s;
  RoutingOutput o = run_routing_eager(c, s);
  const uint32_t P = (2u << 24) | 2u;
  EXPECT_EQ(o.sorted_ids[0], (1u << 24) | 0);
  EXPECT_EQ(o.sorted_ids[1], (0u << 24) | 1);
  EXPECT_EQ(o.sorted_ids[4], P);
  EXPECT_EQ(o.counts[0], 4u);
  c = hand_case();
  c.shape.has_num_rows = true;
  c.shape.num_rows = 1;  // token 1 is graph padding
  o = run_routing_eager(c, s);
  EXPECT_EQ(o.sorted_ids[0], (1u << 24) | 0);
  EXPECT_EQ(o.sorted_ids[1], P);
  EXPECT_EQ(o.counts[0], 8u);
  EXPECT_EQ(o.counts[1], 1u);
}

TEST(RoutingProperties, MatchesBitModelSortReferenceAndInvariants) {
  HY4_REQUIRE_DEVICE();
  EXPECT_TRUE(rc::check("routing == bit model bitwise; == sort reference; invariants hold", [] {
    const auto shape = *gen_routing_shape(700);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const RoutingCase c = make_routing_case(seed, shape);
    RC_CLASSIFY(RoutingPlan::chunks(shape.T) > 1, "several chunks");
    RC_CLASSIFY(shape.has_mask, "mask");
    const auto r = routing_case_passes(c, "routing.MatchesBitModel");
    if (!r) RC_FAIL(r.message());
  }));
}

TEST(RoutingProperties, HyV4DecodeAndPrefill) {
  HY4_REQUIRE_DEVICE();
  for (uint64_t seed : test::seed_list())
    for (int64_t T : {1, 8, 64, 513, 4096}) {
      RoutingShape sh;  // k = 8 of [T, 9], E = 256, block 64
      sh.T = T;
      sh.has_num_rows = seed % 2 == 0;
      sh.num_rows = T - static_cast<int64_t>(seed % 3);
      sh.values = seed % 3 == 0 ? RoutingValues::Mixed : RoutingValues::TopkLike;
      if (T >= 4096 && seed % 4 != 0) continue;  // a few large ones
      EXPECT_TRUE(routing_case_passes(make_routing_case(seed + T, sh), "routing.HyV4.T" + std::to_string(T)));
    }
}

// The upstream bug: a sorter that read ids[t * k + s] whatever the row stride.  The
// strided view ([:, :8] of [T, 9]) must give exactly what a contiguous copy gives.
TEST(RoutingProperties, StridedViewsEqualContiguousCopies) {
  HY4_REQUIRE_DEVICE();
  for (uint64_t seed : test::seed_list()) {
    RoutingShape sh;
    sh.T = 37;
    sh.ids_pad = 1;
    sh.weights_pad = 2;
    RoutingCase strided = make_routing_case(seed, sh);
    RoutingShape dense_shape = sh;
    dense_shape.ids_pad = dense_shape.weights_pad = 0;
    RoutingCase dense = make_routing_case(seed, dense_shape);
    for (int64_t t = 0; t < sh.T; ++t)
      for (int s = 0; s < sh.k; ++s) {
        dense.ids[t * sh.k + s] = strided.ids[t * strided.ids_stride() + s];
        dense.weights[t * sh.k + s] = strided.weights[t * strided.weights_stride() + s];
      }
    ScopedStream st;
    const RoutingOutput a = run_routing_eager(strided, st), b = run_routing_eager(dense, st);
    EXPECT_EQ(a.sorted_ids, b.sorted_ids) << "seed " << seed;
    EXPECT_EQ(a.sorted_weights, b.sorted_weights) << "seed " << seed;
    EXPECT_EQ(a.expert_of_block, b.expert_of_block) << "seed " << seed;
    EXPECT_TRUE(routing_case_passes(strided, "routing.Strided." + std::to_string(seed)));
  }
}

// Both sides of the warp walk (entries per chunk around multiples of 32 and 64), of
// the one-chunk / several-chunks split and of the padding (block sizes).
TEST(RoutingProperties, EveryWalkAndChunkSplitBothSides) {
  HY4_REQUIRE_DEVICE();
  for (int64_t T : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257})
    for (int k : {1, 8})
      for (int bs : {1, 16, 64, 1024}) {
        RoutingShape sh;
        sh.T = T;
        sh.E = (k == 1 ? 5 : 33) + static_cast<int>(T % 4);  // E % 4 = 1 .. 3 and 0
        sh.k = k;
        sh.block_size = bs;
        sh.values = RoutingValues::Mixed;
        sh.hidden = T % 2 ? 3 : 0;
        EXPECT_TRUE(routing_case_passes(make_routing_case(T * 7 + k + bs, sh),
                                        "routing.Split.T" + std::to_string(T) + "k" + std::to_string(k)));
      }
}

// The one-kernel / two-kernel split (T*k around kSingleMaxEntries at k = 1, 8, 32, both
// sides), one chunk and several with two kernels, E below 128 with two kernels (256
// threads, more warps than the one-kernel path gives that E), the padding blocks
// fill_blocks() on both sides of 1, 2 and 3 blocks and past its cap, and the two-kernel
// grid max(chunks, fill_blocks) both ways (blocks past the chunks that only pad; chunks
// past the padding blocks).
TEST(RoutingProperties, EveryPathAndGridSplitBothSides) {
  HY4_REQUIRE_DEVICE();
  struct Split { int64_t T; int k, E, bs; };
  const int64_t S = RoutingPlan::kSingleMaxEntries;
  const Split splits[] = {
      {S / 8, 8, 256, 64},     {S / 8 + 1, 8, 256, 64},  {S, 1, 33, 16},         {S + 1, 1, 33, 16},
      {S / 32, 32, 40, 2},     {S / 32 + 1, 32, 40, 2},  {S / 8 + 200, 8, 7, 1}, {700, 8, 256, 64},
      {1, 1, 128, 32},         {1, 1, 128, 33 - 1},      {2, 1, 64, 64},         {0, 1, 512, 8},
      // max_padded = T*k + E*bs - k: 1024 (1 padding block), 1025 (2), 2049 (3), 524288 + (the cap)
      {1, 1, 64, 16},          {2, 1, 64, 16},           {2, 1, 32, 64},         {9, 8, 512, 1024},
      {S / 8, 8, 512, 1024},
      // two kernels: 5 chunks, 18 padding blocks | 64 chunks, 5 padding blocks
      {S / 8 + 1, 8, 256, 64}, {4096, 1, 2, 1}};
  for (const Split& sp : splits)
    for (bool mask : {false, true}) {
      RoutingShape sh;
      sh.T = sp.T;
      sh.E = sp.E;
      sh.k = std::min(sp.k, sp.E);
      sh.block_size = sp.bs;
      sh.has_mask = mask;
      sh.has_num_rows = mask;
      sh.num_rows = sp.T - 1;
      sh.hidden = mask ? 2 : 0;
      sh.values = mask ? RoutingValues::Mixed : RoutingValues::TopkLike;
      const std::string name = "routing.PathSplit.T" + std::to_string(sp.T) + "k" + std::to_string(sh.k) + "E" +
                               std::to_string(sp.E) + "bs" + std::to_string(sp.bs) + (mask ? "mask" : "");
      EXPECT_TRUE(routing_case_passes(make_routing_case(static_cast<uint64_t>(sp.T * 31 + sp.E + mask), sh), name))
          << (RoutingPlan::one_kernel(sp.T, sh.k) ? "one kernel, " : "two kernels, " + std::to_string(RoutingPlan::chunks(sp.T)) + " chunks, ")
          << RoutingPlan::sort_blocks(sp.T, sh.k, sp.E, sp.bs) << " sort blocks";
    }
  // The cases above straddle the one-kernel split only while it sits where routing.h says
  // (T*k at most kSingleMaxEntries: one kernel); both sides give the same bits, so only the
  // plan can tell (a mutant sweep found the split movable by one unseen).
  EXPECT_TRUE(RoutingPlan::one_kernel(S / 8, 8));
  EXPECT_FALSE(RoutingPlan::one_kernel(S / 8 + 1, 8));
  EXPECT_TRUE(RoutingPlan::one_kernel(S, 1));
  EXPECT_FALSE(RoutingPlan::one_kernel(S + 1, 1));
  EXPECT_EQ(RoutingPlan::fill_blocks(1, 1, 64, 16), 1);  // 1024 slots
  EXPECT_EQ(RoutingPlan::fill_blocks(2, 1, 64, 16), 2);  // 1025
  EXPECT_EQ(RoutingPlan::fill_blocks(2, 1, 32, 64), 3);  // 2049
  EXPECT_EQ(RoutingPlan::fill_blocks(9, 8, 512, 1024), RoutingPlan::kMaxFillBlocks);
  // two kernels, both ways (written against the plan's constants, so a change of the chunk
  // policy keeps the sides; the case list above holds both shapes):
  EXPECT_EQ(RoutingPlan::sort_blocks(S / 8 + 1, 8, 256, 64), 18);  // 18 padding blocks past the chunks
  EXPECT_LT(RoutingPlan::chunks(S / 8 + 1), 18);
  EXPECT_EQ(RoutingPlan::sort_blocks(4096, 1, 2, 1), RoutingPlan::chunks(4096));  // chunks past the 5 padding blocks
  EXPECT_EQ(RoutingPlan::fill_blocks(4096, 1, 2, 1), 5);
  EXPECT_GT(RoutingPlan::chunks(4096), 5);
  // Chunks of kChunkTokens tokens up to kMaxChunks, then longer ones: both sides of each
  // step (an extra, empty chunk gives the same bits, so only the plan can tell; a mutant
  // sweep found ceil's + kChunkTokens - 1 as + 1 unseen).
  const int64_t ct = RoutingPlan::kChunkTokens, cap = RoutingPlan::kMaxChunks;
  EXPECT_EQ(RoutingPlan::chunks(1), 1);
  EXPECT_EQ(RoutingPlan::chunks(ct), 1);
  EXPECT_EQ(RoutingPlan::chunks(ct + 1), 2);
  EXPECT_EQ(RoutingPlan::chunks(ct * cap), cap);
  EXPECT_EQ(RoutingPlan::chunks(ct * cap + 1), cap);
  EXPECT_EQ(RoutingPlan::chunk_tokens(ct * cap), ct);
  EXPECT_EQ(RoutingPlan::chunk_tokens(ct * cap + 1), ct + 1);
}

// The one kernel's decode path (T*k <= RoutingPlan::kDecodeMaxEntries = 32, no mask: one
// warp ranks every entry, one per lane) on both sides of its split: at each k = 1 .. 32,
// T = 1, 2, the last two T with T*k <= 32 and the first past it (decode | bitmap); every kind of values (ids repeated in a
// row, -1 and out-of-range ids, one expert holding most entries), the device row count below
// T, block sizes from 1 (no padding) to 1024 (experts' padding over several fill blocks'
// warps), E from k to 512, each once without a mask (the decode path) and once with one
// (the bitmap path).
TEST(RoutingProperties, DecodePathBothSidesOfItsSplit) {
  HY4_REQUIRE_DEVICE();
  const int64_t D = RoutingPlan::kDecodeMaxEntries;
  const int experts[] = {0, 33, 256, 512, 40};  // per value kind; at least k
  const int block_sizes[] = {1, 16, 64, 1024, 2};
  int decode_cases = 0;
  for (int k : {1, 2, 3, 4, 8, 16, 32}) {
    std::vector<int64_t> Ts;
    for (int64_t T : {int64_t{1}, int64_t{2}, int64_t{32 / k - 1}, int64_t{32 / k}, int64_t{32 / k + 1}, D / k - 1, D / k, D / k + 1})
      if (T >= 1 && std::find(Ts.begin(), Ts.end(), T) == Ts.end()) Ts.push_back(T);
    for (int64_t T : Ts)
      for (int v = 0; v < 5; ++v)
        for (bool mask : {false, true}) {
          RoutingShape sh;
          sh.T = T;
          sh.k = k;
          sh.E = std::max(k, experts[v]);
          sh.block_size = block_sizes[(v + k) % 5];
          sh.values = static_cast<RoutingValues>(v);
          sh.has_mask = mask;
          sh.has_num_rows = v % 2 == 1;
          sh.num_rows = T - 1;
          sh.hidden = v == 3 ? 5 : 0;
          if (RoutingPlan::decode_path(T, k, mask)) ++decode_cases;
          const std::string name = "routing.Decode.T" + std::to_string(T) + "k" + std::to_string(k) + "E" +
                                   std::to_string(sh.E) + "bs" + std::to_string(sh.block_size) + "v" + std::to_string(v) +
                                   (mask ? "mask" : "");
          EXPECT_TRUE(routing_case_passes(make_routing_case(static_cast<uint64_t>(T * 131 + k * 7 + v + mask), sh), name))
              << (RoutingPlan::decode_path(T, k, mask) ? "decode path" : "bitmap or block-scan path");
        }
  }
  EXPECT_EQ(decode_cases, 115);  // 23 (T, k) at or below the split, 5 value kinds each, no mask
  EXPECT_TRUE(RoutingPlan::decode_path(4, 8, false));
  EXPECT_FALSE(RoutingPlan::decode_path(5, 8, false));
  EXPECT_FALSE(RoutingPlan::decode_path(1, 8, true));
  // Its grid: blocks of at most 128 threads, as many more blocks as block_threads() has
  // threads over that (max_padded / 1024 fill blocks, at most 128): the same warps.
  EXPECT_EQ(RoutingPlan::decode_threads(1, 8, 256), 128);
  EXPECT_EQ(RoutingPlan::decode_blocks(1, 8, 256, 64), 32);     // 16 fill blocks x 2
  EXPECT_EQ(RoutingPlan::decode_blocks(1, 8, 512, 64), 128);    // 32 x 4
  EXPECT_EQ(RoutingPlan::decode_blocks(1, 16, 256, 1024), 256); // the fill cap 128 x 2
  EXPECT_EQ(RoutingPlan::decode_threads(1, 1, 64), 64);         // E <= 64: block_threads()
  EXPECT_EQ(RoutingPlan::decode_blocks(1, 1, 64, 16), 1);
}

// The decode path's segment starts: with n = T*k <= block_size every used expert's
// padded size is one block, past it an expert may take several (an implementation that
// assumed one block there was measured, docs/MEASUREMENTS.md, twelfth session).  n on
// both sides of block_size (and equal), every value kind (duplicates and skew make counts
// above 1, invalid ids leave experts out), E around multiples of 32, without and with a
// device row count.
TEST(RoutingProperties, DecodeStartsBothSidesOfOneBlockPerExpert) {
  HY4_REQUIRE_DEVICE();
  struct Split { int64_t T; int k, bs; };
  const Split splits[] = {{15, 1, 16}, {16, 1, 16}, {17, 1, 16}, {4, 4, 16}, {5, 4, 16}, {31, 1, 32},
                          {32, 1, 32}, {3, 8, 32}, {4, 8, 32}, {2, 8, 16}, {3, 8, 16}, {1, 32, 16},
                          {1, 32, 32}, {1, 32, 64}, {1, 1, 1}, {2, 1, 1}};
  for (const Split& sp : splits)
    for (int E : {32, 33, 256, 511})
      for (int v = 0; v < 5; ++v) {
        RoutingShape sh;
        sh.T = sp.T;
        sh.k = sp.k;
        sh.E = std::max(E, sp.k);
        sh.block_size = sp.bs;
        sh.values = static_cast<RoutingValues>(v);
        sh.has_num_rows = (v + E) % 2 == 1;
        sh.num_rows = sp.T - 1;
        ASSERT_TRUE(RoutingPlan::decode_path(sp.T, sp.k, false));
        const std::string name = "routing.DecodeStarts.T" + std::to_string(sp.T) + "k" + std::to_string(sp.k) + "bs" +
                                 std::to_string(sp.bs) + "E" + std::to_string(sh.E) + "v" + std::to_string(v);
        EXPECT_TRUE(routing_case_passes(make_routing_case(static_cast<uint64_t>(sp.T * 977 + sp.k * 31 + E + v), sh), name))
            << (sp.T * sp.k <= sp.bs ? "one block per used expert" : "padded sizes summed");
      }
}

// The decode path's largest segment: kDecodeMaxEntries (32) entries of one expert at
// block_size 1, a padded size of 32 blocks (when the path went to 64 entries, the eighteenth
// session's ballot sums read block counts to 7 bits; cut to 6 only this test failed).
// Every entry on one expert (the smallest, the largest, one in between), n = 32 at three
// (T, k), and one entry fewer.
TEST(RoutingProperties, DecodeLeaderWithTheMostBlocks) {
  HY4_REQUIRE_DEVICE();
  const int64_t D = RoutingPlan::kDecodeMaxEntries;
  for (int k : {1, 2, 8})
    for (int64_t n : {D, D - 1})
      for (int E : {256, 511}) {
        RoutingShape sh;
        sh.k = k;
        sh.T = (n + k - 1) / k;
        sh.E = E;
        sh.block_size = 1;
        ASSERT_TRUE(RoutingPlan::decode_path(sh.T, k, false));
        for (int expert : {0, E / 2, E - 1}) {
          RoutingCase c = make_routing_case(static_cast<uint64_t>(n * 7 + k + E + expert), sh);
          for (int64_t t = 0; t < sh.T; ++t)
            for (int s = 0; s < k; ++s)
              c.ids[t * c.ids_stride() + s] = t * k + s < n ? static_cast<uint32_t>(expert) : static_cast<uint32_t>(-1);
          const std::string name = "routing.DecodeMostBlocks.T" + std::to_string(sh.T) + "k" + std::to_string(k) + "n" +
                                   std::to_string(n) + "E" + std::to_string(E) + "x" + std::to_string(expert);
          EXPECT_TRUE(routing_case_passes(c, name));
        }
      }
}

// The bitmap path (64 < T*k <= kBitmapMaxEntries = 512 and E <= kBitmapMaxExperts = 256,
// or a mask at T*k <= 512) on both sides of each of its splits:
//  - the path: n = 32 | 33 (decode | bitmap; HY V4's T = 4 | 5 and 8), 512 | 513 (bitmap | block-scan sort) at k = 1,
//    8, 32; E = 256 | 257 at n = 512; a mask at n <= 64 (bitmap, not decode);
//  - its block: bitmap_threads = max(scan_threads(E), the power of two >= n), each side
//    larger (E = 256 at n = 72; E = 33 at n = 512; E = 64 at n = 65);
//  - the bitmap's words: n at 32 | 33, 480 | 481 and 512 (an entry in bit 31 of word 15);
//  - the expert warps of the scan: E <= warpSize (one) | several (E = 33, 200, 256);
//  - the padding: block_size 1 (none) .. 1024 (segments over several fill blocks' parts;
//    at E = 256 and n = 512 the padded sizes sum to 2^18, the packed scan's widest);
//  - every value kind, a device row count below T, moe_out rows.
TEST(RoutingProperties, BitmapPathBothSidesOfItsSplits) {
  HY4_REQUIRE_DEVICE();
  struct Split { int64_t T; int k, E; bool mask; bool bitmap; };
  const Split splits[] = {
      {4, 8, 256, false, false},  {5, 8, 256, false, true},   {32, 1, 64, false, false}, {33, 1, 64, false, true},
      {8, 8, 256, false, true},   {9, 8, 256, false, true},   {2, 32, 40, false, true},  {1, 32, 40, false, false},
      {64, 8, 256, false, true},  {65, 8, 256, false, false}, {64, 8, 257, false, false}, {64, 8, 33, false, true},
      {512, 1, 33, false, true},  {513, 1, 33, false, false}, {16, 32, 200, false, true}, {17, 32, 200, false, false},
      {1, 8, 256, true, true},    {8, 8, 256, true, true},    {33, 1, 2, true, true},    {60, 8, 256, false, true},
      {481, 1, 256, false, true}, {480, 1, 256, false, true}, {33, 1, 33, false, true},   {3, 32, 40, false, true},
      {32, 1, 2, true, true},     {64, 8, 256, true, true}};
  const int block_sizes[] = {1, 16, 64, 1024, 2};
  for (const Split& sp : splits) {
    ASSERT_EQ(RoutingPlan::bitmap_path(sp.T, sp.k, sp.E, sp.mask), sp.bitmap)
        << "T " << sp.T << " k " << sp.k << " E " << sp.E << (sp.mask ? " mask" : "");
    for (int v = 0; v < 5; ++v) {
      RoutingShape sh;
      sh.T = sp.T;
      sh.k = sp.k;
      sh.E = sp.E;
      sh.block_size = block_sizes[(v + sp.k) % 5];
      sh.values = static_cast<RoutingValues>(v);
      sh.has_mask = sp.mask;
      sh.has_num_rows = v % 2 == 1;
      sh.num_rows = sp.T - 1 - v;
      sh.hidden = v == 2 ? 3 : 0;
      sh.ids_pad = v % 3;
      const std::string name = "routing.Bitmap.T" + std::to_string(sp.T) + "k" + std::to_string(sp.k) + "E" +
                               std::to_string(sp.E) + "bs" + std::to_string(sh.block_size) + "v" + std::to_string(v) +
                               (sp.mask ? "mask" : "");
      EXPECT_TRUE(routing_case_passes(make_routing_case(static_cast<uint64_t>(sp.T * 313 + sp.k * 17 + sp.E + v), sh), name))
          << (sp.bitmap ? "bitmap path" : "other path") << ", " << RoutingPlan::bitmap_threads(sp.T, sp.k, sp.E) << " threads";
    }
  }
  EXPECT_EQ(RoutingPlan::bitmap_threads(9, 8, 256), 256);  // E decides
  EXPECT_EQ(RoutingPlan::bitmap_threads(64, 8, 33), 256);  // n / 2 decides (two entries per thread)
  EXPECT_EQ(RoutingPlan::bitmap_threads(33, 1, 64), 64);
  EXPECT_EQ(RoutingPlan::bitmap_threads(128, 1, 64), 64);   // 128 entries: two for each of 64 threads
  EXPECT_EQ(RoutingPlan::bitmap_threads(129, 1, 64), 128);  // one more: the next power of two
  EXPECT_EQ(RoutingPlan::bitmap_threads(1, 8, 2), 64);     // at least a wave64
}

// The bitmap path's widest rows: all 512 entries on one expert (the first, the last, one in
// between) at block_size 1 and 1024, so one row holds every bit and the expert's padded
// size is the largest the packed scan carries; and one entry fewer.
TEST(RoutingProperties, BitmapOneExpertHoldsEveryEntry) {
  HY4_REQUIRE_DEVICE();
  const int64_t B = RoutingPlan::kBitmapMaxEntries;
  for (int k : {1, 8})
    for (int64_t n : {B, B - 1})
      for (int bs : {1, 1024}) {
        RoutingShape sh;
        sh.k = k;
        sh.T = (n + k - 1) / k;
        sh.E = 256;
        sh.block_size = bs;
        ASSERT_TRUE(RoutingPlan::bitmap_path(sh.T, k, sh.E, false));
        for (int expert : {0, 129, 255}) {
          RoutingCase c = make_routing_case(static_cast<uint64_t>(n * 5 + k + bs + expert), sh);
          for (int64_t t = 0; t < sh.T; ++t)
            for (int s = 0; s < k; ++s)
              c.ids[t * c.ids_stride() + s] = t * k + s < n ? static_cast<uint32_t>(expert) : static_cast<uint32_t>(-1);
          EXPECT_TRUE(routing_case_passes(c, "routing.BitmapOneExpert.k" + std::to_string(k) + "n" + std::to_string(n) +
                                                 "bs" + std::to_string(bs) + "x" + std::to_string(expert)));
        }
      }
}

// The two-kernel sort's bitmap ranking (RoutingPlan::sort_bitmap: chunk_tokens(T) x k <= 512
// entries, E <= 256) on both sides of its split: chunks of 512 | 520 entries (k = 8 at T =
// 4096 | 4097, k = 4 at 8192 | 8193, k = 1 at 32768 | 32769), E = 256 | 257; the first
// two-kernel T (257 at k = 8: 5 chunks, 18 padding blocks, so blocks past the chunks only pad);
// a mask and a device row count (the last chunk partly real).
TEST(RoutingProperties, SortBitmapBothSidesOfItsSplit) {
  HY4_REQUIRE_DEVICE();
  struct Split { int64_t T; int k, E, bs; bool bitmap; };
  const Split splits[] = {{4096, 8, 256, 64, true}, {4097, 8, 256, 64, false}, {8192, 4, 40, 16, true},
                          {8193, 4, 40, 16, false}, {32768, 1, 2, 1, true},   {32769, 1, 2, 1, false},
                          {257, 8, 256, 64, true},  {257, 8, 257, 64, false}, {2049, 1, 33, 1024, true},
                          {300, 8, 200, 2, true}};
  for (const Split& sp : splits)
    for (bool mask : {false, true}) {
      ASSERT_EQ(RoutingPlan::sort_bitmap(sp.T, sp.k, sp.E), sp.bitmap) << "T " << sp.T << " k " << sp.k << " E " << sp.E;
      ASSERT_FALSE(RoutingPlan::one_kernel(sp.T, sp.k));
      RoutingShape sh;
      sh.T = sp.T;
      sh.k = sp.k;
      sh.E = sp.E;
      sh.block_size = sp.bs;
      sh.has_mask = mask;
      sh.has_num_rows = mask;
      sh.num_rows = sp.T - 37;
      sh.values = mask ? RoutingValues::Mixed : RoutingValues::TopkLike;
      const std::string name = "routing.SortBitmap.T" + std::to_string(sp.T) + "k" + std::to_string(sp.k) + "E" +
                               std::to_string(sp.E) + (mask ? "mask" : "");
      EXPECT_TRUE(routing_case_passes(make_routing_case(static_cast<uint64_t>(sp.T * 3 + sp.E + mask), sh), name))
          << (sp.bitmap ? "bitmap ranking, " : "ballot ranking, ") << RoutingPlan::chunks(sp.T) << " chunks of "
          << RoutingPlan::chunk_tokens(sp.T) << " tokens";
    }
}

// The offsets block is RoutingPlan::scan_threads(E) threads (64, 128, 256 or 512):
// E on both sides of every size, with a mask (the local-id scan) and padding.
TEST(RoutingProperties, EveryOffsetsBlockSizeBothSides) {
  HY4_REQUIRE_DEVICE();
  for (int E : {1, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512})
    for (bool mask : {false, true}) {
      RoutingShape sh;
      sh.T = 37;
      sh.E = E;
      sh.k = std::min(E, 8);
      sh.block_size = 16;
      sh.has_mask = mask;
      sh.values = RoutingValues::Mixed;
      EXPECT_TRUE(routing_case_passes(make_routing_case(0x5ca7 + E * 2 + mask, sh),
                                      "routing.ScanBlock.E" + std::to_string(E) + (mask ? "mask" : "")))
          << "offsets block " << RoutingPlan::scan_threads(E);
    }
}

// Past the chunk cap (kMaxChunks x kChunkTokens tokens) chunks grow: a block's chunk is
// more than 256 tokens.  E = 2, k = 1 keeps it cheap.
TEST(RoutingProperties, TokensPastTheChunkCap) {
  HY4_REQUIRE_DEVICE();
  RoutingShape sh;
  sh.T = int64_t{RoutingPlan::kMaxChunks} * RoutingPlan::kChunkTokens + 77;
  sh.E = 2;
  sh.k = 1;
  sh.block_size = 16;
  sh.has_num_rows = true;
  sh.num_rows = sh.T - 3;
  sh.hidden = 2;
  sh.values = RoutingValues::Mixed;
  EXPECT_TRUE(routing_case_passes(make_routing_case(0x9c3, sh), "routing.PastTheChunkCap"));
}

// One expert's padded segment past 2^16 slots: the sort kernel's block scan packs each
// expert's padded size above 16 bits of a 64-bit word (the unmasked flags below), so a
// segment of 65536 or more must survive the shift.  T = 9000, k = 8: 72000 entries, all on
// expert 0 but every 100th (on expert 2), E = 8, block 64 (two kernels, chunks of 141
// tokens).
TEST(RoutingProperties, OneExpertSegmentPastSixteenBits) {
  HY4_REQUIRE_DEVICE();
  RoutingShape sh;
  sh.T = 9000;
  sh.E = 8;
  sh.k = 8;
  sh.block_size = 64;
  RoutingCase c = make_routing_case(0x5e9, sh);
  for (int64_t t = 0; t < sh.T; ++t)
    for (int s = 0; s < sh.k; ++s) c.ids[t * c.ids_stride() + s] = (t * sh.k + s) % 100 == 99 ? 2u : 0u;
  EXPECT_TRUE(routing_case_passes(c, "routing.SegmentPast2e16"));
}

TEST(RoutingGraph, ReplayWithNewIdsMaskAndCountsEqualsEagerAndBitModel) {
  HY4_REQUIRE_DEVICE();
  ScopedStream s;
  const auto r = routing_graph_scenario(0x70, 300, 10, s);
  ASSERT_EQ(r.outs.size(), 10u);
  for (std::size_t k = 0; k < r.outs.size(); ++k) {
    const Verdict v = check_routing(r.as_run[k], r.outs[k]);
    EXPECT_TRUE(v.ok()) << "replay " << k << ": " << v.summary() << "\n"
                        << test::save_case_for_replay(routing_to_file(r.as_run[k]), "routing.GraphReplay." + std::to_string(k));
    EXPECT_EQ(run_routing_eager(r.as_run[k], s), r.outs[k]) << "replay " << k << " differs from an eager launch";
  }
}

TEST(RoutingWarp, Wave32AndWave64GiveTheSameBits) {
  HY4_REQUIRE_DEVICE();
  HY4_REQUIRE_BOTH_WARP_SIZES();
  for (uint64_t seed : test::seed_list())
    EXPECT_TRUE(test::same_bits_at_warp_32_and_64(random_routing_case(seed, 600), run_routing_eager)) << "seed " << seed;
}

TEST(RoutingArguments, EveryBadArgumentClassIsRefusedWithItsName) {
  HY4_REQUIRE_DEVICE();
  int classes = 0;
  const auto failures = routing_bad_argument_failures(&classes);
  EXPECT_GE(classes, 31);
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// ---- the captured topk -> routing chain ------------------------------------------------------
TEST(RoutingGraph, CapturedTopkRoutingChainEqualsEagerAndBothBitModels) {
  HY4_REQUIRE_DEVICE();
  ScopedStream s;
  for (int64_t T : {1, 64, 300}) {
    const auto runs = run_topk_routing_chain(0xc4a1 + T, T, 8, s);
    ASSERT_EQ(runs.size(), 8u);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const Verdict v = check_chain(runs[k], s);
      EXPECT_TRUE(v.ok()) << "T=" << T << " replay " << k << " (row count " << runs[k].topk.shape.num_rows
                          << "): " << v.summary() << "\n"
                          << test::save_case_for_replay(topk_to_file(runs[k].topk), "routing.Chain.topk." + std::to_string(k));
    }
  }
}
