#!/bin/bash
set -u
. .deps/env.sh
export CCACHE_DISABLE=1
t0=$(date +%s)
{ cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j 16 --target bench_e2e bench_forward bench_kernels cuda_kernels_test; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=build/a5500
$B/tests/cuda/cuda_kernels_test --gtest_filter='*AttentionFlash*' --gtest_output=xml:$OUT/attn-tests.xml > $OUT/tests.log 2>&1; tail -3 $OUT/tests.log
$B/bench/bench_kernels --benchmark_filter='^attention_form/' --benchmark_min_time=0.05s --benchmark_repetitions=3 --benchmark_report_aggregates_only=true > $OUT/kernels.txt 2>&1
grep median $OUT/kernels.txt | sed 's/\x1b\[[0-9;]*m//g' | awk '{print $1, $2, $3}'
E="--precision=fp16 --benchmark_filter=^BM_E2E_Image/256 --benchmark_repetitions=3"
F="--precision=fp16 --benchmark_filter=^BM_Forward/image:256/batch:2/ --benchmark_repetitions=5"
for r in 1 2; do
  for p in 0 1; do
    echo "== round $r pipelined $p" >> $OUT/e2e.txt
    DIT_FLASH_PIPELINED=$p $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median >> $OUT/e2e.txt
    DIT_FLASH_PIPELINED=$p $B/bench/bench_forward $F 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median >> $OUT/e2e.txt
  done
  for mb in 128 400; do
    echo "== round $r chunk $mb MB" >> $OUT/e2e.txt
    DIT_CHUNK_MB=$mb $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep median >> $OUT/e2e.txt
  done
done
cut -c1-170 $OUT/e2e.txt
echo "total $(( $(date +%s) - t0 )) s"
