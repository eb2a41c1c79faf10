#!/bin/bash
# Runs one unattended dit-ar research session from prepared experiments, then packs what it
# decided into a few files. Meant for a GPU host that gets the working tree without .git
# (`. .deps/env.sh` restores the history from .bundle/), but runs on any checkout.
#
# Usage: tools/gpu-host/research-session.sh --tag TAG --experiments DIR
#          [--lane LANE] [--from REV] [--out DIR] [--dit-ar PATH] [--config PATH]
#          [--max-experiments N] [--until TIME] [--stop-file PATH] [--require-trailer NAME]
#        tools/gpu-host/research-session.sh --check-only --experiments DIR [--lane LANE] [--from REV]
#          [--require-trailer NAME]
#   --lane         objective lane of config/autoresearch.json (default a5500-e2e-256)
#   --from         the commit the session branch starts from (default HEAD)
#   --experiments  a folder of `git format-patch` files, each NN-name.patch with its
#                  NN-name.json {"classification": ..., "description": ...}, taken in name
#                  order; or, when DIR/experiments.json exists, that list of
#                  {"patch": FILE, "classification": ..., "description": ...} in its order
#   --out          where the packed results go (default ./session-out, or $OUT)
#   --dit-ar       the driver binary (default: <lane build_dir>/driver/dit-ar, built if absent)
#   --workers N    judge through `dit-ar work` instead of one `dit-ar experiment` at a time:
#                  every experiment (at most --max-experiments) is queued as a patch on the
#                  best (`dit-ar queue add --patch`), then `dit-ar work --workers N` judges the
#                  queue, each worker in its own worktree and on its own GPU of --gpus LIST
#                  (default 0, the first GPU; `none` on a CPU lane)
#   Budgets, each checked between experiments (a running one always finishes and is recorded):
#   --max-experiments N   stop after N experiments were judged
#   --until TIME          start no experiment at or after TIME (anything `date -d` reads:
#                         "2026-12-02 09:30", "+45 minutes")
#   --stop-file PATH      stop once PATH exists (default OUT/STOP: `touch` it to end the session)
#   --require-trailer NAME  the end's audit also requires each kept commit's message to carry the
#                  trailer NAME (A5500-effect: a campaign's kept changes state their expected effect);
#                  a patch whose message lacks it is refused before anything runs (exit 2)
#   --check-only   check the folder (metadata, trailers, the lane, whether each patch applies on
#                  --from) and exit: 0, or 2 naming the problem; nothing is created
#
# Steps: branch autoresearch/TAG from --from (HEAD), dit-ar doctor, init --lane, baseline; per
# experiment: apply it as one commit on top of the best, dit-ar experiment; then summary,
# summary --json and report. An experiment's decision (exit 0 KEEP, 3 DISCARD-QUALITY or
# DISCARD-PERFORMANCE, 4 CRASH, 5 REJECTED) or a patch that does not apply is recorded and the
# session goes on; a setup error (exit 2), an internal error of the driver (exit 1) or a failed
# baseline stops it (one refused for its A/A noise alone is measured once more first).
#
# $OUT receives: results.tsv, summary.txt, summary.json, report.html, audit.txt (dit-ar audit of
# the start..best range: every kept engine commit with its record), session.bundle (git bundle of
# the session branch, refs/autoresearch/* and the driver's notes: the kept commits with their
# KEEP notes, to fetch into another clone), state-logs.tar.gz (the
# state directory's records, queue and runs/ logs, build trees left out), timing.tsv (wall seconds per
# experiment, from its commit to the driver's decision, per driver stage, and the driver's own time between
# the stages with its steps) and session.log.
# Exit: 0 when every step ran (whatever the decisions), 2 on a setup error, 1 when the
# baseline failed or the driver ended with an internal error.
set -uo pipefail

die() { echo "research-session: $*" >&2; exit 2; }

lane=a5500-e2e-256
tag=""
experiments=""
out="${OUT:-}"
dit_ar="${DIT_AR:-}"
config=config/autoresearch.json
from=HEAD
max_experiments=""
workers=""
gpus=0
until_text=""
stop_file=""
trailers=()
trailer_names=()
check_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --max-experiments) max_experiments="$2"; shift 2 ;;
    --until) until_text="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --gpus) gpus="$2"; shift 2 ;;
    --stop-file) stop_file="$2"; shift 2 ;;
    --require-trailer) trailers+=(--require-trailer "$2"); trailer_names+=("$2"); shift 2 ;;
    --check-only) check_only=1; shift ;;
    --lane) lane="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --experiments) experiments="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dit-ar) dit_ar="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
