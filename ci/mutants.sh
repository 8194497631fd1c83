#!/usr/bin/env bash
# ci/mutants.sh: "a test must be able to fail".  Applies each deliberate break of a
# kernel (a mutant) to a scratch copy of the tree, builds the cpu preset there and
# checks that the op's tests FAIL.  Exit 1 if any mutant survives.
#   usage: ci/mutants.sh [op ...]      (default: every op with mutants)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=${HY4_MUTANT_DIR:-/tmp/hy4-mutants}
# op|description|file|python replacement: old ==> new
mutants=(
  'gate|drop the bf16 rounding of the sigmoid|kernels/gate.hip|return bf16_from_f32(bf16_to_f32(a) * bf16_to_f32(table[g]));==>return bf16_from_f32(bf16_to_f32(a) * sigmoid_f32(bf16_to_f32(g)));'
  'gate|ignore the row stride|kernels/gate.hip|const uint16_t* a = attn + t * attn_stride;==>const uint16_t* a = attn + t * width;'
  'gate|skip the tail|kernels/gate.hip|for (int64_t i = tail_begin + first; i < width; i += step) o[i] ===>for (int64_t i = tail_begin + first; i < tail_begin; i += step) o[i] ='
  'gate|round the product toward zero|kernels/gate.hip|return bf16_from_f32(bf16_to_f32(a) * bf16_to_f32(table[g]));==>return static_cast<uint16_t>(f32_bits(bf16_to_f32(a) * bf16_to_f32(table[g])) >> 16);'
  'topk|break ties by lane (butterfly compares c only)|kernels/topk.hip|for (int m = ws / 2; m > 0; m /= 2) best = max_key(best, dev::shfl_xor(best, m));==>for (int m = ws / 2; m > 0; m /= 2) { const uint64_t o = dev::shfl_xor(best, m); best = (o >> 32) > (best >> 32) ? o : best; }'
  'topk|add the bias into the weights|kernels/topk.hip|  *s = sv;==>  *s = cv;'
  'topk|one stride for weights and ids|kernels/topk.hip|int32_t* id_row = ids + t * ids_stride;==>int32_t* id_row = ids + t * weights_stride;'
  'topk|ignore the device row count|kernels/op_device.h|return v < 0 ? 0 : (v < rows ? v : rows);==>return rows;'
  'sink|forget the empty-row repair (vector path)|kernels/sink.hip|for (int j = 0; j < N; ++j) v.v[j] = active ? scale_one(v.v[j], s) : OutT(0);==>for (int j = 0; j < N; ++j) v.v[j] = scale_one(v.v[j], s);'
  'sink|trust lse alone for emptiness|kernels/sink.hip|const bool active = end > begin && !is_inf_f32(lse);==>const bool active = !is_inf_f32(lse);'
  'sink|round in another order (scale as a ratio)|kernels/sink.hip|*scale = exp_f32(safe - l);==>*scale = exp_f32(safe - m) / (exp_f32(safe - m) + exp_f32(sink - m));'
  'sink|write outside the strided view (head stride = D)|kernels/sink.hip|offset[j] = g < 0 ? 0 : static_cast<int64_t>(h0 + g) * out_hs +==>offset[j] = g < 0 ? 0 : static_cast<int64_t>(h0 + g) * dim +'
  'routing|stride-blind sorter|kernels/routing.hip|return j < end ? ids[static_cast<int64_t>(t) * ids_stride + s] : -1;==>return j < end ? ids[static_cast<int64_t>(t) * k + s] : -1;'
  'routing|order within an expert reversed inside a warp|kernels/routing.hip|const int32_t pos = seg_base[x] + start + __builtin_popcountll(m & below);==>const int32_t pos = seg_base[x] + start + __builtin_popcountll(m & ~below & ~(uint64_t{1} << lane));'
  'routing|drop the mask renumbering|kernels/routing.hip|const int32_t local = seg_local[x] - 1;==>const int32_t local = x;'
  'routing|tail sentinel with the real row count as token|kernels/routing.hip|const int32_t pad_id = (k << 24) | static_cast<int32_t>(rows);==>const int32_t pad_id = (k << 24) | static_cast<int32_t>(real);'
  'topk|sum in reverse rank order|kernels/topk.hip|for (int r = 1; r < k; ++r) sum = sum + dev::shfl_idx(my_s, r);==>for (int r = k - 1; r >= 1; --r) sum = dev::shfl_idx(my_s, r) + sum;'
)
want_ops=("$@")
survivors=0
for m in "${mutants[@]}"; do
  IFS='|' read -r op desc file repl <<<"$m"
  if [ ${#want_ops[@]} -gt 0 ] && [[ ! " ${want_ops[*]} " =~ " $op " ]]; then continue; fi
  rm -rf "$work" && mkdir -p "$work"
  (cd "$root" && git ls-files -z | xargs -0 -I{} cp --parents {} "$work")
  python3 - "$work/$file" "$repl" <<'PY' || { echo "mutant '$desc': pattern not found in $file"; survivors=$((survivors+1)); continue; }
import sys
path, repl = sys.argv[1], sys.argv[2]
old, new = repl.split('==>', 1)
s = open(path).read()
if old not in s:
    sys.exit(1)
open(path, 'w').write(s.replace(old, new, 1))
PY
  (cd "$work" && cmake --preset cpu -DHY4_FUZZ=OFF >/dev/null && cmake --build build/cpu --target ${op}_properties hy4-repro >/dev/null) ||
    { echo "mutant '$desc': does not build"; survivors=$((survivors+1)); continue; }
  # the op's properties and its regression cases (hy4-repro is built too: a test that
  # cannot start would count as a kill)
  if (cd "$work/build/cpu" && ctest -L "^${op}$" -R cpu64 -LE fuzz-smoke --timeout 600 >/dev/null 2>&1); then
    echo "SURVIVED  $op: $desc"
    survivors=$((survivors+1))
  else
    echo "killed    $op: $desc"
  fi
done
[ "$survivors" -eq 0 ]
