#!/bin/bash
# One unattended GPU-host lease: build, test, measure and run a research session in one
# background sequence, so that the whole of it can outlast the host's per-command limit, and
# follow it from short commands. From the checkout root, after .deps/ and .bundle/ are staged:
#
#   tools/gpu-host/lease.sh start [--stages LIST] [--session-from REV] [--session-lane LANE]
#                                 [--experiments DIR] [--max-experiments N] [--tag TAG]
#                                 [--session-until TIME] [--require-trailer NAME]
#                                 [--hashes-against REV[,REV...]]
#       starts the sequence (setsid) and returns; the work folder is .lease/ (git-ignored), and
#       every stage runs in .lease/tree, a clone of the staged bundle's HEAD: committed work
#       only, out of reach of the host's copy of the tree at each later call
#       only once the check below passes: a folder it refuses leaves the lease unstarted (exit 2)
#   tools/gpu-host/lease.sh check [the options of start]
#       the session stage's folders as research-session.sh --check-only reads them (metadata,
#       --require-trailer, the lane, whether each patch applies on HEAD); exit 0 or 2
#   tools/gpu-host/lease.sh wait SECONDS
#       follows the log for at most SECONDS, then packs what exists into $OUT (at most 8
#       files); exits 0 when the sequence has finished, 3 while it is still running
#
# Stages (default: build,record,test,sbs,session,figures), each timed in .lease/stages.tsv:
#   build     cmake --preset a5500 and a full build
#   calibrate dit-quality-render calibrate of each GPU gate set, all at once (LEASE_CALIBRATE_SETS,
#             default session,fp16-session,bf16-session,fp16,fp16-512,fp16-batch,gpu) with
#             --write-contract: the floors of
#             this GPU into quality/contract.json, the data into quality/calibration/
#             <gpu>-<set>.json, both committed in the host's tree ("lease: calibrated ..."), so
#             the record, test and session stages judge under them; packed in logs.tgz (calibration/)
#   record    dit-quality baseline of every gate set into build/a5500/quality-baseline
#   test      ctest --preset a5500 -j 8 against it (without record: a plain run, which records the
#             baselines itself), JUnit ctest-a5500.xml; record and test first calibrate the sets
#             of LEASE_CALIBRATE_SETS this GPU has no floors for, as the calibrate stage would;
#             before it, as root, install-slurm.sh installs the Slurm and munge packages that
#             stage-slurm.sh staged into .deps/slurm/ (driver_slurm_work), when the host lacks them
#   workflow  cmake --workflow --preset LEASE_WORKFLOW (default a5500-fp16-session-256): a lane's
#             configure, build and test presets as CI would run them; JUnit in logs/workflow/
#   sbs       bench/side_by_side.sh: the engine against PyTorch eager / compile / graphs; at the
#             lease's end bench/speed_targets.py reads it (and figures' e2e) against issue 32's targets
#   figures   bench_forward (fp16: 256 b2 and b64, 512 b2), bench_vae, one fp16 image
#             (bench_e2e), dit_profile (fp16 image; the session
#             lane's fp32 case) and ncu per-kernel times of one fp16 forward and one VAE decode
#             at 256 and 512 (LEASE_FIGURES picks a subset, or adds `kernels`)
#   gtest     chosen GoogleTest cases of the build's test binaries (LEASE_GTEST), JUnit in logs/gtest/
#   probe     tools/gpu-host/load-probe.sh: a perf-gate process's timed images and wall time per
#             objective min_time, and dit-sample's load phases under lazy and eager module loading;
#             logs/probe/
#   session   tools/gpu-host/research-session.sh in a clone (.session/repo, outside the tree the
#             host re-copies at every command) from --session-from (default: HEAD, the
#             calibration's commit when that stage ran), lane --session-lane (a5500-session-256),
#             at most --max-experiments experiments; --session-lane takes a comma list of runs,
#             one after the other, each LANE or LANE@work (through `dit-ar work --workers 1` on
#             GPU 0), optionally followed by :DIR (its own experiments folder instead of
#             --experiments, relative to the checkout root) and :MAX (its own --max-experiments),
#             into session-out/ (one run) or session-out/<n>-<LANE>/; --session-until TIME starts
#             no experiment at or after TIME (`date -d`, read when the lease starts: "+20 minutes")
#             and --require-trailer NAME makes each run's end audit ask kept commits for it; a
#             lane whose gate set has no floors on this GPU is calibrated first (calibrate stage)
#   adopt     the last session run's best (refs/autoresearch/best of .session/repo, with the
#             driver's notes) fetched into .lease/tree, checked out and built there, so that the
#             stages after it (test, sbs, figures) judge the tree the session kept: the commit that
#             lands, not the one the lease started from; logs/adopt.txt names both. Nothing kept:
#             the tree stays as it is (exit 0)
#   oracle    tools/gpu-host/oracle.sh: the checkpoint oracle, both layouts of DiT-XL/2 256 against
#             torch_reference and diffusers (.wheels/ from stage-wheels.sh, carried too); logs/oracle/
#   weights   tools/gpu-host/weights-gate.sh on the oracle's checkpoint: gate set `weights`
#             calibrated and gated, JUnit in logs/weights/ (after oracle; last, since the build
#             keeps the set)
#   hashes    output-hashes.sh of the tree's build and of each --hashes-against REV's (a comma
#             list, each built in a worktree under .lease/), compared by compare-hashes.py: a
#             change of structure only must leave every render and bench_e2e output identical
# A failing stage is logged and the sequence goes on (each stage's outcome is in stages.tsv),
# except build and adopt, which stop it.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$root/.lease

