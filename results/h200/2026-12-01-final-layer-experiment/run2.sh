#!/bin/bash
set -u
. .deps/env.sh
export CCACHE_DISABLE=1
t0=$(date +%s)
{ cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j 16 --target bench_e2e bench_forward cuda_kernels_test cuda_model_test; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=build/a5500
{
$B/tests/cuda/cuda_kernels_test --gtest_filter='*FinalLayer*:*ResidualLayerNorm*:*Attention*' 2>&1 | grep -E "final_layer|OK|FAILED|PASSED" | cut -c1-150
$B/tests/cuda/cuda_model_test --gtest_filter='*Precision*:*Graphs*' 2>&1 | grep -E "FAILED|PASSED|relative" | cut -c1-150
} > $OUT/tests.txt 2>&1
grep -E "FAILED|PASSED" $OUT/tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
E="--precision=fp16 --benchmark_filter=^BM_E2E_Image/256 --benchmark_repetitions=3"
run() { echo "== $1 [$2]" >> $OUT/e2e.txt; env $2 $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "manual_time +[0-9]|median" | cut -c1-70 >> $OUT/e2e.txt; }
run base "DIT_FUSED_FINAL=0"
run fused "DIT_X=1"
run base "DIT_FUSED_FINAL=0"
run fused "DIT_X=1"
cat $OUT/e2e.txt
echo "e2e $(( $(date +%s) - t0 )) s"
for f in 0 1; do DIT_FUSED_FINAL=$f $B/bench/bench_forward --precision=fp16 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median | cut -c1-60 | sed "s/^/fused=$f /"; done | tee $OUT/forward.txt
echo "forward $(( $(date +%s) - t0 )) s"
for spec in "0 nvjet_sm90_hss_8x64" "1 final_layer"; do set -- $spec; DIT_FUSED_FINAL=$1 ncu --metrics gpu__time_duration.sum -k "regex:$2" --launch-skip 20 --launch-count 2 $B/bench/bench_e2e --precision=fp16 '--benchmark_filter=^BM_E2E_Image/256' --benchmark_min_time=1x 2>&1 | grep -E "^  [a-zA-Z_ ]+[a-z]|duration" | cut -c1-90 | sed "s/^/fused=$1 /"; done | tee $OUT/ncu.txt
echo "total $(( $(date +%s) - t0 )) s"
