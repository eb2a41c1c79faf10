#!/bin/bash
# End-to-end test of dit-ar on a temporary git repository holding the fixture project
# (tests/driver/fixture): every decision, refusal and recovery of the keep/discard loop, with
# each status line, exit code, ref and results.tsv row asserted.
# Usage: driver_e2e.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
# DIT_AR_E2E_KEEP=DIR keeps the final repository and its state directory in DIR.
set -u
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dit-ar-e2e.XXXXXX")
REPO=$WORK/repo
STATE=$REPO/.autoresearch
LOGS=$WORK/logs
FAILURES=0
mkdir -p "$REPO" "$LOGS"
trap 'rm -rf "$WORK"' EXIT

fail() {
  echo "FAIL: $*"
  FAILURES=$((FAILURES + 1))
  if [ -n "${LAST:-}" ] && [ -f "$LAST" ]; then
    echo "---- output of the last dit-ar command ($LAST) ----"
    cat "$LAST"
    echo "----"
  fi
}
step() { echo; echo "== $*"; }

# ar NAME ARGS...: runs dit-ar in the repository; output in $LOGS/NAME.out, exit code in $RC.
ar() {
  local name=$1
  shift
  LAST=$LOGS/$name.out
  (cd "$REPO" && "$DIT_AR" "$@") >"$LAST" 2>&1
  RC=$?
  echo "dit-ar $* -> exit $RC"
}
expect_rc() { [ "$RC" -eq "$1" ] || fail "expected exit code $1, got $RC"; }
expect_line() { grep -qxF -- "$1" "$LAST" || fail "expected the line '$1'"; }
expect_text() { grep -qF -- "$1" "$LAST" || fail "expected the text '$1'"; }

git_() { git -C "$REPO" "$@"; }
head_sha() { git_ rev-parse HEAD; }
best_sha() { git_ rev-parse refs/autoresearch/best; }
rows() { if [ -f "$STATE/results.tsv" ]; then echo $(($(wc -l <"$STATE/results.tsv") - 1)); else echo 0; fi; }
# row_field N COLUMN: the value of COLUMN in data row N (1-based).
row_field() {
  awk -F'\t' -v row="$1" -v column="$2" 'NR == 1 { for (i = 1; i <= NF; i++) index_of[$i] = i; next }
    NR == row + 1 { print $(index_of[column]) }' "$STATE/results.tsv"
}
expect_row() {  # expect_row N STATUS CLASSIFICATION COMMIT
  [ "$(rows)" -eq "$1" ] || fail "expected $1 rows in results.tsv, found $(rows)"
  [ "$(row_field "$1" status)" = "$2" ] || fail "row $1: status '$(row_field "$1" status)', expected '$2'"
  [ "$(row_field "$1" classification)" = "$3" ] || fail "row $1: classification '$(row_field "$1" classification)', expected '$3'"
  [ "$(row_field "$1" commit)" = "$4" ] || fail "row $1: commit '$(row_field "$1" commit)', expected '$4'"
  [ -d "$STATE/$(row_field "$1" run_dir)" ] || fail "row $1: run directory '$(row_field "$1" run_dir)' missing"
  git_ notes --ref=autoresearch show "$4" 2>/dev/null | grep -qF "\"status\": \"$2\"" ||
    fail "row $1: no git note with status $2 on $4"
}
# commit_change MESSAGE: commits the working tree's changes.
commit_change() { git_ add -A && git_ commit -q -m "$1"; }
set_time() { sed -i "s/return [0-9.]*; }/return $1; }/" "$REPO/src/work.cpp"; }
# expect_discarded SHA BEST: the branch is back at BEST and SHA is archived.
expect_discarded() {
  [ "$(head_sha)" = "$2" ] || fail "the branch was not reset to the best ($2); HEAD is $(head_sha)"
  [ "$(best_sha)" = "$2" ] || fail "refs/autoresearch/best moved to $(best_sha)"
  [ "$(git_ rev-parse -q --verify "refs/autoresearch/discarded/$1")" = "$1" ] ||
    fail "refs/autoresearch/discarded/$1 missing"
  [ -z "$(git_ status --porcelain)" ] || fail "the working tree is not clean after the reset"
}

