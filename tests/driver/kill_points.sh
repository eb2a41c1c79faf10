#!/bin/bash
# Fault injection by SIGKILL: dit-ar is killed (kill -9) at many points spread over every stage
# of the baseline and of experiments on the fixture project (tests/driver/fixture), each kill
# followed by a rerun of the same command, which the next point may kill again; the last rerun
# of each chain runs to its decision. The points are found by watching from outside: a point
# is a file of the run's folder (a stage's log, the judge's instructions, run.json) and a delay
# after it appears, or a delay after the start.
# After every kill it asserts that
#   - every process of the killed driver ends within 1 s: each run of dit-ar carries its own
#     marker variable (KILL_POINT_MARK, inherited by everything it starts, sandboxed or not),
#     looked for in /proc/*/environ;
#   - results.tsv holds whole rows of 16 fields, none lost or duplicated (the rows before, or
#     those and the run's own when the kill came after it was written), and `dit-ar status` and
#     `summary` read the records;
#   - the repository is on the session's branch, HEAD is the commit or the best, the worktree
#     is clean (but right after a kill in the branch's reset after a discard: the rerun
#     finishes the reset); a git lock the kill left (git held it at that instant) is gone after
#     the next run, and none is left after a chain's last run;
#   - the killed run's folder, when the run was not decided, is sealed by the rerun (runs/<id>
#     a read-only file, the folder runs/<id>.interrupted with interrupted.json, its files
#     read-only) and nothing in it changes afterwards (compared at the end of the test).
# Every fourth point reruns at once, without waiting for the killed driver's processes: the
# rerun must wait for them (the lock), never report another driver. Each chain ends with the
# decision it expects (a faster commit that the performance gate, on a loaded machine, did not
# find faster is reported, not failed), recorded once, refs and branch as the decision says; a
# final experiment without faults decides normally. Chains alternate DIT_AR_SANDBOX on and off (bubblewrap, where
# it works, and none). At least 50 kills must land.
# Usage: kill_points.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
# DIT_AR_E2E_NO_CLEANUP=1 keeps the temporary repository (its path is printed).
set -u
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
# shellcheck source=e2e_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_common.sh"
e2e_setup kill-points
BRANCH=autoresearch/kill-points
MARK=kp$$
ATTEMPT=0
POINTS=0
LEFT_LOCKS=""
KILLS=0
SNAPSHOTS=$WORK/snapshots
mkdir -p "$SNAPSHOTS"
SLOWEST_CLEANUP_MS=0
PENDING_TAG=