pack() {
  local out=${OUT:-$root/gpu-host-out}
  mkdir -p "$out"
  cp "$work/lease.log" "$work/stages.tsv" "$out/" 2>/dev/null
  [ -f "$work/ctest-a5500.xml" ] && cp "$work/ctest-a5500.xml" "$out/"
  [ -f "$work/ctest-a5500.log" ] && gzip -c "$work/ctest-a5500.log" >"$out/ctest-a5500.log.gz"
  # The session's records first: they hold the kept commits, and a call the host ends while
  # packing must not have spent its last seconds on the figures (2026-12-07: a wait cut short in
  # the tar of a side-by-side run in progress, with its temporary checkpoint of 2.7 GB, brought
  # back no session.tgz). The side-by-side's checkpoints are its inputs, never its results.
  [ -d "$work/session-out" ] && tar -czf "$out/session.tgz" -C "$work" session-out
  [ -d "$work/side-by-side" ] &&
    tar -czf "$out/side-by-side.tgz" --exclude='*.safetensors' -C "$work" side-by-side
  [ -d "$work/figures" ] && tar -czf "$out/figures.tgz" -C "$work" figures
  # The calibration's data travels inside logs.tgz: as a ninth file it pushed stages.tsv past the
  # host's eight when a session stage calibrated beside sbs and figures (2026-12-07).
  local folders=()
  [ -d "$work/logs" ] && folders+=(logs)
  [ -d "$work/calibration" ] && folders+=(calibration)
  [ ${#folders[@]} -eq 0 ] || tar -czf "$out/logs.tgz" -C "$work" "${folders[@]}"
}

# The experiments folder of one --session-lane run, LANE[@work][:DIR[:MAX]]: DIR under the
# checkout root, else --experiments; empty when neither is given.
run_folder() {
  local spec dir
  IFS=: read -r spec dir _ <<<"$1"
  dir=${dir:+$root/$dir}
  echo "${dir:-$experiments}"
}

case "${1:-}" in
  start)
    shift
    # The session stage's folders first (research-session.sh --check-only): a queue the session
    # would refuse is refused here, before the build and the stages ahead of it spend the lease.
    bash "$0" check "$@" || { echo "lease: not started"; exit 2; }
    mkdir -p "$work"
    rm -f "$work/done"
    setsid nohup bash "$0" run "$@" >"$work/lease.log" 2>&1 </dev/null &
    echo "lease: started (process $!), log .lease/lease.log"
    exit 0
    ;;
  wait)
    deadline=$(( $(date +%s) + ${2:-540} ))
    while [ ! -f "$work/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 5; done
    tail -n 25 "$work/lease.log"
    pack
    if [ -f "$work/done" ]; then echo "lease: finished"; exit 0; fi
    echo "lease: still running"
    exit 3
    ;;
  run) shift ;;
  check) shift; check_only=1 ;;
  *) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 2 ;;
esac

stages=build,record,test,sbs,session,figures
session_from=HEAD
session_lane=a5500-session-256
experiments=""
max_experiments=""
session_until=""
require_trailer=""
hashes_against=""
tag=lease
while [ $# -gt 0 ]; do
  case "$1" in
    --stages) stages="$2"; shift 2 ;;
    --session-from) session_from="$2"; shift 2 ;;
    --session-lane) session_lane="$2"; shift 2 ;;
    --experiments) experiments="$2"; shift 2 ;;
    --max-experiments) max_experiments="$2"; shift 2 ;;
    --session-until) session_until="$2"; shift 2 ;;
    --require-trailer) require_trailer="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --hashes-against) hashes_against="$2"; shift 2 ;;
    *) echo "lease: unknown argument $1"; [ -n "${check_only:-}" ] || touch "$work/done"; exit 2 ;;
  esac