step "fixture repository"
cp -r "$FIXTURE/." "$REPO/"
mv "$REPO/gitignore" "$REPO/.gitignore"
GENERATOR="Unix Makefiles"
command -v ninja >/dev/null 2>&1 && GENERATOR=Ninja
sed -e "s|@DIT_PERF_GATE@|$PERF_GATE|" -e "s|@FIXTURE_GENERATOR@|$GENERATOR|" "$REPO/CMakePresets.json.in" >"$REPO/CMakePresets.json"
rm "$REPO/CMakePresets.json.in"
git_ init -q -b main
git_ config user.name "dit-ar e2e"
git_ config user.email "e2e@localhost"
commit_change "fixture project"

step "an unknown command is named, exit 2"
ar bogus bogus
expect_rc 2
expect_text "dit-ar: unknown command 'bogus' (commands: doctor, init,"

step "init refuses a branch that is not autoresearch/<tag>"
ar init-main init
expect_rc 2
expect_text "a session runs on a branch named autoresearch/<tag>"
expect_text "way out: git switch -c autoresearch/<tag>"

step "init"
git_ switch -q -c autoresearch/e2e
INIT=$(head_sha)
ar init init
expect_rc 0
expect_line "status: INITIALISED"
expect_line "branch: autoresearch/e2e"
expect_line "commit: $INIT"
[ -f "$STATE/session.json" ] || fail "session.json missing"

step "baseline"
ar baseline baseline
expect_rc 0
expect_line "status: KEEP"
expect_line "classification: baseline"
expect_line "objective: BM_Fixture (ms, lower is better) 10 ms"
expect_line "quality: 3/3 quality tests passed"
[ "$(best_sha)" = "$INIT" ] || fail "refs/autoresearch/best is not the baseline commit"
expect_row 1 KEEP baseline "$INIT"
[ -f "$STATE/baseline/golden.txt" ] || fail "the golden output was not recorded"

step "profile on a build without the CUDA backend names why, exit 2"
ar profile profile
expect_rc 2
expect_text "the profiling tool is built with the CUDA backend only"
[ -f "$STATE/baseline/performance.json" ] || fail "the baseline performance was not recorded"

step "a faster exact change -> KEEP"
set_time 8.0
commit_change "Halve the work loop's memory traffic"
FAST=$(head_sha)
ar keep experiment --classification exact --description "halve memory traffic"
expect_rc 0
expect_line "status: KEEP"
expect_line "commit: $FAST"
expect_line "objective: BM_Fixture (ms, lower is better) 8 ms (best before 10, 20% improvement, p=4.66e-05)"
expect_line "quality: 3/3 quality tests passed"
expect_line "best: $FAST"
[ "$(best_sha)" = "$FAST" ] || fail "refs/autoresearch/best did not move to the kept commit"
[ "$(head_sha)" = "$FAST" ] || fail "the branch moved after a KEEP"
expect_row 2 KEEP exact "$FAST"
[ "$(row_field 2 improvement_percent)" = "20" ] || fail "row 2 improvement '$(row_field 2 improvement_percent)'"
[ "$(row_field 2 best_before)" = "10" ] || fail "row 2 best_before '$(row_field 2 best_before)'"
[ "$(row_field 2 candidate)" = "8" ] || fail "row 2 candidate '$(row_field 2 candidate)'"
[ "$(row_field 2 p_value)" = "4.657e-05" ] || fail "row 2 p_value '$(row_field 2 p_value)'"
[ "$(row_field 2 peak_memory)" = "1048576" ] || fail "row 2 peak_memory '$(row_field 2 peak_memory)'"