[ -n "$tag" ] || [ -n "$check_only" ] || die "--tag is required"
[ -n "$experiments" ] || die "--experiments is required"
if [ -n "$max_experiments" ]; then
  [[ $max_experiments =~ ^[1-9][0-9]*$ ]] || die "--max-experiments must be a positive integer, not '$max_experiments'"
fi
if [ -n "$workers" ]; then
  [[ $workers =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive integer, not '$workers'"
fi
until_epoch=""
if [ -n "$until_text" ]; then
  until_epoch=$(date -d "$until_text" +%s 2>/dev/null) || die "--until: date cannot read '$until_text'"
fi
folder=$(cd "$experiments" 2>/dev/null && pwd) || die "no experiments folder: $experiments"
experiments=$folder

# The experiment list: lines of patch<TAB>classification<TAB>description.
cleanup() { rm -rf "$list" "${message:-}" "${scratch:-}" "${tool_dir:-}"; }
trap cleanup EXIT
list=$(mktemp)
python3 - "$experiments" >"$list" <<'EOF' || die "bad experiment metadata in $experiments"
import json, os, sys
folder = sys.argv[1]
index = os.path.join(folder, "experiments.json")
if os.path.exists(index):
    entries = json.load(open(index))
else:
    entries = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".patch"):
            meta = os.path.join(folder, name[:-len(".patch")] + ".json")
            if not os.path.exists(meta):
                sys.exit("%s has no %s" % (name, os.path.basename(meta)))
            entry = json.load(open(meta))
            entry["patch"] = name
            entries.append(entry)
if not entries:
    sys.exit("no experiments in " + folder)
for entry in entries:
    for key in ("patch", "classification", "description"):
        if not str(entry.get(key, "")).strip():
            sys.exit("experiment %r lacks %s" % (entry.get("patch"), key))
    patch = os.path.join(folder, entry["patch"])
    if not os.path.isfile(patch):
        sys.exit("no patch file " + patch)
    clean = lambda s: " ".join(str(s).split())
    print("\t".join([patch, clean(entry["classification"]), clean(entry["description"])]))
EOF

# Each trailer --require-trailer names, in each patch's message as git reads trailers (lines of
# the message's last paragraph, a long one continued on lines that begin with whitespace): a kept
# commit without it fails the end's audit after its GPU time was spent (2026-12-07: a trailer
# wrapped onto an unindented second line), so such a queue is refused before anything runs.
if [ ${#trailer_names[@]} -gt 0 ]; then
  message=$(mktemp)
  while IFS=$'\t' read -r patch _; do
    git mailinfo "$message" /dev/null <"$patch" >/dev/null 2>&1 ||
      die "$patch is not a git format-patch file (git mailinfo cannot read it)"
    for name in "${trailer_names[@]}"; do
      # (mailinfo leaves the subject out; git reads a message's first paragraph as its subject)
      { printf 'subject\n\n'; cat "$message"; } | git interpret-trailers --parse |
        awk -v key="$name:" 'index($0, key) == 1 && substr($0, length(key) + 1) ~ /[^ \t]/ { found = 1 } END { exit !found }' &&
        continue
      hint="it has no line '$name: ...'"
      grep -q "^$name:" "$message" &&
        hint="its line '$name: ...' is not read as a trailer: it must sit in the message's last paragraph, a long one continued only on lines that begin with a space"
      die "${patch##*/}: the message lacks the trailer '$name: ...' that --require-trailer asks of every kept commit ($hint)"
    done
  done <"$list"
fi

cd "$(dirname "$0")/../.."
root=$PWD

# The lane's build directory and presets, and the state directory, from the config.
read -r state_dir build_dir configure_preset build_preset < <(python3 - "$config" "$lane" <<'EOF'
import json, sys
config = json.load(open(sys.argv[1]))
lane = config["lanes"].get(sys.argv[2])
if lane is None:
    sys.exit("no lane %r in %s (lanes: %s)" % (sys.argv[2], sys.argv[1], ", ".join(config["lanes"])))
print(config.get("state_dir", ".autoresearch"), lane["build_dir"], lane["configure_preset"],
      lane.get("build_preset", lane["configure_preset"]))  # as dit-ar reads it
EOF
) || die "cannot read lane $lane from $config"

# --check-only (what tools/gpu-host/lease.sh checks before a lease starts): the folder's metadata
# and trailers and the lane, as above, then whether each patch applies on --from; nothing is
# created. A patch made on an earlier experiment applies only once that one is kept: reported,
# not refused.
if [ -n "$check_only" ]; then
  if git rev-parse -q --verify "$from^{commit}" >/dev/null 2>&1; then
    start_commit=$(git rev-parse --short "$from^{commit}")
    scratch=$(mktemp -d)
    GIT_INDEX_FILE=$scratch/index git read-tree "$start_commit" || die "cannot read the tree of $from"
    while IFS=$'\t' read -r patch _; do
      if GIT_INDEX_FILE=$scratch/index git apply --cached --check "$patch" 2>/dev/null; then
        echo "${patch##*/}: applies on $start_commit"
      else
        echo "${patch##*/}: does not apply on $start_commit (it may on top of an earlier experiment, once that one is kept)"
      fi
    done <"$list"
  else
    echo "no git history here: whether the patches apply is left to the session"
  fi
  echo "research-session: $(wc -l <"$list") experiment(s) in $experiments checked for lane $lane"
  exit 0
fi

out="${out:-$root/session-out}"
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
log="$out/session.log"
: >"$log"
stop_file="${stop_file:-$out/STOP}"
rm -f "$out/STOP"
say() { echo "$*" | tee -a "$log"; }

if [ -f .deps/env.sh ]; then . .deps/env.sh >>"$log" 2>&1; fi
git rev-parse -q --verify HEAD >/dev/null 2>&1 || die "no git history here (stage .bundle/ with stage-history.sh)"
git config user.email >/dev/null 2>&1 || export GIT_AUTHOR_EMAIL=research-session@localhost GIT_COMMITTER_EMAIL=research-session@localhost
git config user.name >/dev/null 2>&1 || export GIT_AUTHOR_NAME=research-session GIT_COMMITTER_NAME=research-session

# A results folder inside the tree must not make it dirty for the driver.
case "$out/" in
  "$root"/*) rel="${out#"$root"/}"; grep -qxF "/$rel/" .git/info/exclude 2>/dev/null || echo "/$rel/" >>.git/info/exclude ;;
esac


# The driver, copied out of the build tree so that the session's own builds cannot replace it
# under it.
if [ -z "$dit_ar" ]; then
  dit_ar="$build_dir/driver/dit-ar"
  if [ ! -x "$dit_ar" ]; then
    say "building dit-ar ($configure_preset)"
    { cmake --preset "$configure_preset" && cmake --build --preset "$build_preset" --target dit-ar -j "$(nproc)"; } \
      >>"$log" 2>&1 || die "building dit-ar failed; see $log"
  fi
fi
[ -x "$dit_ar" ] || die "no driver binary at $dit_ar"
tool_dir=$(mktemp -d)
cp "$dit_ar" "$tool_dir/dit-ar"
ar() { "$tool_dir/dit-ar" "$@" --config "$config"; }

timing="$out/timing.tsv"
printf 'step\tname\tcommit\tstatus\texit_code\tapply_s\tdriver_s\ttotal_s\tstages\town_s\tphases\n' >"$timing"

# The driver's stage lines ("  build                 ok    12.3 s") as name=seconds;... (a
# preset skipped after a failed quality gate as name=skipped)
stages_of() {
  # (Drivers before 2026-12-01 left no space after a name of 22 characters or more.)
  sed -nE -e 's/^  ([a-z][a-zA-Z0-9 _.:(),-]*[a-zA-Z0-9)]) *(ok|FAILED) +([0-9.]+) s.*/\1=\3/p' \
    -e 's/^  (tests \([^)]*\)) *skipped.*/\1=skipped/p' "$1" | tr ' ' '_' | paste -sd';' -
}
# The driver's own time in a run, from its runs/<id>/progress.jsonl (the run folder the step log
# names): own_s, the command's time to its decision less its stages', then TAB and each step of
# its own as name=seconds since the event before it: "started" (the command's checks before the
# run), then its "phase" events; "-<TAB>-" without a record.
own_of() {
  local run
  run=$(sed -n 's/^run_dir: //p' "$1" | tail -n 1)
  python3 - "$state_dir/$run/progress.jsonl" <<'PY' 2>/dev/null || printf -- '-\t-'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
decided = [e["elapsed_s"] for e in events if e["event"] == "decision"]
staged = sum(e.get("seconds", 0) for e in events if e["event"] == "stage_finished")
phases, before = ["started=%.2f" % events[0]["elapsed_s"]], 0.0
for event in events:
    if event["event"] == "phase":
        phases.append("%s=%.2f" % (event["phase"].replace(" ", "_"), event["elapsed_s"] - before))
    before = event["elapsed_s"]
print("%.1f\t%s" % (decided[-1] - staged, ";".join(phases) or "-"), end="")
PY
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
last_status() { tail -n 1 "$state_dir/results.tsv" 2>/dev/null | cut -f6; }

# Runs one driver step with its output in the log; sets rc, seconds and step_log.
run_step() {
  local name="$1"; shift
  step_log="$out/.step.log"
  local start
  start=$(date +%s.%N)
  ar "$@" >"$step_log" 2>&1
  rc=$?
  seconds=$(since "$start")
  { echo "=== dit-ar $* (exit $rc, $seconds s)"; cat "$step_log"; } >>"$log"
  tail -n 8 "$step_log"
  say "$name: exit $rc, $seconds s"
}

branch="autoresearch/$tag"
git rev-parse -q --verify "refs/heads/$branch" >/dev/null && die "branch $branch exists; pick another --tag"
git switch -q -c "$branch" "$from" || die "cannot create branch $branch at $from"
first_commit=$(git rev-parse HEAD)
say "session $branch from $(git log -1 --format='%h %s'), lane $lane, $(wc -l <"$list") experiments"

run_step doctor doctor
[ $rc -eq 0 ] || die "dit-ar doctor failed (exit $rc); see $log"
run_step init init --lane "$lane"
[ $rc -eq 0 ] || die "dit-ar init failed (exit $rc); see $log"
baseline_step() {  # NAME: dit-ar baseline, its row in timing.tsv as step 0
  run_step "$1" baseline
  printf '0\t%s\t%s\t%s\t%s\t0\t%.1f\t%.1f\t%s\t%s\n' "$1" "$(git rev-parse --short HEAD)" \
    "$([ $rc -eq 0 ] && echo KEEP || echo FAILED)" "$rc" "$seconds" "$seconds" "$(stages_of "$step_log")" \
    "$(own_of "$step_log")" >>"$timing"
}
baseline_step baseline
# A baseline refused for its A/A noise alone (the driver records a CRASH row, no best, and its
# result block says `refused_for: noise`) is measured once more: on a machine just started, its
# first timed work has been the noisy one (an H100, 2026-12-07: 8.52%, then 0.44% on the same
# machine), and an unattended session would otherwise end there.
if [ $rc -eq 4 ] && grep -qx 'refused_for: noise' "$step_log"; then
  say "the baseline's A/A noise was above the lane's cap: measuring it once more"
  baseline_step baseline-again
fi
[ $rc -eq 2 ] && die "dit-ar baseline refused (exit 2); see $log"
session_status=0
if [ $rc -ne 0 ]; then
  say "the unmodified code fails the baseline (exit $rc): no experiment can be judged"
  session_status=1
fi

# Why the session ends before the next experiment: a budget spent or the stop file (empty: go on).
budget_stop() {
  if [ -n "$max_experiments" ] && [ "$judged" -ge "$max_experiments" ]; then
    echo "--max-experiments $max_experiments reached"
  elif [ -n "$until_epoch" ] && [ "$(date +%s)" -ge "$until_epoch" ]; then
    echo "--until $until_text reached"
  elif [ -e "$stop_file" ]; then
    echo "stop file $stop_file exists"
  fi
}

step=0
judged=0
stopped=""
queued=0
while [ $session_status -eq 0 ] && [ -n "$workers" ] && IFS=$'\t' read -r -u 3 patch classification description; do
  # Queued, not yet judged: the budgets bound what is queued, and dit-ar work judges it all.
  if [ -n "$max_experiments" ] && [ "$queued" -ge "$max_experiments" ]; then
    stopped="--max-experiments $max_experiments reached"
    say "stopped before $(basename "$patch" .patch): $stopped"
    break
  fi
  name=$(basename "$patch" .patch)
  run_step "queue $name" queue add --patch "$patch" --classification "$classification" --description "$description"
  if [ $rc -ne 0 ]; then
    say "dit-ar queue add refused $name (exit $rc); see $log"
    continue
  fi
  queued=$((queued + 1))
done 3<"$list"
if [ $session_status -eq 0 ] && [ -n "$workers" ] && [ "$queued" -gt 0 ]; then
  before_rows=$(wc -l <"$state_dir/results.tsv")
  run_step work work --workers "$workers" --gpus "$gpus"
  # One row per decision dit-ar work recorded (its stages are in its run folder's worker.json and logs).
  tail -n +"$((before_rows + 1))" "$state_dir/results.tsv" |
    awk -F'\t' -v OFS='\t' -v first="$step" -v rc="$rc" \
      '{ print first + NR, $15, substr($2, 1, 7), $6, rc, "-", "-", "-", "work:" $16, "-", "-" }' >>"$timing"
  judged=$(( $(wc -l <"$state_dir/results.tsv") - before_rows ))
  [ $rc -eq 0 ] || { say "dit-ar work ended with exit $rc; see $log"; session_status=$([ $rc -eq 2 ] && echo 2 || echo 1); }
fi
while [ $session_status -eq 0 ] && [ -z "$workers" ] && IFS=$'\t' read -r -u 3 patch classification description; do
  stopped=$(budget_stop)
  if [ -n "$stopped" ]; then
    say "stopped before $(basename "$patch" .patch): $stopped"
    break
  fi
  step=$((step + 1))
  name=$(basename "$patch" .patch)
  start=$(date +%s.%N)
  before=$(git rev-parse HEAD)
  if git am -q -3 "$patch" >>"$log" 2>&1; then
    # A patch of several commits is one hypothesis: squash it into one commit.
    if [ "$(git rev-list --count "$before..HEAD")" -ne 1 ]; then
      git reset -q --soft "$before" && git commit -q -m "$description"
    fi
  else
    git am --abort >>"$log" 2>&1
    say "$name: does not apply on $(git rev-parse --short HEAD); skipped"
    printf '%d\t%s\t-\tNOT-APPLIED\t-\t-\t-\t-\t-\t-\t-\n' "$step" "$name" >>"$timing"
    continue
  fi
  commit=$(git rev-parse --short HEAD)
  applied=$(since "$start")
  say "$name: $commit $(git log -1 --format=%s) [$classification]"
  run_step "$name" experiment --classification "$classification" --description "$description"
  total=$(since "$start")
  # dit-ar's exit codes (README.md): a decision is recorded for 0, 3, 4 and 5 only.
  case $rc in
    0 | 3 | 4 | 5) judged=$((judged + 1)); status=$(last_status) ;;
    2) status=REFUSED ;;
    *) status=ERROR ;;
  esac
  printf '%d\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\t%s\t%s\n' "$step" "$name" "$commit" "$status" "$rc" \
    "$applied" "$seconds" "$total" "$(stages_of "$step_log")" "$(own_of "$step_log")" >>"$timing"
  if [ $rc -eq 2 ]; then
    say "dit-ar experiment refused $name (exit 2): a setup error, the session stops; see $log"
    session_status=2
  elif [ "$status" = ERROR ]; then
    say "dit-ar experiment ended $name with exit $rc (an internal error): the session stops; see $log"
    session_status=1
  fi
