#!/bin/bash
# tools/gpu-host/research-session.sh on the driver's fixture project (tests/driver/fixture, whose
# engine sleeps the time src/plans.txt says, so every decision is the fixture's, not the
# machine's), with its budgets:
#   1. three prepared experiments and --max-experiments 2: the first two are judged (a faster
#      plan: KEEP, a slower one: DISCARD-PERFORMANCE), the third never starts, the log says why,
#      the results hold the baseline and two rows, timing.tsv their exit codes (0, 3), audit.txt
#      the kept one with its record and the trailer --require-trailer asks for, and
#      session.bundle gives another clone the kept commit with its KEEP note;
#   2. an --until already past: no experiment starts, and the log says why (a stop file is
#      checked at the same point; left out here to keep the test at two sessions of the fixture);
#      a baseline refused for its A/A noise (a lane whose cap is 0%) is measured once more, and
#      with the second refused too the session ends (exit 1), both in timing.tsv;
#   3. a budget that is not one (--max-experiments 0, an --until date cannot read, --workers 0):
#      exit 2 before anything runs;
#   4. --workers 1 --gpus none: the experiments are queued as patches on the best and dit-ar work
#      judges them: the first (made on the baseline) is KEEP, the two made on top of it do not
#      apply to the baseline and are refused at queue time; timing.tsv has the decision's row;
#      the end's audit finds the kept commit with the trailer --require-trailer asks for;
#   5. --require-trailer NAME that a patch lacks, or wraps onto an unindented second line (git
#      then reads no trailer): exit 2 before anything runs, naming the patch and why;
#   6. --check-only: the folder checked (each patch applies on main, or is named as not), exit 0
#      with nothing created, exit 2 for a missing trailer or an unknown lane; and lease.sh, whose
#      start runs the same check first: a folder it refuses leaves the lease unstarted; its wait
#      packs every stage's output into at most the host's eight files, stages.tsv among them.
# Usage: research_session_test.sh DIT_AR PERF_GATE FIXTURE SCRIPT
set -uo pipefail
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
SCRIPT=$4
. "$(dirname "$0")/../driver/e2e_common.sh"
e2e_setup research-session

# A session repository: the fixture with the script under test where it looks for its tree.
new_repo() {
  REPO=$WORK/$1
  STATE=$REPO/.autoresearch
  mkdir -p "$REPO"
  e2e_fixture_repo
  mkdir -p "$REPO/tools/gpu-host"
  cp "$SCRIPT" "$REPO/tools/gpu-host/research-session.sh"
  commit_change "the research-session script"
}

# Three experiments as format-patch files with their metadata: a plan of 20 ms on the fixture's 30,
# then 40 ms and 10 ms, each on top of the first (the best once it is kept).
experiments=$WORK/experiments
mkdir -p "$experiments"
new_repo patches
n=0
for plan in 20 40 10; do
  n=$((n + 1))
  if [ "$plan" = 20 ]; then git_ switch -q -c "plan-$plan" main; else git_ switch -q -c "plan-$plan" plan-20; fi
  set_plan "$plan"
  git_ add -A && git_ commit -q -m "plan of $plan ms" -m "A5500-effect: $plan ms an image"
  git_ format-patch -q -1 --stdout >"$experiments/0$n-plan-$plan.patch"
  printf '{"classification": "exact", "description": "plan of %s ms"}\n' "$plan" >"$experiments/0$n-plan-$plan.json"
done
git_ switch -q main

session() {  # session NAME ARGS...: the script in REPO; output in $LOGS/NAME.out, exit code in $RC
  local name=$1
  shift
  LAST=$LOGS/$name.out
  (cd "$REPO" && bash tools/gpu-host/research-session.sh --lane fixture --experiments "$experiments" \
     --dit-ar "$DIT_AR" "$@") >"$LAST" 2>&1
  RC=$?
  echo "research-session $* -> exit $RC"
}

