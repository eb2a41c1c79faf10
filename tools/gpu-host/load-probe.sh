#!/bin/bash
# Where a benchmark process's time goes, on the GPU host: what the performance gate's processes
# and the model load spend, beside bench_cold_start's figures. Usage (the lease's `probe` stage):
#   tools/gpu-host/load-probe.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/processes.tsv (per bench_e2e process of a lane's objective: min_time, timed
# images, timed and wall seconds) and OUT_DIR/phases-*.json (dit-sample --phase-times: as run, under
# CUDA_MODULE_LOADING=EAGER, without the VAE and with the tiny one), with each run's log.
set -uo pipefail
build=${1:?build dir} out=${2:?out dir}
mkdir -p "$out"
status=0
now() { date +%s.%N; }
printf 'lane_gate_set\tmin_time\trun\ttimed_images\ttimed_seconds\twall_seconds\n' >"$out/processes.tsv"
for set in fp16-session session; do
  for min_time in 0.3 0.1; do
    for run in 1 2; do
      dir=$out/bench-$set-$min_time-$run
      mkdir -p "$dir/outputs"
      start=$(now)
      "$build/bench/bench_e2e" --benchmark_filter='^BM_E2E_Image/256' --gate-set=$set \
        --benchmark_min_time=$min_time --request-seed=$((1000 + run)) --outputs-dir="$dir/outputs" \
        --benchmark_out="$dir/benchmark.json" --benchmark_out_format=json >"$dir/log.txt" 2>&1 || status=1
      wall=$(python3 -c "print($(now) - $start)")
      python3 - "$dir/benchmark.json" "$set" "$min_time" "$run" "$wall" >>"$out/processes.tsv" <<'PY' || status=1
import json, sys
path, gate_set, min_time, run, wall = sys.argv[1:]
entries = [b for b in json.load(open(path))["benchmarks"] if b.get("run_type") == "iteration"]
timed = sum(b["real_time"] * b["iterations"] for b in entries) / 1000.0
images = sum(b["iterations"] for b in entries)
print(f"{gate_set}\t{min_time}\t{run}\t{images}\t{timed:.3f}\t{float(wall):.3f}")
PY
      rm -rf "$dir/outputs"
    done
  done
done
cat "$out/processes.tsv"
# dit-sample's load phases: as run (lazy module loading, the SD VAE), with every module loaded at
# context creation (CUDA_MODULE_LOADING=EAGER), and without the VAE or with the tiny one (what the
# VAE's load adds to the critical path).
for mode in lazy eager vae-none vae-tiny; do
  for run in 1 2; do
    prefix=() vae=sd
    [ "$mode" = eager ] && prefix=(env CUDA_MODULE_LOADING=EAGER)
    [ "$mode" = vae-none ] && vae=none
    [ "$mode" = vae-tiny ] && vae=tiny
    "${prefix[@]}" "$build/model/cli/dit-sample" --backend cuda --random-weights --precision fp16 --steps 1 \
      --vae $vae --class 207 --seed 1 --out "$out/sample" --phase-times "$out/phases-$mode-$run.json" \
      >"$out/sample-$mode-$run.log" 2>&1 || status=1
    echo "$mode $run: $(cat "$out/phases-$mode-$run.json" 2>/dev/null)"
  done
done
rm -rf "$out/sample"
exit $status