done
if [ -n "${check_only:-}" ]; then
  case ",$stages," in *,session,*) ;; *) exit 0 ;; esac
  status=0
  for run in ${session_lane//,/ }; do
    spec=${run%%:*} run_dir=$(run_folder "$run")
    [ -n "$run_dir" ] || { echo "lease: session run $run: no experiments folder (--experiments or :DIR)"; status=2; continue; }
    bash "$root/tools/gpu-host/research-session.sh" --check-only --lane "${spec%@work}" --experiments "$run_dir" \
      ${require_trailer:+--require-trailer "$require_trailer"} || status=2
  done
  exit $status
fi
session_until_epoch=""
if [ -n "$session_until" ]; then
  session_until_epoch=$(date -d "$session_until" +%s) ||
    { echo "lease: --session-until: date cannot read '$session_until'"; touch "$work/done"; exit 2; }
fi

# Everything runs in a clone of the staged bundle's HEAD under .lease/ (git-ignored, so the host
# keeps it between calls), with copies of .deps/ and the bundle there: the host re-copies the
# working tree's tracked files and the carried .deps/ and .bundle/ at every call. In the copy
# itself, the calibration's commit was undone under the test stage (2026-12-02: the contract's
# floors gone, every GPU gate refused), and a library could vanish under a running test.
mkdir -p "$work" && rm -rf "$work/tree" "$work/.deps" "$work/.wheels" "$work/repo.bundle"
[ ! -d "$root/.wheels" ] || cp -r "$root/.wheels" "$work/.wheels"  # the oracle's, when carried
cp -r "$root/.deps" "$work/.deps" && cp "$root/.bundle/repo.bundle" "$work/repo.bundle" \
  && git clone -q "$work/repo.bundle" "$work/tree" \
  || { echo "lease: cannot stage .deps/ and the bundle's clone under .lease/"; touch "$work/done"; exit 2; }
cd "$work" && . .deps/env.sh && cd "$work/tree" || { touch "$work/done"; exit 2; }
# bubblewrap, when tools/gpu-host/stage-sandbox.sh staged it: dit-ar's sandbox.
[ -x "$work/.deps/root/usr/bin/bwrap" ] && export PATH="$work/.deps/root/usr/bin:$PATH"
tree=$PWD
LEASE_CALIBRATE_SETS=${LEASE_CALIBRATE_SETS:-session,fp16-session,bf16-session,fp16,fp16-512,fp16-batch,gpu}
build=build/a5500
baseline=$tree/$build/quality-baseline
mkdir -p "$work/logs"
printf 'stage\tstatus\tseconds\n' >"$work/stages.tsv"
echo "lease: $(git log -1 --format='%h %s' 2>/dev/null) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"

run_stage() {
  local name=$1 start status
  start=$(date +%s)
  echo "== $name ($(date -u +%H:%M:%S))"
  "stage_$name"
  status=$?
  printf '%s\t%s\t%s\n' "$name" "$([ $status -eq 0 ] && echo ok || echo "failed($status)")" \
    "$(( $(date +%s) - start ))" >>"$work/stages.tsv"
  echo "== $name: exit $status, $(( $(date +%s) - start )) s"
  return $status
}

# Configures and builds the a5500 preset of the lease's tree, the output into $1.
build_a5500() {
  { cmake --preset a5500 -G Ninja && CCACHE_DISABLE=1 cmake --build --preset a5500 -j "$(nproc)"; } >"$1" 2>&1 ||
    { tail -40 "$1"; return 1; }
}

stage_build() { build_a5500 "$work/logs/build.log"; }

# The GPU's floors: each set calibrated on this GPU, written into the tree's contract and data
# files and committed there (the session's clone fetches that commit).
calibrated_rev=""
stage_calibrate() {
  local c=$work/calibration set slug status=0
  mkdir -p "$c" quality/calibration
  slug=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
  # The sets at once: a calibration times nothing, and one set's renders leave most of the GPU
  # idle; each --write-contract edits the contract under a lock of its folder.
  local -A pids
  for set in ${LEASE_CALIBRATE_SETS//,/ }; do
    "$build/quality/dit-quality-render" calibrate --gate-sets "$build/quality/gate-sets.json" --set "$set" \
      --out "quality/calibration/$slug-$set.json" --write-contract quality/contract.json \
      --calibration-file "quality/calibration/$slug-$set.json" >"$c/calibrate-$set.log" 2>&1 &
    pids[$set]=$!
  done
  for set in ${LEASE_CALIBRATE_SETS//,/ }; do
    wait "${pids[$set]}" || { status=1; echo "lease: calibration of $set failed"; }
    echo "-- $set"; tail -6 "$c/calibrate-$set.log"
  done
  cp quality/contract.json quality/calibration/*.json "$c/" 2>/dev/null
  git add quality/contract.json quality/calibration && git -c user.name=lease -c user.email=lease@localhost \
    commit -q -m "quality: floors calibrated on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
    && calibrated_rev=$(git rev-parse HEAD) && echo "lease: calibrated floors committed as $calibrated_rev"
  return $status
}

# The gate sets among "$@" that the contract has no floors for on this GPU (their gates would
# refuse: "never been calibrated on this device"), printed comma-separated, empty when none.
sets_without_floors() {
  python3 - "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" "$@" <<'PY'
import json, sys
gpu, sets = sys.argv[1], sys.argv[2:]
floors = json.load(open("quality/contract.json")).get("floors", {}).get(gpu, {})
print(",".join(s for s in sets if s not in floors))
PY
}

# Calibrates the sets among "$@" that this GPU has no floors for, as the calibrate stage would,
# before a stage judges them: record and test over LEASE_CALIBRATE_SETS (on an H100 whose floors
# covered two sets, a test stage failed 23 gates for that alone, 2026-12-05), a session over its
# lanes' sets.
ensure_floors() {
  local missing
  missing=$(sets_without_floors "$@") || return 1
  [ -n "$missing" ] || return 0
  echo "lease: no floors on this GPU for gate sets $missing: calibrating them first"
  LEASE_CALIBRATE_SETS=$missing stage_calibrate
}

stage_record() {
  ensure_floors ${LEASE_CALIBRATE_SETS//,/ } || return 1
  "$build/quality/dit-quality" baseline --gate-sets "$build/quality/gate-sets.json" --baseline-dir "$baseline" \
    >"$work/logs/record.log" 2>&1 || { tail -20 "$work/logs/record.log"; return 1; }
}

# Against the record stage's baselines when it ran; else a plain `ctest --preset a5500`, whose
# setup fixtures record every gate set's baseline first (into .autoresearch/baseline).
stage_test() {
  local with=()
  ensure_floors ${LEASE_CALIBRATE_SETS//,/ } || return 1
  [[ ,$stages, == *,record,* ]] && with=(env "DIT_BASELINE_DIR=$baseline")
  "${with[@]}" ctest --preset a5500 -j 8 --output-junit "$work/ctest-a5500.xml" >"$work/ctest-a5500.log" 2>&1
  local status=$?
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|\*\*\*Skipped" "$work/ctest-a5500.log" | tail -20
  return $status
}

# Slurm and munge for test driver_slurm_work, where tools/gpu-host/stage-slurm.sh staged their
# packages into .deps/slurm/ and the host lacks them: install-slurm.sh (the host's copy, beside this
# script: the tree's clone has only what was committed) installs them into / before the test
# stage, as root, its output in logs/install-slurm.log. A failure is logged and the lease goes on:
# the test then skips, as it does without them.
install_slurm() {
  if [ ! -d "$work/.deps/slurm" ] || [ "$(id -u)" -ne 0 ]; then return 0; fi
  sh "$root/tools/gpu-host/install-slurm.sh" "$work/.deps/slurm" 2>&1 | tee "$work/logs/install-slurm.log"
  local status=${PIPESTATUS[0]}
  [ "$status" -eq 0 ] || echo "lease: install-slurm.sh failed (exit $status); driver_slurm_work will skip or fail"
  return 0
}

# A lane's workflow preset (LEASE_WORKFLOW, default a5500-fp16-session-256), as a CI runner or an
# agent runs it: configure, build and the lane's test presets, its baseline recorded first when
# missing, without a decision; each test preset's JUnit into logs/workflow/.
stage_workflow() {
  local w=$work/logs/workflow status
  rm -rf "$w" "$build/junit"
  mkdir -p "$w"
  cmake --workflow --preset "${LEASE_WORKFLOW:-a5500-fp16-session-256}" >"$w/workflow.log" 2>&1
  status=$?
  cp "$build"/junit/*.xml "$w/" 2>/dev/null
  grep -E "tests passed|tests failed|Skipped|Failed" "$w/workflow.log" | tail -12
  return $status
}

# The checkpoint oracle (bench/checkpoint_oracle.py through tools/gpu-host/oracle.sh): DiT-XL/2 at
# 256 in both layouts at fp32, fp16 and bf16 against torch_reference and diffusers (from the
# staged .wheels/, carried with .deps and .bundle); oracle.json and its log in logs/oracle/. The converted checkpoint stays
# in .lease/checkpoints/ for the weights stage.
stage_oracle() {
  mkdir -p "$work/checkpoints"
  ORACLE_KEEP="$work/checkpoints/dit-xl2-256-oracle.safetensors" ORACLE_WHEELS="$work/.wheels" \
    bash tools/gpu-host/oracle.sh "$build" "$work/oracle-work" "$work/logs/oracle"
  local status=$?
  tail -4 "$work/logs/oracle/oracle.log" 2>/dev/null
  return $status
}

# Gate set `weights` on the oracle's checkpoint (tools/gpu-host/weights-gate.sh): its floors
# calibrated on this GPU, then its render, baseline and gates, JUnit in logs/weights/. The build
# keeps the set afterwards, so run it after test and session.
stage_weights() {
  bash tools/gpu-host/weights-gate.sh "$build" "$work/checkpoints/dit-xl2-256-oracle.safetensors" "$work/logs/weights"
}

stage_sbs() {
  PYTHONUNBUFFERED=1 bash bench/side_by_side.sh "$build" "$work/side-by-side" >"$work/logs/side-by-side.log" 2>&1
  local status=$?
  tail -12 "$work/logs/side-by-side.log"
  return $status
}

# The parts of `figures` to run: LEASE_FIGURES, a comma list of forward, vae, e2e, profile,
# ncu-forward, ncu-vae (default: all of them), ncu-forward64 (not in the default: ncu-forward's
# per-kernel times at 256 batch 64, the throughput lane's shape), ncu-residual64 (not in the
# default: Nsight Compute's throughput, memory, occupancy, scheduler and warp-state sections of
# four residual launches at 256 batch 64), ncu-attention64 (the same of two flash attention
# launches), ncu-attention512 (the same of two flash attention launches at 512 batch 2, T = 1024,
# where the flash kernel is compute-bound on the A5500 too), ncu-cudnn512 (the same of cuDNN's
# fused attention at that shape, the first launches of tests/deps/cudnn_sdpa_test's case), cold
# (bench_cold_start: the model load's phases), kernels (not in the default: bench_kernels on
# every flash attention form and the residual LayerNorm, fp16, 3 repetitions, about 2 minutes)
# and gemm-plan64 (not in the default: bench/gemm_plan over the first 64 heuristic candidates of
# each shape instead of 16, its plan written to figures/gemm-plan-64.json, not into the tree).
stage_figures() {
  local f=$work/figures status=0 parts=",${LEASE_FIGURES:-forward,vae,e2e,profile,ncu-forward,ncu-vae},"
  mkdir -p "$f"
  want() { [[ $parts == *",$1,"* ]]; }
  if want forward; then
    "$build/bench/bench_forward" --precision=fp16 '--benchmark_filter=^BM_Forward/image:(256/batch:(2|64)|512/batch:2)/' \
      --benchmark_repetitions=5 --benchmark_out="$f/bench_forward.json" >"$f/bench_forward.txt" 2>&1 || status=1
  fi
  if want kernels; then
    "$build/bench/bench_kernels" '--benchmark_filter=^(attention_form|residual_layernorm_modulate)/.*fp16' \
      --benchmark_min_time=0.05s --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      --benchmark_out="$f/bench_kernels.json" >"$f/bench_kernels.txt" 2>&1 || status=1
  fi
  if want gemm-plan64; then
    "$build/bench/gemm_plan" --candidates 64 --out "$f/gemm-plan-64.json" >"$f/gemm-plan-64.txt" 2>&1 || status=1
  fi
  if want cold; then
    # The model load: spawn to the first sampling step, with its phases (one step, so the rest
    # of the image costs little), for the seeded random default and for a safetensors file
    # (LEASE_COLD_WEIGHTS, else torch_reference's random DiT-XL/2 weights saved at fp32;
    # LEASE_COLD_FILE=0: the random default only).
    "$build/bench/bench_cold_start" --steps=1 --benchmark_repetitions=3 \
      --benchmark_out="$f/bench_cold_start.json" >"$f/bench_cold_start.txt" 2>&1 || status=1
    local cold_weights=${LEASE_COLD_WEIGHTS:-$work/checkpoints/cold-xl2-256-fp32.safetensors}
    if [ "${LEASE_COLD_FILE:-1}" = 0 ]; then
      :  # the random default only
    elif [ ! -f "$cold_weights" ]; then
      mkdir -p "$(dirname "$cold_weights")"
      python3 -c 'import sys; sys.path.insert(0, "bench"); import torch_reference as t, safetensors.torch as s
s.save_file({k: v.contiguous() for k, v in t.random_xl2_weights("cuda").items()}, sys.argv[1])' "$cold_weights" \
        >"$f/cold-weights.log" 2>&1 || status=1
    fi
    if [ "${LEASE_COLD_FILE:-1}" != 0 ]; then
      "$build/bench/bench_cold_start" --steps=1 --weights="$cold_weights" --benchmark_repetitions=3 \
        --benchmark_out="$f/bench_cold_start_file.json" >"$f/bench_cold_start_file.txt" 2>&1 || status=1
    fi
  fi
  if want vae; then
    "$build/bench/bench_vae" --benchmark_repetitions=5 --benchmark_out="$f/bench_vae.json" >"$f/bench_vae.txt" 2>&1 \
      || status=1
  fi
  if want e2e; then
    "$build/bench/bench_e2e" --precision=fp16 '--benchmark_filter=^BM_E2E_Image/256' --benchmark_repetitions=3 \
      --benchmark_out="$f/bench_e2e_fp16.json" >"$f/bench_e2e_fp16.txt" 2>&1 || status=1
  fi
  if want profile; then
    "$build/bench/dit_profile" --precision fp16 --out "$f/dit_profile_fp16.json" >"$f/dit_profile_fp16.txt" 2>&1 \
      || status=1
    "$build/bench/dit_profile" --gate-set session --out "$f/dit_profile_session_fp32.json" \
      >"$f/dit_profile_session_fp32.txt" 2>&1 || status=1
  fi
  local ncu_common=(--clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --page raw
                    --print-units base --print-kernel-base function)
  local batch part
  for batch in 2 64; do
    part=ncu-forward
    [ "$batch" = 2 ] || part=ncu-forward$batch
    want "$part" || continue
    ncu "${ncu_common[@]}" --launch-count 700 --log-file "$f/ncu_f16b$batch.csv" "$build/bench/bench_forward" \
      --precision=fp16 "--benchmark_filter=image:256/batch:$batch/" --benchmark_min_time=0.01 \
      --benchmark_repetitions=1 >"$f/ncu_f16b$batch.out" 2>&1 || status=1
    python3 tools/gpu-host/ncu_breakdown.py "$f/ncu_f16b$batch.csv" --marker patch_embed \
      --json "$f/ncu_f16b$batch.json" >"$f/ncu_f16b$batch.txt" 2>&1 || status=1
  done
  # Nsight Compute's sections of COUNT launches of the kernels REGEX matches, after SKIP of them,
  # in COMMAND: what bounds them (throughput, memory, occupancy, and the schedulers' issue and
  # warp stalls), read by ncu_sections.py into NAME.txt and NAME.json.
  ncu_details() {  # NAME REGEX SKIP COUNT COMMAND...
    local name=$1 regex=$2 skip=$3 count=$4
    shift 4
    ncu --clock-control none --cache-control none -k "regex:$regex" --launch-skip "$skip" --launch-count "$count" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section SchedulerStats --section WarpStateStats \
      --print-units base --csv --page details --log-file "$f/$name.csv" "$@" >"$f/$name.out" 2>&1 || status=1
    python3 tools/gpu-host/ncu_sections.py "$f/$name.csv" --json "$f/$name.json" >"$f/$name.txt" 2>&1 || status=1
  }
  # The same in an fp16 forward of SHAPE (a bench_forward filter, 256 batch 64 by default), after
  # SKIP launches (the first forward pass's).
  ncu_sections() {  # NAME REGEX SKIP COUNT [SHAPE]
    ncu_details "$1" "$2" "$3" "$4" "$build/bench/bench_forward" --precision=fp16 \
      "--benchmark_filter=${5:-image:256/batch:64/}" --benchmark_min_time=0.01 --benchmark_repetitions=1
  }
  # Four residual launches (two after attention, two pairs after the MLP), after the first pass's 55.
  if want ncu-residual64; then ncu_sections ncu_residual64 residual_layernorm 55 4; fi
  # Two flash attention launches, after the first pass's 28.
  if want ncu-attention64; then ncu_sections ncu_attention64 attention_flash 28 2; fi
  if want ncu-attention512; then ncu_sections ncu_attention512 attention_flash 28 2 image:512/batch:2/; fi
  # cuDNN's fused attention at that shape on the engine's packed qkv layout (tests/deps/
  # cudnn_sdpa_test's case, fp16): its first launches, eager and replayed from the CUDA graph.
  if want ncu-cudnn512; then
    ncu_details ncu_cudnn512 . 0 4 "$build/tests/deps/cudnn_sdpa_test" '--gtest_filter=*/b2_t1024_h16_d72_fp16'
  fi
  if want ncu-vae; then
    local size
    for size in 256 512; do
      ncu "${ncu_common[@]}" --launch-count 600 --log-file "$f/ncu_vae16_$size.csv" "$build/bench/bench_vae" \
        --precision=fp16 --benchmark_filter=image:$size --benchmark_min_time=0.01 --benchmark_repetitions=1 \
        >"$f/ncu_vae16_$size.out" 2>&1 || status=1
      python3 tools/gpu-host/ncu_breakdown.py "$f/ncu_vae16_$size.csv" --marker vae_softmax \
        --json "$f/ncu_vae16_$size.json" >"$f/ncu_vae16_$size.txt" 2>&1 || status=1
    done
  fi
  rm -f "$f"/ncu_f16b*.csv "$f"/ncu_vae16_*.csv  # the raw per-launch logs; their breakdowns stay
  grep -hE "_median|_p95" "$f"/*.txt | cut -c1-120
  head -4 "$f"/ncu_*.txt 2>/dev/null
  return $status
}

# The gate sets the session's lanes record baselines of (config/autoresearch.json), one a line.
lane_gate_sets() {
  python3 - "$@" <<'PY'
import json, sys
config = json.load(open("config/autoresearch.json"))
seen = []
for name in sys.argv[1:]:
    lane = config["lanes"].get(name, {})
    if not lane.get("gpu", True):  # a CPU lane's floors are the contract's "cpu" ones
        continue
    for command in lane.get("record_baseline_commands", []):
        gate_set = command[command.index("--set") + 1] if "--set" in command else None
        if gate_set and gate_set not in seen:
            seen.append(gate_set)
print("\n".join(seen))
PY
}

stage_session() {
  local runs=(${session_lane//,/ }) n=0 status=0 run spec run_lane run_dir run_max out_dir lanes=() sets
  # A GPU the contract has no floors for (an H100 where only the H200 was calibrated): calibrate
  # the lanes' sets first (a few tens of seconds), as the calibrate stage would, so the sessions
  # start from that commit instead of being refused at their baselines.
  for run in "${runs[@]}"; do spec=${run%%:*}; lanes+=("${spec%@work}"); done
  sets=$(lane_gate_sets "${lanes[@]}") || return 1
  ensure_floors $sets || return 1
  for run in "${runs[@]}"; do
    n=$((n + 1))
    IFS=: read -r spec _ run_max <<<"$run"
    run_lane=${spec%@work}
    run_dir=$(run_folder "$run")
    [ -n "$run_dir" ] || { echo "session run $run: no experiments folder (--experiments or :DIR)"; status=2; continue; }
    out_dir=$work/session-out
    [ ${#runs[@]} -gt 1 ] && out_dir=$work/session-out/$n-${spec/@/-}
    echo "-- session run $n of ${#runs[@]}: $run ($(date -u +%H:%M:%S))"
    session_run "$run_lane" "$out_dir" "$([ "$spec" != "$run_lane" ] && echo 1)" "$run_dir" "${run_max:-$max_experiments}" ||
      status=1
  done
  return $status
}

# One research session: lane $1 into $2, through dit-ar work with $3 workers when $3 is set, the
# experiments of folder $4, at most $5 of them when $5 is set.
session_run() {
  local clone=$root/.session/repo
  rm -rf "$root/.session"
  mkdir -p "$root/.session"
  # From the staged bundle: the host's own copy of the tree may carry a .git of another commit.
  git clone -q "$work/repo.bundle" "$clone" || return 1
  cp -r "$work/.deps" "$clone/.deps"
  git -C "$clone" config user.email research-session@localhost
  git -C "$clone" config user.name research-session
  # Each run clones afresh, so each fetches the calibration's commit into its own clone: a run
  # after the first could not start from it otherwise (2026-12-07: "reference is not a tree").
  local from start=$session_from
  if [ -n "$calibrated_rev" ] && [ "$session_from" = HEAD ]; then
    git -C "$clone" fetch -q "$tree" "$calibrated_rev" && start=$calibrated_rev
  fi
  from=$(git -C "$clone" rev-parse "$start") || return 1
  cp "$build/driver/dit-ar" "$root/.session/dit-ar"
  (cd "$clone" && bash tools/gpu-host/research-session.sh --tag "$tag" --from "$from" --lane "$1" \
      --experiments "$4" --out "$2" --dit-ar "$root/.session/dit-ar" ${5:+--max-experiments "$5"} \
      ${session_until_epoch:+--until "@$session_until_epoch"} ${require_trailer:+--require-trailer "$require_trailer"} \
      ${3:+--workers "$3" --gpus 0})
}

# The session's kept commits as the tree of the later stages: fetched with the driver's notes
# (refs/notes/autoresearch), checked out detached, and the a5500 build brought up to date.
stage_adopt() {
  local clone=$root/.session/repo best before
  before=$(git rev-parse HEAD)
  best=$(git -C "$clone" rev-parse -q --verify refs/autoresearch/best 2>/dev/null) ||
    { echo "adopt: no session best in $clone (did the session stage run?)"; return 1; }
  { echo "lease tree: $(git log -1 --format='%h %s')"; echo "session best: $(git -C "$clone" log -1 --format='%h %s' "$best")"; } \
    | tee "$work/logs/adopt.txt"
  if [ "$best" = "$before" ] || git merge-base --is-ancestor "$best" "$before" 2>/dev/null; then
    echo "adopt: the session kept nothing past the lease's tree; the tree stays" | tee -a "$work/logs/adopt.txt"
    return 0
  fi
  git fetch -q "$clone" "$best" 'refs/notes/*:refs/notes/*' && git checkout -q --detach "$best" ||
    { echo "adopt: cannot check out $best"; return 1; }
  git log --format='%h %s' "$before..HEAD" | sed 's/^/adopted: /' | tee -a "$work/logs/adopt.txt"
  build_a5500 "$work/logs/adopt-build.log"
}

# Chosen GoogleTest cases of the build's test binaries, without the rest of their suites:
# LEASE_GTEST, a space-separated list of BINARY:FILTER (BINARY relative to the build folder),
# each run with --gtest_output into logs/gtest/<binary name>.xml (JUnit).
stage_probe() {
  bash tools/gpu-host/load-probe.sh "$build" "$work/logs/probe"
}

stage_gtest() {
  local g=$work/logs/gtest status=0 item binary filter
  mkdir -p "$g"
  [ -n "${LEASE_GTEST:-}" ] || { echo "no LEASE_GTEST"; return 2; }
  for item in $LEASE_GTEST; do
    binary=${item%%:*} filter=${item#*:}
    DIT_REQUIRE_GPU=1 "$build/$binary" --gtest_filter="$filter" --gtest_output="xml:$g/$(basename "$binary").xml" \
      >"$g/$(basename "$binary").log" 2>&1 || status=1
    grep -E "^\[  (PASSED|FAILED) |tests? ran" "$g/$(basename "$binary").log" | tail -4
  done
  return $status
}

stage_hashes() {
  [ -n "$hashes_against" ] || { echo "no --hashes-against"; return 2; }
  local h=$work/logs/hashes status=0 rev before
  rm -rf "$h" "$work/before" "$work/hash-runs"
  git worktree prune
  mkdir -p "$h"
  git log -1 --format='after: %h %s' | tee "$h/sides.txt"
  bash tools/gpu-host/output-hashes.sh "$build" "$h/after.tsv" "$work/hash-runs/after" || return 1
  for rev in ${hashes_against//,/ }; do
    before=$work/before/$rev
    git worktree add -q --detach "$before" "$rev" || return 1
    git -C "$before" log -1 --format="before: %h %s" | tee -a "$h/sides.txt"
    # output-hashes.sh renders with dit-quality-render where the build has one: build it in
    # trees that define it (older ones render through dit-quality itself).
    (cd "$before" && cmake --preset a5500 -G Ninja && targets=(dit-quality bench_e2e) \
      && { ! cmake --build --preset a5500 --target help | grep -q '^dit-quality-render:' || targets+=(dit-quality-render); } \
      && CCACHE_DISABLE=1 cmake --build --preset a5500 -j "$(nproc)" --target "${targets[@]}") \
      >"$h/build-$rev.log" 2>&1 || { tail -30 "$h/build-$rev.log"; return 1; }
    bash tools/gpu-host/output-hashes.sh "$before/build/a5500" "$h/$rev.tsv" "$work/hash-runs/$rev" || return 1
    python3 tools/gpu-host/compare-hashes.py "$h/$rev.tsv" "$h/after.tsv" | tee "$h/compare-$rev.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
  return $status
}

IFS=',' read -r -a wanted <<<"$stages"
for stage in "${wanted[@]}"; do
  [ "$stage" != test ] || install_slurm
  run_stage "$stage"
  status=$?
  # Without a build, or a build of the session's best, what follows would judge another tree.
  if [ $status -ne 0 ] && { [ "$stage" = build ] || [ "$stage" = adopt ]; }; then break; fi
done
# Issue 32's speed targets, when this lease ran the side by side (with the one image when the
# figures' e2e part ran too): met, not met, or no verdict off the targets' GPU.
if [ -f "$work/side-by-side/torch_reference.json" ]; then
  e2e=()
  [ ! -f "$work/figures/bench_e2e_fp16.json" ] || e2e=(--e2e "$work/figures/bench_e2e_fp16.json")
  python3 "$tree/bench/speed_targets.py" "$work/side-by-side/torch_reference.json" "${e2e[@]}" \
    >"$work/side-by-side/speed-targets.txt" 2>&1
  cat "$work/side-by-side/speed-targets.txt"
fi
touch "$work/done"
echo "lease: done"
