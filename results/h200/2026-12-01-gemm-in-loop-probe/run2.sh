#!/bin/bash
set -u
. .deps/env.sh
export CCACHE_DISABLE=1
t0=$(date +%s)
{ cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j 16 --target bench_e2e; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=build/a5500
E="--precision=fp16 --benchmark_filter=^BM_E2E_Image/256 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
run() { r=$(env $2 $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "probe: |median" | sort -u | sed 's/linear M=512 //; s/operands=f16 //; s/fp32-compute //' | cut -c1-200 | tr '\n' ' '); echo "$1 $r" | tee -a $OUT/e2e.txt; }
run base "DIT_X=1"
run final-k4 "DIT_PROBE_GEMM=32,1152,4"
for spec in 3456,1152 1152,1152 4608,1152 1152,4608; do for k in 1 2 3; do run "$spec,$k" "DIT_PROBE_GEMM=$spec,$k"; done; done
run base "DIT_X=1"
echo "total $(( $(date +%s) - t0 )) s"