step "a change that breaks quality -> DISCARD-QUALITY"
sed -i 's/7 \* case_index + 3/7 * case_index + 4/' "$REPO/src/work.cpp"
commit_change "Fold the offset into the multiply"
BROKEN=$(head_sha)
ar quality experiment --classification exact --description "fold the offset"
expect_rc 3
expect_line "status: DISCARD-QUALITY"
expect_line "commit: $BROKEN"
expect_text "quality_output failed"
expect_text "critical_case_zero failed"
expect_discarded "$BROKEN" "$FAST"
expect_row 3 DISCARD-QUALITY exact "$BROKEN"

step "a slower change -> DISCARD-PERFORMANCE"
set_time 12.0
commit_change "Unroll the inner loop four times"
SLOW=$(head_sha)
ar slow experiment --classification exact --description "unroll by four"
expect_rc 3
expect_line "status: DISCARD-PERFORMANCE"
expect_line "quality: 3/3 quality tests passed"
expect_text "median regressed 50%"
expect_discarded "$SLOW" "$FAST"
expect_row 4 DISCARD-PERFORMANCE exact "$SLOW"

step "a compile error -> CRASH"
echo "this is not C++" >>"$REPO/src/work.cpp"
commit_change "Vectorise the loop"
NOBUILD=$(head_sha)
ar compile experiment --classification numerical --description "vectorise"
expect_rc 3
expect_line "status: CRASH"
expect_line "quality: not run"
expect_text "reason: build failed: exit code"
expect_discarded "$NOBUILD" "$FAST"
expect_row 5 CRASH numerical "$NOBUILD"

step "a hang -> CRASH by timeout, no process left behind"
cat >"$REPO/src/work.cpp" <<'CPP'
#include "work.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

int fixture_output(int case_index) { return 7 * case_index + 3; }

double fixture_time_ms() { return 8.0; }