done 3<"$list"

# Pack whatever was recorded, also after a stop.
[ -f "$state_dir/results.tsv" ] && cp "$state_dir/results.tsv" "$out/results.tsv"
ar summary --limit 0 >"$out/summary.txt" 2>>"$log" || say "dit-ar summary failed"
ar summary --limit 0 --json >"$out/summary.json" 2>>"$log" || say "dit-ar summary --json failed"
ar report --out "$out/report.html" >>"$log" 2>&1 || say "dit-ar report failed"
# Every engine commit between the start and the best is a KEEP with its record (dit-ar audit): a
# failure here is the driver's own fault.
if git rev-parse -q --verify refs/autoresearch/best >/dev/null; then
  ar audit "$first_commit" refs/autoresearch/best --with-state "${trailers[@]}" >"$out/audit.txt" 2>>"$log"
  audit_rc=$?
  if [ $audit_rc -ne 0 ]; then
    say "dit-ar audit of ${first_commit:0:8}..best failed (exit $audit_rc); see $out/audit.txt"
    [ $session_status -eq 0 ] && session_status=1
  fi
fi
# The kept commits and the driver's notes, for another clone that has the session's first commit
# (a thin bundle: what that commit reaches is left out): git fetch session.bundle
# 'refs/*:refs/session/*' 'refs/notes/*:refs/notes/*' (git notes reads notes under refs/notes/).
bundle_refs=("refs/heads/$branch")
while read -r ref; do bundle_refs+=("$ref"); done < <(git for-each-ref --format='%(refname)' refs/autoresearch refs/notes)
git bundle create -q "$out/session.bundle" "${bundle_refs[@]}" "^$first_commit" >>"$log" 2>&1 ||
  say "git bundle of the session failed"
records=()
for f in session.json best.json results.tsv environment.json queue.json runs; do
  [ -e "$state_dir/$f" ] && records+=("$f")
done
tar -czf "$out/state-logs.tar.gz" -C "$state_dir" --exclude='*.safetensors' --exclude='*.bin' \
  --exclude='*.npy' "${records[@]}" || say "packing $state_dir failed"
rm -f "$out/.step.log"
cat "$out/summary.txt"
[ -n "$stopped" ] && say "the session stopped early: $stopped ($judged judged)"
say "results in $out: $(cd "$out" && ls | tr '\n' ' ')"
exit $session_status