# ---- Processes
# marked TAG: the live processes whose environment holds KILL_POINT_MARK=TAG exactly.
marked() { grep -slzxF -- "KILL_POINT_MARK=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr '\n' ' '; }
# any_marked: those of any run of this test, and any process whose command line names WORK.
any_marked() {
  { grep -slzF -- "KILL_POINT_MARK=$MARK-" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; pgrep -f -- "$WORK"; } |
    sort -un | tr '\n' ' '
}
kill_marked() { for pid in $(any_marked); do kill -9 "$pid" 2>/dev/null; done; }
e2e_on_exit() { kill_marked; }
# expect_gone TAG WHAT: every process of run TAG ends within a second (its stages' supervisors
# end them within milliseconds; a stage left running, a build or the performance gate, runs on
# for seconds).
expect_gone() {
  local start left ms
  start=$(date +%s%N)
  while :; do
    left=$(marked "$1")
    ms=$((($(date +%s%N) - start) / 1000000))
    [ -z "$left" ] || [ "$ms" -ge 1000 ] && break
    sleep 0.01
  done
  [ "$ms" -gt "$SLOWEST_CLEANUP_MS" ] && SLOWEST_CLEANUP_MS=$ms
  if [ -n "$left" ]; then
    fail "$2: processes of the killed driver still alive after $ms ms:
$(ps -o pid,ppid,pgid,stat,comm,args -p "$(echo "$left" | tr ' ' ',' | sed 's/,$//')" 2>&1)"
    for pid in $left; do kill -9 "$pid" 2>/dev/null; done
  fi
}

# ---- Runs
# start_run NAME ARGS...: dit-ar ARGS in the background (DRIVER), with its own marker (TAG).
start_run() {
  ATTEMPT=$((ATTEMPT + 1))
  TAG=$MARK-$ATTEMPT
  LAST=$LOGS/$ATTEMPT-$1.out
  shift
  (cd "$REPO" && exec env "KILL_POINT_MARK=$TAG" "DIT_AR_SANDBOX=$SANDBOX" "$DIT_AR" "$@") >"$LAST" 2>&1 &
  DRIVER=$!
}
# next_run_dir: the folder the next run of HEAD gets (numbered after every entry of runs/).
next_run_dir() {
  local highest=0 entry number
  for entry in "$STATE"/runs/*; do
    [ -e "$entry" ] || continue
    number=$(basename "$entry")
    number=$((10#${number%%-*}))
    [ "$number" -gt "$highest" ] && highest=$number
  done
  printf '%s/runs/%04d-%s' "$STATE" $((highest + 1)) "$(head_sha | cut -c1-8)"
}
# marker_present MARKER: a file of the run's folder, or "start".
marker_present() { [ "$1" = start ] || [ -e "$RUN_DIR/$1" ]; }
# await_marker MARKER: waits until it is there (0) or the driver ended first (1).
await_marker() {
  local deadline=$((SECONDS + 180))
  until marker_present "$1"; do
    kill -0 "$DRIVER" 2>/dev/null || return 1
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.01
  done
}
decided_run() { awk -F'\t' -v dir="runs/$(basename "$1")" 'NR > 1 && $16 == dir { found = 1 } END { exit !found }' "$STATE/results.tsv" 2>/dev/null; }

# ---- Consistency
check_results() {  # check_results WHAT LOW HIGH: whole rows, no duplicate run, LOW..HIGH rows
  local file=$STATE/results.tsv
  if [ -f "$file" ]; then
    [ -z "$(tail -c 1 "$file")" ] || fail "$1: results.tsv ends in a torn line"
    awk -F'\t' 'NF != 16 { bad = 1 } END { exit bad }' "$file" || fail "$1: a results.tsv line has not 16 fields"
    [ -z "$(awk -F'\t' 'NR > 1 { print $16 }' "$file" | sort | uniq -d)" ] || fail "$1: a run has two rows"
  fi
  [ "$(rows)" -ge "$2" ] && [ "$(rows)" -le "$3" ] || fail "$1: $(rows) rows in results.tsv, expected $2..$3"
  (cd "$REPO" && "$DIT_AR" status) >"$LOGS/status.out" 2>&1 || fail "$1: dit-ar status cannot read the records: $(cat "$LOGS/status.out")"
  if [ "$(rows)" -gt 0 ]; then
    (cd "$REPO" && "$DIT_AR" summary) >"$LOGS/summary.out" 2>&1 || fail "$1: dit-ar summary cannot read the records: $(cat "$LOGS/summary.out")"
  fi
}
# check_repository WHAT COMMIT BEST: on the branch, HEAD the commit or the best, the worktree
# clean (but while a decision is being recorded: a kill in the branch's reset leaves that to
# the rerun, which finishes the recording first); a git lock the kill left is noted for
# check_left_locks.
check_repository() {
  [ "$(git_ symbolic-ref -q HEAD)" = "refs/heads/$BRANCH" ] || fail "$1: the branch is not $BRANCH"
  [ "$(head_sha)" = "$2" ] || [ "$(head_sha)" = "$3" ] || fail "$1: HEAD $(head_sha) is neither the commit nor the best"
  if ! grep -qs '"phase": "recording"' "$STATE/inflight.json"; then
    [ -z "$(git_ status --porcelain)" ] || fail "$1: the worktree is not clean: $(git_ status --porcelain | head -3)"
  elif [ -n "$(git_ status --porcelain)" ]; then
    echo "$1: the kill came in the branch's reset (the rerun finishes it)"
  fi
  # A kill -9 can land while git holds a lock (the checks of the checkout refresh the index,
  # the recording moves refs); the driver's next start must remove it (remove_stale_git_locks):
  # each lock left is noted with its mtime, and check_left_locks fails if the next run kept it.
  local lock
  LEFT_LOCKS=""
  while IFS= read -r lock; do
    [ -n "$lock" ] || continue
    echo "$1: the kill left $lock (the next run must remove it)"
    LEFT_LOCKS="$LEFT_LOCKS $lock@$(stat -c %Y.%i "$lock")"
  done < <(find "$REPO/.git" -name '*.lock' 2>/dev/null)
}
check_left_locks() {  # check_left_locks WHAT: after the run that followed a kill
  local entry
  for entry in $LEFT_LOCKS; do
    [ "$(stat -c %Y.%i "${entry%@*}" 2>/dev/null)" != "${entry##*@}" ] ||
      fail "$1: the stale git lock ${entry%@*} was not removed by the next run"
  done
  LEFT_LOCKS=""
}
snapshot() { (cd "$1" && find . -type f ! -path ./interrupted.json -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); }

# ---- Kill points
# kill_point SPEC: SPEC is MARKER@SECONDS; a trailing "!" reruns at once. Runs the chain's
# command, kills it SECONDS after MARKER appears and checks. Returns 1 when the driver ended
# by itself first (the chain's command is then done).
kill_point() {
  local spec=${1%!} at_once=
  [ "$spec" != "$1" ] && at_once=1
  local marker=${spec%@*} delay=${spec#*@}
  POINTS=$((POINTS + 1))
  RUN_DIR=$(next_run_dir)
  local what="point $POINTS ($CHAIN: $spec)"
  start_run "$CHAIN" "${COMMAND[@]}"
  if [ -n "$PENDING_TAG" ]; then
    expect_gone "$PENDING_TAG" "the driver killed before $what"
    PENDING_TAG=
  fi
  if await_marker "$marker"; then
    [ "$delay" = 0 ] || sleep "$delay"
    kill -9 "$DRIVER" 2>/dev/null
  fi
  { wait "$DRIVER"; } 2>/dev/null
  local rc=$?
  grep -qF "another dit-ar is running" "$LAST" && fail "$what: the run met the killed driver's lock: $(cat "$LAST")"
  check_left_locks "$what"
  if [ "$rc" -ne 137 ]; then
    echo "$what: the driver ended by itself (exit $rc) before the kill"
    LAST_RC=$rc
    return 1
  fi
  KILLS=$((KILLS + 1))
  if [ -n "$at_once" ]; then
    # The rerun starts at once; the checks wait for the next kill.
    PENDING_TAG=$TAG
    echo "$what: killed, rerun at once"
    return 0
  fi
  expect_gone "$TAG" "$what"
  check_results "$what" "$CHAIN_ROWS" $((CHAIN_ROWS + 1))
  check_repository "$what" "$COMMIT" "$BEST_BEFORE"
  if [ -d "$RUN_DIR" ] && ! decided_run "$RUN_DIR"; then
    snapshot "$RUN_DIR" >"$SNAPSHOTS/$(basename "$RUN_DIR")"
  fi
  echo "$what: killed ($(ls "$RUN_DIR" 2>/dev/null | wc -l) entries in its run folder, $(rows) rows)"
}

# chain NAME EXPECT POINT...: the command COMMAND for HEAD, killed at each POINT in turn, then
# run to its decision, which must be EXPECT.
chain() {
  CHAIN=$1
  local expect=$2
  shift 2
  step "$CHAIN: ${#COMMAND[@]} words, expect $expect, $# kill points, DIT_AR_SANDBOX=$SANDBOX"
  COMMIT=$(head_sha)
  BEST_BEFORE=$(best_sha || true)
  [ -n "$BEST_BEFORE" ] || BEST_BEFORE=$COMMIT
  CHAIN_ROWS=$(rows)
  local done_by_itself=
  for point in "$@"; do
    if ! kill_point "$point"; then
      done_by_itself=1
      break
    fi
  done
  if [ -z "$done_by_itself" ]; then
    start_run "$CHAIN-final" "${COMMAND[@]}"
    [ -n "$PENDING_TAG" ] && expect_gone "$PENDING_TAG" "the driver killed before the last run of $CHAIN"
    PENDING_TAG=
    { wait "$DRIVER"; } 2>/dev/null
    RC=$?
    grep -qF "another dit-ar is running" "$LAST" && fail "$CHAIN: the last run met the killed driver's lock"
    check_left_locks "$CHAIN: the last run"
    [ -z "$(find "$REPO/.git" -name '*.lock' 2>/dev/null)" ] ||
      fail "$CHAIN: git lock files left after the last run: $(find "$REPO/.git" -name '*.lock')"
  else
    RC=$LAST_RC
  fi
  # A kill after the decision was written leaves its recording to the rerun, which then finds
  # nothing left to test (exit 2).
  local got
  got=$(row_field "$((CHAIN_ROWS + 1))" status)
  if ! grep -qE "nothing to test: HEAD is the best commit|the baseline is already recorded" "$LAST"; then
    [ "$(status_of "$LAST")" = "$got" ] || fail "$CHAIN: the last run decided '$(status_of "$LAST")', its row says '$got'"
    [ "$RC" = "$(decision_rc "$(status_of "$LAST")")" ] ||
      fail "$CHAIN: the last run decided '$(status_of "$LAST")' and ended with exit code $RC"
  elif [ "$RC" -ne 2 ]; then
    fail "$CHAIN: the last run found nothing to test and ended with exit code $RC, not 2"
  fi
  check_results "$CHAIN, at the end" $((CHAIN_ROWS + 1)) $((CHAIN_ROWS + 1))
  [ "$(row_field "$((CHAIN_ROWS + 1))" commit)" = "$COMMIT" ] || fail "$CHAIN: the new row is not $COMMIT's"
  if [ "$got" != "$expect" ]; then
    # The performance gate measures on whatever else the machine runs: a faster commit it did
    # not find faster is its judgement, not the faults'.
    if [ "$expect" = KEEP ] && [ "$got" = DISCARD-PERFORMANCE ] && [ "$CHAIN" != baseline ]; then
      echo "$CHAIN: the performance gate did not find $COMMIT faster on this machine now ($(row_field "$((CHAIN_ROWS + 1))" improvement_percent)%)"
      expect=$got
    else
      fail "$CHAIN: the new row says $got, expected $expect"
    fi
  fi
  if [ "$expect" = KEEP ]; then
    check_repository "$CHAIN, at the end" "$COMMIT" "$COMMIT"
    [ "$(best_sha)" = "$COMMIT" ] || fail "$CHAIN: refs/autoresearch/best is not $COMMIT"
  else
    expect_discarded "$COMMIT" "$BEST_BEFORE"
    check_repository "$CHAIN, at the end" "$BEST_BEFORE" "$BEST_BEFORE"
  fi
  [ -z "$(find "$STATE" -maxdepth 2 -name '*.tmp.*')" ] || fail "$CHAIN: temporary files left: $(find "$STATE" -maxdepth 2 -name '*.tmp.*')"
  echo "$CHAIN: done at ${SECONDS} s into the test"
}
step "fixture repository, init"
e2e_fixture_repo
git_ switch -q -c "$BRANCH"
SANDBOX=on
ar init init
expect_rc 0
[ "$RC" -eq 0 ] || e2e_finish

# A stage's log appears when the stage starts: MARKER@0 kills at its start, @S seconds into it.
# The fixture's full build takes about 2 s here (3 to 4 s on a loaded machine); each rerun
# resumes it, so the kills in best-build and baseline-build land early, midway and late in it.
COMMAND=(baseline)
chain baseline KEEP start@0 environment.json@0 judge-configure.log@0.1 judge-build.log@0.3 \
  best-configure.log@0 best-build.log@0.3! best-build.log@0.8 best-build.log@1.5 baseline-configure.log@0.1 \
  baseline-build.log@0.4! baseline-build.log@1.1 baseline-build.log@1.8 record-baseline.log@0 tests-fixture.log@0 \
  ctest-fixture-gate-inputs.log@0.05! judge/perf-request.json@0 judge/ctest-fixture.log@0.05 \
  ctest-fixture-other.log@0.05 tests-fixture-perf.log@0 \
  judge/ctest-fixture-perf.log@0.1! judge/gates/perf-gate.log@0.5 judge/gates/perf-gate.log@2 run.json@0

# experiment POINTS...: an experiment's kill points, stage by stage (the best's rebuild after a KEEP).
EXPERIMENT_POINTS=(start@0.05 environment.json@0 configure.log@0.1! build.log@0.2 build.log@0.8 tests-fixture.log@0
  ctest-fixture-gate-inputs.log@0.05 judge/perf-request.json@0! judge/ctest-fixture.log@0.02
  ctest-fixture-other.log@0.05! tests-fixture-perf.log@0
  judge/ctest-fixture-perf.log@0.2 judge/gates/perf-gate.log@1! run.json@0.003 run.json@0)
# vary MS: a faster or slower plan and a rebuilt engine (a comment in work.cpp), committed.
vary() {
  set_plan "$1"
  echo "// variant $1" >>"$REPO/src/work.cpp"
  commit_change "plan $1"
}

vary 20
COMMAND=(experiment --classification exact --description "plan 20")
chain keep-20 KEEP "${EXPERIMENT_POINTS[@]}"

SANDBOX=off
set_engine 4
vary 16
COMMAND=(experiment --classification exact --description "engine broken")
chain discard-quality DISCARD-QUALITY start@0 best-configure.log@0 best-build.log@0.3! best-build.log@0.8 \
  configure.log@0 build.log@0.4 tests-fixture.log@0! ctest-fixture-gate-inputs.log@0.05 judge/ctest-fixture.log@0 \
  run.json@0

vary 13
COMMAND=(experiment --classification exact --description "plan 13")
chain keep-13 KEEP "${EXPERIMENT_POINTS[@]}"

SANDBOX=on
vary 30
COMMAND=(experiment --classification exact --description "plan 30")
chain discard-performance DISCARD-PERFORMANCE best-configure.log@0.1 best-build.log@0.3! best-build.log@0.8 \
  "${EXPERIMENT_POINTS[@]:1}"

step "an experiment without faults decides normally"
vary 8
ar last experiment --classification exact --description "plan 8"
case $(status_of "$LAST") in
  KEEP) expect_rc 0 ;;
  DISCARD-PERFORMANCE) expect_rc 3 && echo "the performance gate did not find it faster on this machine now" ;;
  *) fail "the last experiment decided $(status_of "$LAST")" ;;
esac
check_results "the last experiment" $((CHAIN_ROWS + 2)) $((CHAIN_ROWS + 2))

step "the interrupted runs: sealed, and unchanged since the kill"
sealed=0
for file in "$SNAPSHOTS"/*; do
  [ -e "$file" ] || continue
  dir=$STATE/runs/$(basename "$file")
  if decided_run "$dir"; then
    # Killed while its decision was recorded: the rerun finished the recording.
    snapshot "$dir" | cmp -s - "$file" || fail "runs/$(basename "$file") (decided) changed after the kill"
    continue
  fi
  if [ ! -f "$dir" ] || [ ! -f "$dir.interrupted/interrupted.json" ]; then
    fail "runs/$(basename "$file") was not sealed (no file in its place, or no $dir.interrupted/interrupted.json)"
    continue
  fi
  snapshot "$dir.interrupted" | cmp -s - "$file" || fail "runs/$(basename "$file") changed after the kill:
$(snapshot "$dir.interrupted" | diff "$file" - | head -10)"
  [ -z "$(find "$dir.interrupted" -type f -perm /222)" ] || fail "$dir.interrupted has writable files"
  sealed=$((sealed + 1))
done
echo "$sealed sealed run folders compared"
[ "$sealed" -ge 10 ] || fail "only $sealed interrupted run folders were compared"

step "nothing left"
sleep 0.2
[ -z "$(any_marked)" ] || fail "processes of the test's drivers still alive: $(ps -o pid,args -p "$(any_marked | tr ' ' ',' | sed 's/,$//')")"
echo "$KILLS kills landed at $POINTS points; the slowest cleanup after a kill took $SLOWEST_CLEANUP_MS ms"
[ "$KILLS" -ge 50 ] || fail "only $KILLS kills landed (at least 50 expected)"
e2e_finish