// A deadlock, with a helper that escapes the process group the way a daemon would.
void fixture_work() {
  pid_t helper = fork();
  if (helper == 0) {
    setsid();
    for (;;) pause();
  }
  std::ofstream(std::string(std::getenv("DIT_RUN_DIR")) + "/hang.pids") << getpid() << "\n" << helper << "\n";
  for (;;) pause();
}
CPP
commit_change "Overlap the copy with the compute"
HANG=$(head_sha)
ar hang experiment --classification exact --description "overlap copy and compute"
expect_rc 3
expect_line "status: CRASH"
expect_text "timed out"
expect_discarded "$HANG" "$FAST"
expect_row 6 CRASH exact "$HANG"
PIDS_FILE="$STATE/$(row_field 6 run_dir)/hang.pids"
if [ -f "$PIDS_FILE" ]; then
  for pid in $(cat "$PIDS_FILE"); do
    if [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
      fail "process $pid of the hung test is still alive"
    fi
  done
else
  fail "the hung test did not start (no $PIDS_FILE)"
fi

step "a gate test removed by mutable CMake code -> CRASH"
sed -i '/critical_case_zero/d' "$REPO/src/CMakeLists.txt"
commit_change "Drop a redundant check"
NOGATE=$(head_sha)
ar nogate experiment --classification exact --description "drop a check"
expect_rc 3
expect_line "status: CRASH"
expect_text "gate test missing or changed since the baseline: critical_case_zero"
expect_discarded "$NOGATE" "$FAST"
expect_row 7 CRASH exact "$NOGATE"

step "an out-of-scope file changed -> REJECTED (exit 3), logged"
echo "notes" >"$REPO/NOTES.md"
commit_change "Add notes"
SCOPE=$(head_sha)
ar scope experiment --classification exact --description "notes"
expect_rc 3
expect_line "status: REJECTED"
expect_line "reason: out of scope: NOTES.md is not under a mutable path"
expect_discarded "$SCOPE" "$FAST"
expect_row 8 REJECTED exact "$SCOPE"

step "a locked file edited -> REJECTED"
echo "// tuned" >>"$REPO/tools/quality.cpp"
commit_change "Tune the gate"
LOCKED=$(head_sha)
ar locked experiment --classification exact --description "tune the gate"
expect_rc 3
expect_line "status: REJECTED"
expect_text "reason: locked path tools/ changed since init"
expect_discarded "$LOCKED" "$FAST"
expect_row 9 REJECTED exact "$LOCKED"

step "two commits since the best -> refused"
set_time 7.0
commit_change "First half"
set_time 6.5
commit_change "Second half"
ar two experiment --classification exact --description "two commits"
expect_rc 2
expect_text "2 commits since the best commit ${FAST:0:8}"
expect_text "way out: squash them: git reset --soft ${FAST:0:8}"
[ "$(rows)" -eq 9 ] || fail "a refused experiment added a row"
git_ reset -q --hard "$FAST"

step "a dirty tree -> exit 2"
set_time 7.0
ar dirty experiment --classification exact --description "dirty"
expect_rc 2
expect_text "the working tree is dirty (1 path(s): src/work.cpp)"
expect_text "way out: commit the hypothesis"
git_ checkout -q -- src/work.cpp

step "a wrong branch -> exit 2"
git_ switch -q -c elsewhere
ar branch experiment --classification exact --description "wrong branch"
expect_rc 2
expect_text "wrong branch: 'elsewhere' is checked out, but this session runs on 'autoresearch/e2e'"
expect_text "way out: git switch autoresearch/e2e"
git_ switch -q autoresearch/e2e

step "a branch reset behind the best -> exit 2"
git_ reset -q --hard "$FAST~1"
ar behind experiment --classification exact --description "behind"
expect_rc 2
expect_text "the branch is behind the best commit ${FAST:0:8}"
expect_text "way out: git reset --hard refs/autoresearch/best"
git_ reset -q --hard refs/autoresearch/best
[ "$(rows)" -eq 9 ] || fail "a refused experiment added a row"

step "a second driver while one runs -> refused; the first one killed -> the next run proceeds"
cat >"$REPO/src/work.cpp" <<'CPP'
#include "work.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

int fixture_output(int case_index) { return 7 * case_index + 3; }

double fixture_time_ms() { return 6.0; }

// Slow enough for the test to catch the driver mid-experiment.
void fixture_work() {
  std::ofstream(std::string(std::getenv("DIT_RUN_DIR")) + "/slow.pid") << getpid() << "\n";
  sleep(4);
}
CPP
commit_change "Fuse the two passes"
FUSED=$(head_sha)
cp "$STATE/results.tsv" "$WORK/results-before-kill.tsv"
(cd "$REPO" && exec "$DIT_AR" experiment --classification exact --description "fuse") >"$LOGS/killed.out" 2>&1 &
FIRST=$!
for _ in $(seq 1 600); do
  ls "$STATE"/runs/*/slow.pid >/dev/null 2>&1 && break
  sleep 0.1
done
SLOW_PID_FILE=$(ls "$STATE"/runs/*/slow.pid 2>/dev/null | head -1)
[ -n "$SLOW_PID_FILE" ] || fail "the first driver never reached its tests"
ar second experiment --classification exact --description "second driver"
expect_rc 2
expect_text "another dit-ar is running on this state directory (pid $FIRST)"
kill -9 "$FIRST"
wait "$FIRST" 2>/dev/null
KILLED_RUN=$(dirname "$SLOW_PID_FILE")
ar resumed experiment --classification exact --description "fuse"
expect_rc 0
expect_text "was interrupted: the driver was stopped before it decided"
expect_line "status: KEEP"
expect_line "commit: $FUSED"
[ -f "$KILLED_RUN/interrupted.json" ] || fail "the interrupted run directory is not marked"
SLOW_PID=$(cat "$SLOW_PID_FILE")
if [ -d "/proc/$SLOW_PID" ] && ! grep -q '^State:.*Z' "/proc/$SLOW_PID/status" 2>/dev/null; then
  fail "the killed driver's test process $SLOW_PID is still alive"
