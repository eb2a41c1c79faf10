#!/bin/bash
# Where the GPU time of the engine goes, kernel by kernel, on the GPU host: builds the bench
# tools of an a5500 build, then
#   gemm_candidates   every cuBLASLt candidate for DiT-XL/2's linear layers (fp16 at 512, 2048
#                     and 16384 rows; fp32 at 512 and 2048) beside the engine's pick
#   conv_candidates   every cuDNN algorithm for the VAE decoder's convolutions beside the engine's
#   ncu               per-kernel time of one forward pass (fp16 256 batch 2 and 64, 512 batch 2;
#                     fp32 256 batch 2) and one VAE decode at 256 (fp16, fp32), through
#                     tools/gpu-host/ncu_breakdown.py
#   dit_profile       per-phase times of one fp16 image
#   bench_e2e         the wall time of one perf-gate process (one fp32 image of 10 steps)
# Everything lands in $OUT/data.tgz (folder d/); a summary prints last.
# Usage: tools/gpu-host/kernel-data.sh   (from the checkout root, after .deps/ is staged)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-host-out}"
. .deps/env.sh >/dev/null
export CCACHE_DISABLE=1
S=$(date +%s)
D=$OUT/d
mkdir -p "$D"
pack() { tar czf "$OUT/data.tgz" -C "$OUT" d; }
elapsed() { echo "$1 $(( $(date +%s) - S )) s"; }
{ cmake --preset a5500 -G Ninja && cmake --build build/a5500 -j "$(nproc)" --target bench_forward bench_vae \
    bench_e2e dit_profile gemm_candidates conv_candidates; } >"$D/build.log" 2>&1 \
  || { tail -40 "$D/build.log"; pack; exit 1; }
elapsed build
B=build/a5500/bench
$B/gemm_candidates --tokens 512,2048,16384 --precisions fp16 --json "$D/gemm16.json" >"$D/gemm16.txt" 2>&1
$B/gemm_candidates --tokens 512,2048 --precisions fp32 --json "$D/gemm32.json" >"$D/gemm32.txt" 2>&1
elapsed gemm
$B/conv_candidates --json "$D/conv.json" >"$D/conv.txt" 2>&1
elapsed conv
ncu_run() {
  local name=$1 count=$2 marker=$3
  shift 3
  ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --page raw \
    --print-units base --print-kernel-base function --launch-count "$count" --log-file "$D/$name.csv" \
    "$@" --benchmark_min_time=0.01 --benchmark_repetitions=1 >"$D/$name.out" 2>&1
  python3 tools/gpu-host/ncu_breakdown.py "$D/$name.csv" --marker "$marker" --top 18 \
    --json "$D/$name.json" >"$D/$name.txt" 2>&1
}
ncu_run f16b2 700 patch_embed $B/bench_forward --precision=fp16 '--benchmark_filter=image:256/batch:2/'
ncu_run f16b64 700 patch_embed $B/bench_forward --precision=fp16 '--benchmark_filter=image:256/batch:64/'
ncu_run f16s512 700 patch_embed $B/bench_forward --precision=fp16 '--benchmark_filter=image:512/batch:2/'
ncu_run f32b2 700 patch_embed $B/bench_forward --precision=fp32 '--benchmark_filter=image:256/batch:2/'
ncu_run vae16 600 vae_softmax $B/bench_vae --precision=fp16 --benchmark_filter=image:256
ncu_run vae32 600 vae_softmax $B/bench_vae --precision=fp32 --benchmark_filter=image:256
elapsed ncu
$B/dit_profile --precision fp16 --out "$D/profile16.json" >"$D/profile16.txt" 2>&1
T0=$(date +%s.%N)
$B/bench_e2e '--benchmark_filter=^BM_E2E_Image/256' --steps=10 --benchmark_out="$D/e2e10.json" >"$D/e2e10.txt" 2>&1
echo "one bench_e2e process (fp32, 10 steps): $(python3 -c "import time; print(round(time.time() - $T0, 2))") s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$D/smi.txt" 2>&1
pack
cut -c1-100 "$D/f16b2.txt" "$D/f32b2.txt" "$D/vae16.txt"
grep -h "convolutions of one" "$D/conv.txt"
grep -h "load\|one image" "$D/profile16.txt" | head -3
elapsed total
