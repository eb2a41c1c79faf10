#!/bin/bash
# Scratch: build and run the exp-final microbenchmark on the device machine.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
nvcc --version | tail -1
F="-std=c++20 -O3 -DDIT_WITH_CUDA=1 -I inc --expt-relaxed-constexpr"
nvcc $F -gencode arch=compute_86,code=compute_86 bench.cu -lcublasLt -o bench || exit 1
./bench 2>&1 | tee $OUT/bench.txt
for f in a2_r2 b_w12; do
  printf '#include "kernels/linear.h"\n#include "%s.cu"\n' $f > sass_$f.cu
  nvcc $F -cubin -arch=sm_86 sass_$f.cu -o $f.cubin && cuobjdump -sass $f.cubin > $OUT/$f.sass
  grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+[A-Z0-9_.]+' $OUT/$f.sass | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -25 > $OUT/$f.hist
done
echo done