fi
head -n 10 "$STATE/results.tsv" | cmp -s - "$WORK/results-before-kill.tsv" || fail "rows before the kill changed"
expect_row 10 KEEP exact "$FUSED"
[ "$(best_sha)" = "$FUSED" ] || fail "refs/autoresearch/best did not move after the resumed run"

step "malformed config and contract files -> exit 2 with the problem named"
printf '{\n  "project": "x",\n  "lanes": {,\n}\n' >"$WORK/syntax.json"
ar config-syntax status --config "$WORK/syntax.json"
expect_rc 2
expect_text "$WORK/syntax.json:3:"
expect_text "not valid JSON"
sed 's/"unit": "ms"/"unit": "sec"/' "$REPO/config/autoresearch.json" >"$WORK/unit.json"
ar config-field experiment --config "$WORK/unit.json" --classification exact --description "x"
expect_rc 2
expect_text "$WORK/unit.json.lanes.fixture.objective.unit: 'sec' is not one of ns, us, ms, s"
sed 's/"mutable_paths": \["src\/"\]/"mutable_paths": []/' "$REPO/config/autoresearch.json" >"$WORK/empty.json"
ar config-empty experiment --config "$WORK/empty.json" --classification exact --description "x"
expect_rc 2
expect_text "mutable_paths: must name at least one path"
printf '{"metrics": [}\n' >"$REPO/quality/broken.json"
sed 's|"contract": "quality/contract.json"|"contract": "quality/broken.json"|' "$REPO/config/autoresearch.json" >"$WORK/contract.json"
ar contract experiment --config "$WORK/contract.json" --classification exact --description "x"
expect_rc 2
expect_text "quality/broken.json:1:"
expect_text "not valid JSON"
rm "$REPO/quality/broken.json"
[ "$(rows)" -eq 10 ] || fail "a refused command added a row"

step "--json: stdout is one JSON document"
set_time 7.0
commit_change "Split the loop in two"
SPLIT=$(head_sha)
(cd "$REPO" && "$DIT_AR" experiment --classification exact --description "split" --json) >"$LOGS/json.out" 2>"$LOGS/json.err"
RC=$?
LAST=$LOGS/json.out
expect_rc 3
[ "$(head -c 1 "$LAST")" = "{" ] || fail "stdout of --json does not start with a JSON object"
[ "$(tail -n 1 "$LAST")" = "}" ] || fail "stdout of --json does not end with the JSON object"
expect_text '"status": "DISCARD-PERFORMANCE"'
expect_text "\"commit\": \"$SPLIT\""
grep -qF "dit-ar experiment ${SPLIT:0:8}" "$LOGS/json.err" || fail "progress did not go to stderr under --json"
expect_discarded "$SPLIT" "$FUSED"
expect_row 11 DISCARD-PERFORMANCE exact "$SPLIT"

step "summary and status"
ar summary summary --json
expect_rc 0
grep -q '"experiments": 11' "$LAST" || fail "summary --json does not count 11 rows"
grep -q '"KEEP": 3' "$LAST" || fail "summary --json does not count 3 KEEP"
ar status status
expect_rc 0
expect_line "best: $FUSED"
expect_line "driver_running: no"
expect_line "in_flight: none"

if [ -n "${DIT_AR_E2E_KEEP:-}" ]; then
  rm -rf "$DIT_AR_E2E_KEEP"
  mkdir -p "$DIT_AR_E2E_KEEP"
  cp -a "$REPO" "$DIT_AR_E2E_KEEP/repo"
  echo "kept the final repository and state directory in $DIT_AR_E2E_KEEP/repo (.autoresearch inside)"
fi

echo
if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES check(s) failed"
  exit 1
fi
echo "all checks passed"