step "--max-experiments 2 of three: two judged, the third never started"
new_repo budget
session budget --tag budget --out "$WORK/out-budget" --max-experiments 2 --require-trailer A5500-effect
expect_rc 0
expect_text "stopped before 03-plan-10: --max-experiments 2 reached"
expect_text "the session stopped early: --max-experiments 2 reached (2 judged)"
[ "$(rows)" -eq 3 ] || fail "results.tsv has $(rows) rows, not the baseline and two experiments"
[ "$(row_field 2 status)" = KEEP ] || fail "row 2 is $(row_field 2 status), not KEEP"
[ "$(row_field 2 commit)" = "$(git_ rev-parse refs/autoresearch/best)" ] || fail "the best is not row 2's commit"
[ "$(row_field 3 status)" = DISCARD-PERFORMANCE ] || fail "row 3 is $(row_field 3 status), not DISCARD-PERFORMANCE"
grep -q "plan-10" "$WORK/out-budget/timing.tsv" && fail "timing.tsv has a row for the experiment that never started"
codes=$(awk -F'\t' 'NR > 2 { printf "%s=%s ", $4, $5 }' "$WORK/out-budget/timing.tsv")
[ "$codes" = "KEEP=0 DISCARD-PERFORMANCE=3 " ] || fail "timing.tsv's statuses and exit codes are '$codes'"
# Every experiment's row has the driver's own time (a number, at least 0) and its phases, read from
# the run folder's progress.jsonl.
awk -F'\t' 'NR > 2 && !($10 ~ /^[0-9]+\.[0-9]$/ && $11 ~ /^started=.*judge_build_checked=.*candidate_tree_exported=/) \
  { print; bad = 1 } END { exit bad }' "$WORK/out-budget/timing.tsv" ||
  fail "timing.tsv's own_s and phases columns are not the driver's own time and steps"
# The audit of start..best: the kept experiment with its record, nothing failed.
grep -q "1 kept by the loop, 0 exempt, 0 outside the mutable paths, 0 failed" "$WORK/out-budget/audit.txt" ||
  fail "audit.txt does not show the one kept experiment: $(head -3 "$WORK/out-budget/audit.txt")"
# The bundle carries the branch, the best and the KEEP note into a clone that has the session's
# first commit (main) and none of them; it leaves out what that commit reaches.
clone=$WORK/bundle-clone
git init -q "$clone" && git -C "$clone" fetch -q "$REPO" main &&
  git -C "$clone" fetch -q "$WORK/out-budget/session.bundle" 'refs/*:refs/session/*' 'refs/notes/*:refs/notes/*' ||
  fail "session.bundle cannot be fetched: $(git bundle list-heads "$WORK/out-budget/session.bundle" 2>&1)"
kept=$(git_ rev-parse refs/autoresearch/best)
[ "$(git -C "$clone" rev-parse refs/session/autoresearch/best)" = "$kept" ] || fail "the bundle's best is not the kept commit"
git -C "$clone" rev-parse -q --verify refs/session/heads/autoresearch/budget >/dev/null || fail "the bundle lacks the branch"
git -C "$clone" notes --ref=autoresearch show "$kept" >/dev/null 2>&1 ||
  fail "the bundle lacks the KEEP note of $kept"
git bundle list-heads "$WORK/out-budget/session.bundle" >/dev/null &&
  git -C "$clone" bundle verify "$WORK/out-budget/session.bundle" 2>&1 | grep -q "requires this ref" ||
  fail "the bundle is not thin: it does not require the session's first commit"

step "an --until already past: nothing started"
new_repo until
session until --tag until --out "$WORK/out-until" --until "1 minute ago" --stop-file "$WORK/no-such-file"
expect_rc 0
expect_text "stopped before 01-plan-20: --until 1 minute ago reached"
[ "$(rows)" -eq 1 ] || fail "results.tsv has $(rows) rows, not the baseline's alone"

