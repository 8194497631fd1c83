#!/usr/bin/env bash
# bench/check_arguments.sh HY4_BENCH: hy4-bench's argument handling on the CPU backend (the
# ctest bench.arguments).  --tokens takes any T in [1, 65536] in place of the HY V4 list;
# a bad item is refused with exit 2 and named; a bad option likewise.  The timings printed
# on the CPU executor mean nothing and are not read.
set -u
bench=$1
fail=0
expect_refused() {  # ARGS... ; the message must contain $want
  local out rc
  out=$("$bench" "$@" 2>&1); rc=$?
  if [ "$rc" != 2 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: hy4-bench $* -> exit $rc, output: $out (expected exit 2 and '$want')"; fail=1
  else
    echo "ok: hy4-bench $* refused: $(grep -F -- "$want" <<<"$out")"
  fi
}
want="'x' is not a T in [1, 65536]"; expect_refused --tokens 5,x
want="'0' is not a T in [1, 65536]"; expect_refused --tokens 0
want="'65537' is not a T in [1, 65536]"; expect_refused --tokens 65537
want="'' is not a T in [1, 65536]"; expect_refused --tokens 5,
want="unknown option '--token'"; expect_refused --token 5
# A T off the HY V4 list is timed, and only the T asked for.
out=$("$bench" --ops sink --tokens 3,2 --launches 1 --replays 1 2>&1); rc=$?
rows=$(grep -E '^sink +T=' <<<"$out" | awk '{print $2}' | tr '\n' ' ')
if [ "$rc" != 0 ] || [ "$rows" != "T=3 T=2 " ]; then
  echo "FAIL: hy4-bench --ops sink --tokens 3,2 -> exit $rc, sink rows '$rows' (expected 'T=3 T=2 ')"; echo "$out"; fail=1
else
  echo "ok: hy4-bench --ops sink --tokens 3,2 -> rows $rows"
fi
exit $fail
