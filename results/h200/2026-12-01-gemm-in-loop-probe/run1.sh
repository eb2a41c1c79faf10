#!/bin/bash
set -u
. .deps/env.sh
export CCACHE_DISABLE=1
t0=$(date +%s)
{ cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j 16 --target bench_e2e; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=build/a5500
E="--precision=fp16 --benchmark_filter=^BM_E2E_Image/256 --benchmark_repetitions=3"
run() { echo "== $1 [$2]" >> $OUT/e2e.txt; env $2 $B/bench/bench_e2e $E 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "probe: .*M=512|probe: .*512 x|manual_time +[0-9]|median" | sort -u | cut -c1-250 >> $OUT/e2e.txt; }
run base "DIT_X=1"
for k in 1 2 3 4 5; do run k$k "DIT_PROBE_N32=$k"; done
run base "DIT_X=1"
cat $OUT/e2e.txt
echo "total $(( $(date +%s) - t0 )) s"