step "a baseline refused for its A/A noise: measured once more, then the session ends"
# A lane whose cap on the minimum improvement is 0%: any noise of the fixture's sleeps refuses
# the baseline, both times.
new_repo noisy
sed -i -e 's/"min_improvement_percent": [0-9.]*/"min_improvement_percent": 0/' \
  -e 's/"max_min_improvement_percent": [0-9.]*/"max_min_improvement_percent": 0/' "$REPO/config/autoresearch.json"
commit_change "a lane no A/A noise fits"
session noisy --tag noisy --out "$WORK/out-noisy"
expect_rc 1
expect_text "the baseline's A/A noise was above the lane's cap: measuring it once more"
expect_text "the unmodified code fails the baseline (exit 4)"
baselines=$(awk -F'\t' 'NR > 1 { printf "%s:%s=%s ", $2, $4, $5 }' "$WORK/out-noisy/timing.tsv")
[ "$baselines" = "baseline:FAILED=4 baseline-again:FAILED=4 " ] ||
  fail "timing.tsv's rows are '$baselines', not two refused baselines"
[ "$(rows)" -eq 2 ] || fail "results.tsv has $(rows) rows, not the two refused baselines"
[ "$(row_field 1 status)/$(row_field 2 status)" = CRASH/CRASH ] ||
  fail "the baselines' rows are $(row_field 1 status)/$(row_field 2 status), not CRASH/CRASH"
[ -z "$(best_sha)" ] || fail "a refused baseline left a best: $(best_sha)"

step "a budget that is not one: exit 2 before anything runs"
for bad in "--workers 0" "--max-experiments 0" "--max-experiments two" "--until not-a-date"; do
  # shellcheck disable=SC2086
  session bad --tag bad --out "$WORK/out-bad" $bad
  expect_rc 2
  [ -e "$WORK/out-bad" ] && fail "$bad: the script created its output folder"
  git_ rev-parse -q --verify refs/heads/autoresearch/bad >/dev/null && fail "$bad: the script created the branch"
done
expect_text "--until: date cannot read 'not-a-date'"

step "--workers 1: queued as patches, judged by dit-ar work"
new_repo work
session work --tag work --out "$WORK/out-work" --workers 1 --gpus none --require-trailer A5500-effect
expect_rc 0
grep -q "1 kept by the loop, 0 exempt, 0 outside the mutable paths, 0 failed" "$WORK/out-work/audit.txt" ||
  fail "audit.txt does not show the one kept experiment: $(cat "$WORK/out-work/audit.txt")"
expect_text "dit-ar queue add refused 02-plan-40"
[ "$(rows)" -eq 2 ] || fail "results.tsv has $(rows) rows, not the baseline and the one queued experiment"
[ "$(row_field 2 status)" = KEEP ] || fail "row 2 is $(row_field 2 status), not KEEP"
work_rows=$(awk -F'\t' 'NR > 2 && $9 ~ /^work:runs\// { printf "%s=%s ", $4, $5 }' "$WORK/out-work/timing.tsv")
[ "$work_rows" = "KEEP=0 " ] || fail "timing.tsv's rows of dit-ar work are '$work_rows'"
packed=$(tar -tzf "$WORK/out-work/state-logs.tar.gz" 2>&1 | grep -v "^runs/." | tr '\n' ' ')
case " $packed " in *" queue.json "*) ;; *) fail "state-logs.tar.gz lacks queue.json: $packed" ;; esac

step "a required trailer a patch lacks, or wraps: exit 2 before anything runs"
new_repo trailers
session trailers --tag trailers --out "$WORK/out-trailers" --require-trailer No-such-trailer
expect_rc 2
expect_text "01-plan-20.patch: the message lacks the trailer 'No-such-trailer: ...'"
expect_text "it has no line 'No-such-trailer: ...'"
# The same plan with its trailer wrapped as a paragraph's second line is not one to git.
wrapped=$WORK/experiments-wrapped
mkdir -p "$wrapped"
cp "$experiments/01-plan-20.json" "$wrapped/"
sed '/^A5500-effect: 20 ms an image$/{s/$/, and/;a\
more on a second line
}' "$experiments/01-plan-20.patch" >"$wrapped/01-plan-20.patch"
grep -q "^more on a second line" "$wrapped/01-plan-20.patch" || fail "the wrapped copy of the patch was not made"
(cd "$REPO" && bash tools/gpu-host/research-session.sh --lane fixture --experiments "$wrapped" --dit-ar "$DIT_AR" \
   --tag trailers --out "$WORK/out-trailers" --require-trailer A5500-effect) >"$LOGS/wrapped.out" 2>&1
