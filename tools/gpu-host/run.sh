#!/bin/bash
# Builds and tests an a5500 build on a GPU host that has no package registry, from a checkout
# where ../shared/gpu-host/stage-deps.sh has filled .deps/. Logs, JUnit and benchmark JSON go
# to $OUT (default: ./gpu-host-out). Stages, in order, any of:
#   build     configure + build the a5500 preset
#   baseline  record the quality baseline of every gate set (dit-quality baseline) into
#             build/a5500/quality-baseline, so that no gate skips
#   test      ctest --preset a5500 (DIT_REQUIRE_GPU=1) against that baseline, JUnit in
#             $OUT/ctest-a5500.xml
#   perf      ctest --preset a5500-perf, benchmark JSON under $OUT/bench
#   sbs       bench/side_by_side.sh: the engine against PyTorch eager / compile / graphs
#   profile   bench/dit_profile: per-phase times of one DiT-XL/2 case
#   figures   the headline figures, fp16: one forward pass (DiT-XL/2 256 batch 2/8/64, 512
#             batch 2), VAE decode at 256 and 512, one whole image at 256 (DDPM 250, guidance,
#             decode); JSON under $OUT/figures
# Usage: tools/gpu-host/run.sh build baseline test [perf] [sbs] [profile]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-host-out}"
mkdir -p "$OUT"
. .deps/env.sh
export CCACHE_DISABLE=1
build=build/a5500
export DIT_BASELINE_DIR="$PWD/$build/quality-baseline"
status=0
for stage in "$@"; do
  start=$(date +%s)
  case "$stage" in
    build)
      { cmake --preset a5500 && cmake --build --preset a5500 -j "$(nproc)"; } >"$OUT/build.log" 2>&1 \
        || { tail -60 "$OUT/build.log"; exit 1; }
      ;;
    baseline)
      "$build/quality/dit-quality" baseline --gate-sets "$build/quality/gate-sets.json" \
        --baseline-dir "$DIT_BASELINE_DIR" >"$OUT/baseline.log" 2>&1 || { tail -30 "$OUT/baseline.log"; status=1; }
      ;;
    test)
      ctest --preset a5500 -j 4 --output-junit "$OUT/ctest-a5500.xml" >"$OUT/ctest-a5500.log" 2>&1 || status=1
      grep -E "tests passed|tests failed|Skipped|\*\*\*Failed|Failed  |Timeout|Not Run" "$OUT/ctest-a5500.log" | tail -40
      ;;
    perf)
      DIT_OUTPUT_DIR="$OUT" ctest --preset a5500-perf --output-junit "$OUT/ctest-perf.xml" >"$OUT/ctest-perf.log" 2>&1 || status=1
      tail -15 "$OUT/ctest-perf.log"
      ;;
    sbs)
      bash bench/side_by_side.sh "$build" "$OUT/side-by-side" >"$OUT/side-by-side.log" 2>&1 || status=1
      tail -25 "$OUT/side-by-side.log"
      ;;
    figures)
      mkdir -p "$OUT/figures"
      "$build/bench/bench_forward" --precision=fp16 --benchmark_repetitions=5 \
        --benchmark_out="$OUT/figures/bench_forward.json" >"$OUT/figures/bench_forward.txt" 2>&1 || status=1
      "$build/bench/bench_vae" --benchmark_repetitions=5 \
        --benchmark_out="$OUT/figures/bench_vae.json" >"$OUT/figures/bench_vae.txt" 2>&1 || status=1
      "$build/bench/bench_e2e" --precision=fp16 --benchmark_filter='^BM_E2E_Image/256' \
        --benchmark_out="$OUT/figures/bench_e2e_fp16.json" >"$OUT/figures/bench_e2e_fp16.txt" 2>&1 || status=1
      grep -hE "_median|_p95" "$OUT"/figures/*.txt | cut -c1-110
      ;;
    profile)
      "$build/bench/dit_profile" --out "$OUT/profile.json" >"$OUT/profile.txt" 2>&1 || status=1
      tail -30 "$OUT/profile.txt"
      ;;
    *) echo "unknown stage: $stage"; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - start )) s"
done
exit $status
