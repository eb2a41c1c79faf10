#!/bin/bash
set -u
. .deps/env.sh
export CCACHE_DISABLE=1
t0=$(date +%s)
{ cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j 16 --target bench_e2e bench_kernels cuda_kernels_test cuda_model_test; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=build/a5500
for rows in 1 2; do
  DIT_PATCH_ROWS=$rows $B/tests/cuda/cuda_kernels_test --gtest_filter='CudaPatchEmbedLayerNorm*' 2>&1 | tail -1
done
$B/tests/cuda/cuda_kernels_test --gtest_filter='CudaPatchEmbed*:CudaLoopStep*:CudaResidualLayerNorm*:CudaLayerNormModulate*' --gtest_output=xml:$OUT/tests.xml > $OUT/tests.log 2>&1; tail -1 $OUT/tests.log
$B/tests/cuda/cuda_model_test --gtest_filter='CudaSampling*:CudaGraphs*' > $OUT/model-tests.log 2>&1; tail -1 $OUT/model-tests.log
for rows in 1 2 4; do
  DIT_PATCH_ROWS=$rows $B/bench/bench_kernels --benchmark_filter='^patch_embed_layernorm' --benchmark_min_time=0.05s --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median | sed "s/^/rows $rows: /" | cut -c1-110
done
echo "tests+kernels $(( $(date +%s) - t0 )) s"
E="--precision=fp16 --benchmark_filter=^BM_E2E_Image/256 --benchmark_repetitions=3"
run() { echo "== $1" >> $OUT/e2e.txt; env $2 $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "manual_time +[0-9]|median" >> $OUT/e2e.txt; }
run old "DIT_PATCH_ROWS=1 DIT_LOOP_OLD=1"
run new "DIT_PATCH_ROWS=4"
run old "DIT_PATCH_ROWS=1 DIT_LOOP_OLD=1"
run new "DIT_PATCH_ROWS=4"
run patch-only "DIT_PATCH_ROWS=4 DIT_LOOP_OLD=1"
cut -c1-120 $OUT/e2e.txt
echo "total $(( $(date +%s) - t0 )) s"