RC=$?
LAST=$LOGS/wrapped.out
expect_rc 2
expect_text "its line 'A5500-effect: ...' is not read as a trailer"
[ -e "$WORK/out-trailers" ] && fail "a refused session created its output folder"
git_ rev-parse -q --verify refs/heads/autoresearch/trailers >/dev/null && fail "a refused session created its branch"

step "--check-only, and lease.sh start refusing what it refuses"
new_repo check
session check --check-only --require-trailer A5500-effect
expect_rc 0
expect_line "01-plan-20.patch: applies on $(git_ rev-parse --short HEAD)"
# 02 and 03 were made on top of 01: not applicable on main until 01 is kept.
expect_text "02-plan-40.patch: does not apply on $(git_ rev-parse --short HEAD) (it may on top of an earlier experiment"
expect_text "3 experiment(s) in $experiments checked for lane fixture"
git_ rev-parse -q --verify refs/heads/autoresearch/check >/dev/null && fail "--check-only created a branch"
[ -e "$REPO/session-out" ] && fail "--check-only created an output folder"
[ -z "$(git_ status --porcelain)" ] || fail "--check-only changed the checkout: $(git_ status --porcelain)"
session check-trailer --check-only --require-trailer No-such-trailer
expect_rc 2
expect_text "lacks the trailer 'No-such-trailer: ...'"
session check-lane --check-only --lane no-such-lane
expect_rc 2
expect_text "no lane 'no-such-lane'"
cp "$(dirname "$SCRIPT")/lease.sh" "$REPO/tools/gpu-host/lease.sh"
mkdir -p "$REPO/queue" && cp "$experiments"/* "$REPO/queue/"
lease() {  # lease NAME ARGS...: lease.sh in REPO
  LAST=$LOGS/lease-$1.out
  shift
  (cd "$REPO" && bash tools/gpu-host/lease.sh "$@") >"$LAST" 2>&1
  RC=$?
}
lease check check --stages build,session --session-lane fixture:queue --require-trailer A5500-effect
expect_rc 0
expect_text "3 experiment(s) in $REPO/queue checked for lane fixture"
lease start start --stages build,session --session-lane fixture:queue --require-trailer No-such-trailer
expect_rc 2
expect_text "lease: not started"
[ -e "$REPO/.lease" ] && fail "a refused lease created its work folder"
lease nosession check --stages build,figures --session-lane fixture:no-such-folder
expect_rc 0
# wait packs at most the host's eight files however many stages left output, stages.tsv always
# among them, the calibration's data inside logs.tgz.
mkdir -p "$REPO/.lease" && (cd "$REPO/.lease" && mkdir -p logs calibration figures side-by-side session-out &&
  touch logs/build.log calibration/contract.json figures/f.json side-by-side/t.md session-out/s.log \
    ctest-a5500.xml ctest-a5500.log lease.log stages.tsv ./done)
OUT=$WORK/packed lease pack wait 1
expect_rc 0
packed=$(find "$WORK/packed" -type f | wc -l)
[ "$packed" -le 8 ] || fail "wait packed $packed files, more than the host returns"
[ -f "$WORK/packed/stages.tsv" ] || fail "wait left stages.tsv out"
tar -tzf "$WORK/packed/logs.tgz" | grep -qx "calibration/contract.json" || fail "logs.tgz lacks the calibration's data"

e2e_finish
