#!/bin/bash
set -u
. .deps/env.sh
export CCACHE_DISABLE=1
t0=$(date +%s)
{ cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j 16 --target bench_e2e bench_vae bench_forward cuda_kernels_test cuda_model_test vae_cuda_test vae_cuda_ops_test pipeline_cuda_test; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
nvcc -O2 -arch=sm_86 explore/graph_overhead.cu -o /tmp/graph_overhead && /tmp/graph_overhead > $OUT/graph_overhead.txt 2>&1; cat $OUT/graph_overhead.txt
B=build/a5500
{
$B/tests/cuda/cuda_kernels_test --gtest_filter='*FinalLayer*:*ResidualLayerNorm*:*LoopStep*' 2>&1 | grep -E "relative error|OK|FAILED|PASSED" | cut -c1-150
$B/tests/cuda/cuda_model_test 2>&1 | grep -E "OK \]|FAILED|PASSED|relative|error" | cut -c1-150
for f in 1; do echo "VAE fused=$f"; DIT_VAE_FUSED_BIAS=$f $B/tests/vae/vae_cuda_test 2>&1 | grep -E "FAILED|PASSED|relative" | cut -c1-150; DIT_VAE_FUSED_BIAS=$f $B/tests/vae/vae_cuda_ops_test 2>&1 | tail -1; done
$B/tests/pipeline/pipeline_cuda_test 2>&1 | tail -1
} > $OUT/tests.txt 2>&1
grep -E "FAILED|PASSED" $OUT/tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
for f in 0 1; do echo "vae fused=$f: $(DIT_VAE_FUSED_BIAS=$f $B/bench/bench_vae --precision=fp16 '--benchmark_filter=image:256' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median | cut -c1-80)"; done | tee $OUT/vae.txt
E="--precision=fp16 --benchmark_filter=^BM_E2E_Image/256 --benchmark_repetitions=3"
run() { echo "== $1 [$2]" >> $OUT/e2e.txt; env $2 $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "manual_time +[0-9]|median" | cut -c1-70 >> $OUT/e2e.txt; }
run base "DIT_FUSED_FINAL=0 DIT_VAE_FUSED_BIAS=0"
run final "DIT_VAE_FUSED_BIAS=0"
run final+vae "DIT_X=1"
run spg5 "DIT_STEPS_PER_GRAPH=5"
run spg10 "DIT_STEPS_PER_GRAPH=10"
run probe-skip-final "DIT_FUSED_FINAL=0 DIT_PROBE_SKIP_FINAL=1"
run spg10+chunk128 "DIT_STEPS_PER_GRAPH=10 DIT_MOD_CHUNK_MB=128"
run base "DIT_FUSED_FINAL=0 DIT_VAE_FUSED_BIAS=0"
run spg10 "DIT_STEPS_PER_GRAPH=10"
cat $OUT/e2e.txt
echo "e2e $(( $(date +%s) - t0 )) s"
for f in 0 1; do DIT_FUSED_FINAL=$f $B/bench/bench_forward --precision=fp16 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median | cut -c1-60 | sed "s/^/fused=$f /"; done | tee $OUT/forward.txt
echo "forward $(( $(date +%s) - t0 )) s"
ncu --metrics gpu__time_duration.sum -k 'regex:final_layer|loop_step|residual_layernorm' --launch-skip 200 --launch-count 6 $B/bench/bench_e2e --precision=fp16 '--benchmark_filter=^BM_E2E_Image/256' --benchmark_min_time=1x > $OUT/ncu.txt 2>&1; grep -E "final_layer|loop_step|residual|duration" $OUT/ncu.txt | head -20
echo "total $(( $(date +%s) - t0 )) s"
