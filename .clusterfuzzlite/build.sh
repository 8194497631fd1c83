#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: every fuzzer of fuzz/ into $OUT with its dictionary
# and seed corpus (<name>_fuzzer.dict, <name>_fuzzer_seed_corpus.zip).  The
# infrastructure supplies $CC $CXX $CFLAGS $CXXFLAGS (sanitizer + coverage flags) and
# $LIB_FUZZING_ENGINE; HY4_FUZZ_ENGINE tells fuzz/CMakeLists.txt to use them instead of
# its own -fsanitize flags.  Runs outside Docker too, given those variables (README).
set -eu
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
src=$SRC/hy4check
[ -d "$src/fuzz" ] || src=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/hy4-cflite-work}
: "${OUT:?set OUT}"
: "${LIB_FUZZING_ENGINE:?set LIB_FUZZING_ENGINE (e.g. -fsanitize=fuzzer)}"
mkdir -p "$WORK" "$OUT"
cmake -S "$src" -B "$WORK/build" -G Ninja -DHY4_BACKEND=cpu -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
  -DHY4_FUZZ=ON -DHY4_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" -DHY4_TESTS=OFF
ninja -C "$WORK/build" $(cd "$src/fuzz" && ls *_fuzzer.cpp | sed 's/\.cpp$//')
for f in "$src"/fuzz/*_fuzzer.cpp; do
  name=$(basename "$f" .cpp)
  op=${name%_fuzzer}
  cp "$WORK/build/fuzz/$name" "$OUT/"
  [ -f "$src/fuzz/dict/$op.dict" ] && cp "$src/fuzz/dict/$op.dict" "$OUT/$name.dict"
  if [ -d "$src/fuzz/corpus/$op" ]; then
    rm -f "$OUT/${name}_seed_corpus.zip"
    (cd "$src/fuzz/corpus/$op" && zip -q -j "$OUT/${name}_seed_corpus.zip" ./*)
  fi
done
echo "build.sh: $(ls "$OUT"/*_fuzzer | wc -l) fuzzers in $OUT"
