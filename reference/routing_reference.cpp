#include "routing_reference.h"

#include <Eigen/Core>
#include <algorithm>
#include <numeric>

namespace hy4::ref {
namespace {
RoutingResult empty_layout(const RoutingInput& in) {
  const int64_t mp = in.T * in.k + int64_t{in.E} * in.block_size - in.k;
  RoutingResult r;
  r.sorted_ids.assign(mp, (in.k << 24) | static_cast<int32_t>(in.T));
  r.sorted_weights.assign(mp, 0.0f);
  r.expert_of_block.assign((mp + in.block_size - 1) / in.block_size, -1);
  r.counts[1] = static_cast<int32_t>(in.real_rows);
  return r;
}
bool unmasked(const RoutingInput& in, int e) { return in.mask == nullptr || in.mask[e] != 0; }
}  // namespace

RoutingResult routing_bit_model(const RoutingInput& in) {
  RoutingResult r = empty_layout(in);
  int64_t pos = 0;
  int32_t local = 0;
  for (int e = 0; e < in.E; ++e) {
    if (!unmasked(in, e)) continue;
    const int64_t begin = pos;
    for (int64_t t = 0; t < in.real_rows; ++t)
      for (int s = 0; s < in.k; ++s)
        if (in.ids[t * in.ids_stride + s] == e) {
          r.sorted_ids[pos] = (s << 24) | static_cast<int32_t>(t);
          r.sorted_weights[pos] = in.weights[t * in.weights_stride + s];
          ++pos;
        }
    pos = begin + (pos - begin + in.block_size - 1) / in.block_size * in.block_size;  // padding keeps the sentinel
    for (int64_t b = begin / in.block_size; b < pos / in.block_size; ++b) r.expert_of_block[b] = local;
    ++local;
  }
  r.counts[0] = static_cast<int32_t>(pos);
  return r;
}

RoutingResult routing_by_sort(const RoutingInput& in) {
  RoutingResult r = empty_layout(in);
  // local ids: prefix count of unmasked experts
  Eigen::ArrayXi local(in.E);
  for (int e = 0, n = 0; e < in.E; ++e) local(e) = unmasked(in, e) ? n++ : -1;
  // keys (local, t, s) packed into one int64: local * 2^30 + t * 32 + s
  std::vector<int64_t> keys;
  for (int64_t t = 0; t < in.real_rows; ++t)
    for (int s = 0; s < in.k; ++s) {
      const int32_t id = in.ids[t * in.ids_stride + s];
      if (id < 0 || id >= in.E || local(id) < 0) continue;
      keys.push_back((int64_t{local(id)} << 30) | (t << 5) | s);
    }
  std::sort(keys.begin(), keys.end());
  int64_t pos = 0;
  for (std::size_t i = 0; i < keys.size();) {
    const int64_t l = keys[i] >> 30;
    const int64_t begin = pos;
    for (; i < keys.size() && (keys[i] >> 30) == l; ++i) {
      const int64_t t = (keys[i] >> 5) & ((int64_t{1} << 25) - 1);
      const int s = static_cast<int>(keys[i] & 31);
      r.sorted_ids[pos] = (s << 24) | static_cast<int32_t>(t);
      r.sorted_weights[pos] = in.weights[t * in.weights_stride + s];
      ++pos;
    }
    pos = begin + (pos - begin + in.block_size - 1) / in.block_size * in.block_size;
    std::fill(r.expert_of_block.begin() + begin / in.block_size, r.expert_of_block.begin() + pos / in.block_size,
              static_cast<int32_t>(l));
  }
  r.counts[0] = static_cast<int32_t>(pos);
  return r;
}

}  // namespace hy4::ref
