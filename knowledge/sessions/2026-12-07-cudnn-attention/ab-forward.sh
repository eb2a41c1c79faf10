#!/bin/bash
# ab-forward.sh PATCH [EXCLUDE...]: DiT-XL/2 fp16 forward passes of the checkout and of the
# checkout with PATCH applied, in one run on one GPU, alternated (main, patched, main, patched):
# bench_forward at 256 batch 2 and 64 and at 512 batch 2, five repetitions each. Not a loop
# decision: a measurement for choosing what a lease judges when the device time left is too short
# for a session (about 300 s of builds and benchmarks). EXCLUDE: paths of PATCH left out (a file
# whose change is a comment only, so the rebuild is the changed sources alone).
# From the checkout root on the GPU host, with .deps/ carried (only it); writes into $OUT.
set -u
patch=${1:?usage: ab-forward.sh PATCH [EXCLUDE...]}; shift
o=${OUT:?}
# shellcheck source=/dev/null
. .deps/env.sh >/dev/null
w=$PWD/.ab-forward
rm -rf "$w"; mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$o/host.txt"
stamp() { echo "$(date -u +%T) $*" | tee -a "$o/steps.txt"; }
build() {
  { cmake --preset a5500 -G Ninja && CCACHE_DISABLE=1 cmake --build --preset a5500 --target bench_forward -j "$(nproc)"; } \
    >>"$o/build.log" 2>&1 || { tail -30 "$o/build.log"; exit 1; }
}
stamp build main; build; cp build/a5500/bench/bench_forward "$w/bf-main"
excludes=(); for path in "$@"; do excludes+=("--exclude=$path"); done
git apply "${excludes[@]}" "$patch" || { stamp "$patch does not apply"; exit 2; }
# the checkout as it was, however the patched build ends (the built binaries are copies)
revert() { git apply -R "${excludes[@]}" "$patch" || stamp "$patch could not be reverted"; }
trap revert EXIT
stamp build patched; build; cp build/a5500/bench/bench_forward "$w/bf-patched"
trap - EXIT; revert
grep -E "^(CudnnFrontend|DIT_CUDNN_FRONTEND|CUTLASS)[A-Za-z_]*:" build/a5500/CMakeCache.txt >>"$o/host.txt"
for round in 1 2; do
  for side in main patched; do
    stamp "bench $side round $round"
    "$w/bf-$side" --precision=fp16 '--benchmark_filter=^BM_Forward/image:(256/batch:(2|64)|512/batch:2)/' \
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_out="$o/forward-$side-$round.json" >"$o/forward-$side-$round.txt" 2>&1 ||
      stamp "bench $side round $round failed"
  done
done
stamp finished
