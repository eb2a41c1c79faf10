#!/bin/bash
# End-to-end test of dit-ar on a temporary git repository holding the fixture project
# (tests/driver/fixture): every decision, refusal and recovery of the keep/discard loop, with
# each status line, exit code, ref, results.tsv row and gate report asserted. The fixture's
# engine really sleeps the time its plan file says (src/plans.txt, `image_ms N`), so the
# measured values are asserted within bounds, not exactly.
# Usage: driver_e2e.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
# DIT_AR_E2E_KEEP=DIR keeps the final repository and its state directory in DIR.
set -u
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
# The compiler-cache steps assert what the driver sets, so none may come from the caller
# (a GPU-host lease builds with CCACHE_DISABLE=1).
unset CCACHE_DISABLE CCACHE_READONLY
# shellcheck source=e2e_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_common.sh"
e2e_setup e2e

step "fixture repository"
e2e_fixture_repo

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

step "baseline refuses a gate set the contract has no floors for on this device, before building: exit 2"
python3 - "$REPO/config/autoresearch.json" "$WORK/floors.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["lanes"]["fixture"]["record_baseline_commands"] = [
    ["{build_dir}/tools/fixture_render", "--golden", "{baseline_dir}", "--set", "uncalibrated-set"]]
json.dump(config, open(sys.argv[2], "w"))
PY
ar floors baseline --config "$WORK/floors.json"
expect_rc 2
expect_text "has no floors for gate set uncalibrated-set on cpu (lane fixture)"
expect_text "dit-quality-render calibrate --gate-sets $REPO/build/fixture/quality/gate-sets.json --set uncalibrated-set"
[ "$(rows)" -eq 0 ] || fail "the refused baseline added a row"
[ ! -e "$STATE/best" ] && [ ! -e "$STATE/judge" ] || fail "the refused baseline built something"

step "baseline (what a failed one left in baseline/ is moved into the run's folder, not refused)"
mkdir -p "$STATE/baseline/quality/cpu" && echo partial >"$STATE/baseline/quality/cpu/MANIFEST.json"
ar baseline baseline
expect_rc 0
expect_text "the goldens an earlier, failed baseline left were moved to"
expect_line "status: KEEP"
expect_line "classification: baseline"
# Measured: 5 images of 30 ms (src/plans.txt) a process, really slept.
expect_line_re "objective: BM_Fixture \(ms, lower is better\) 3[0-9](\.[0-9]+)? ms"
expect_line "quality: 3/3 quality tests passed"
[ "$(best_sha)" = "$INIT" ] || fail "refs/autoresearch/best is not the baseline commit"
expect_row 1 KEEP baseline "$INIT"
[ -f "$STATE/baseline/golden.txt" ] || fail "the golden output was not recorded"
RUN=$(run_dir_of 1)
[ -f "$RUN/earlier-baseline/quality/cpu/MANIFEST.json" ] && [ ! -e "$STATE/baseline/quality" ] ||
  fail "the earlier baseline's leftovers were not moved to $RUN/earlier-baseline"
# The candidate's render goes to DIT_OUTPUT_DIR, the judge's reports to DIT_JUDGE_DIR.
cmp -s "$RUN/outputs/quality/output.txt" "$STATE/baseline/golden.txt" ||
  fail "the baseline's render ($RUN/outputs/quality/output.txt) is missing or differs from the golden"
expect_report "$RUN/judge/quality/gates/quality_output.json" true
expect_report "$RUN/judge/quality/gates/critical_case_zero.json" true
[ -f "$RUN/judge/gates/performance.json" ] || fail "the A/A run wrote no report at $RUN/judge/gates/performance.json"
[ -x "$STATE/judge/src/build/fixture/tools/fixture_quality" ] || fail "the judge build ($STATE/judge/src/build/fixture) has no fixture_quality"
# A candidate run without the sandbox can write the shared compiler cache: the judge's and the
# best's builds compile everything themselves, the candidate's only reads the cache.
for tree in judge best; do
  grep -qx 'disable=1 readonly=.*' "$STATE/$tree/src/build/fixture/compiler-cache.txt" ||
    fail "the $tree build was configured with the compiler cache on: $(cat "$STATE/$tree/src/build/fixture/compiler-cache.txt")"
done
grep -qx 'disable= readonly=1' "$STATE/candidate/src/build/fixture/compiler-cache.txt" ||
  fail "the candidate's build did not get a read-only compiler cache: $(cat "$STATE/candidate/src/build/fixture/compiler-cache.txt")"

step "profile on a build without the CUDA backend names why, exit 2"
# The driver builds in its state directory, not in the checkout: name the best commit's build.
ar profile profile --build-dir "$STATE/best/src/build/fixture"
expect_rc 2
expect_text "the profiling tool is built with the CUDA backend only"
step "profile whose tool fails: FAILED, exit 4 (CRASH), never 3 (a discard)"
mkdir -p "$WORK/failing-profile/bench"
printf '#!/bin/sh\necho "the tool ran and failed"\nexit 1\n' >"$WORK/failing-profile/bench/dit_profile"
chmod +x "$WORK/failing-profile/bench/dit_profile"
ar profile-fails profile --build-dir "$WORK/failing-profile" --output "$WORK/failing-profile/out"
expect_rc 4
expect_line "status: FAILED"
[ -f "$STATE/baseline/performance.json" ] || fail "the baseline performance was not recorded"

step "a faster exact change -> KEEP"
set_plan 15
commit_change "Halve the work loop's memory traffic"
FAST=$(head_sha)
DIT_AR_HEARTBEAT_SECONDS=1 ar keep experiment --classification exact --description "halve memory traffic"
expect_rc 0
expect_line "status: KEEP"
expect_line "commit: $FAST"
# A stage that runs longer than the heartbeat (the performance gate's rounds here) reports while
# it runs: its time so far and its log's last line.
expect_line_re "  judge \(fixture-perf\) +running [0-9]+ s(: .+)?"
expect_line_re "objective: BM_Fixture \(ms, lower is better\) 1[5-9](\.[0-9]+)? ms \(best before 3[0-9](\.[0-9]+)?, [0-9.]+% improvement, p=[0-9.e+-]+\)"
expect_line "quality: 3/3 quality tests passed"
expect_line "best: $FAST"
[ "$(best_sha)" = "$FAST" ] || fail "refs/autoresearch/best did not move to the kept commit"
[ "$(head_sha)" = "$FAST" ] || fail "the branch moved after a KEEP"
expect_row 2 KEEP exact "$FAST"
expect_number_between "$(row_field 2 improvement_percent)" 40 55 "row 2 improvement_percent"
expect_number_between "$(row_field 2 best_before)" 29.9 36 "row 2 best_before"
expect_number_between "$(row_field 2 candidate)" 14.9 19 "row 2 candidate"
# Settled at the first keep look, 5 processes a side, wholly separated: p = 2 / C(10, 5).
expect_number_between "$(row_field 2 p_value)" 0 0.008 "row 2 p_value"
[ "$(row_field 2 peak_memory)" = "1048576" ] || fail "row 2 peak_memory '$(row_field 2 peak_memory)'"
RUN=$(run_dir_of 2)
expect_report "$RUN/judge/quality/gates/quality_output.json" true
expect_report "$RUN/judge/quality/gates/critical_case_zero.json" true
expect_report "$RUN/judge/gates/performance.json" true

step "a change that breaks quality -> DISCARD-QUALITY"
set_engine 4
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
RUN=$(run_dir_of 3)
expect_report "$RUN/judge/quality/gates/quality_output.json" false
expect_report "$RUN/judge/quality/gates/critical_case_zero.json" false
# The renders and the quality gates ran first; the decided discard left the unit test unrun.
expect_text "not run after the quality failure: test preset fixture (its other tests: unit_work)"
[ -f "$RUN/ctest-fixture-gate-inputs.log" ] || fail "no log of the gate inputs' run (ctest-fixture-gate-inputs.log)"
[ ! -e "$RUN/ctest-fixture-other.log" ] || fail "the other tests ran after the quality gates had failed"

step "a slower change -> DISCARD-PERFORMANCE"
set_plan 30
commit_change "Unroll the inner loop four times"
SLOW=$(head_sha)
ar slow experiment --classification exact --description "unroll by four"
expect_rc 3
expect_line "status: DISCARD-PERFORMANCE"
expect_line "quality: 3/3 quality tests passed"
# No CMake file changed since the last configure of the candidate's folder: it is not run again.
expect_line_re "  configure +skipped \(the CMake files, preset, environment and cache are those of the folder's last configure\)"
# The plans are 15 and 30 ms; the measured times carry the machine's overhead (the KEEP above
# allows 14.9 to 19 ms), so the regression shows as anything from about 58% to 100%.
expect_text_re "median regressed ([5-9][0-9]|1[0-9][0-9])(\.[0-9]+)?%"
expect_discarded "$SLOW" "$FAST"
expect_row 4 DISCARD-PERFORMANCE exact "$SLOW"
expect_report "$(run_dir_of 4)/judge/gates/performance.json" false

step "a compile error -> CRASH"
echo "this is not C++" >>"$REPO/src/work.cpp"
commit_change "Vectorise the loop"
NOBUILD=$(head_sha)
ar compile experiment --classification numerical --description "vectorise"
expect_rc 4
expect_line "status: CRASH"
expect_line "quality: not run"
expect_text_re "reason: build( \(gate inputs\))? failed: exit code"
expect_discarded "$NOBUILD" "$FAST"
expect_row 5 CRASH numerical "$NOBUILD"

# The fixture's work.cpp up to its fixture_image (the plan reading and the model), with what the
# variants below also need, for the work.cpp variants below.
ENGINE_CPP="#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
$(sed '/^std::array<float, kImageValues> fixture_image/,$d' "$FIXTURE/src/work.cpp")"
# Processes of the variants name themselves (comm), so that the test finds them whatever pid
# namespace they ran in.
HANG_NAME=e2ehang$$
SLOW_NAME=e2eslow$$
# alive NAME: the pids of live processes named NAME.
alive() { pgrep -x "$1" 2>/dev/null | tr '\n' ' '; }
# expect_gone NAME WHAT: no process named NAME is left (waiting up to 5 s for the reaping).
expect_gone() {
  for _ in $(seq 1 50); do
    [ -z "$(alive "$1")" ] && return 0
    sleep 0.1
  done
  fail "$2: process(es) $(alive "$1") still alive"
  for pid in $(alive "$1"); do kill -9 "$pid" 2>/dev/null; done
}

step "a hang -> CRASH by timeout, no process left behind"
cat >"$REPO/src/work.cpp" <<CPP
$ENGINE_CPP
// A deadlock in the image (the performance gate's benchmark meets it first), with a helper that
// escapes the process group the way a daemon would.
std::array<float, kImageValues> fixture_image(std::uint64_t) {
  prctl(PR_SET_NAME, "$HANG_NAME");
  pid_t helper = fork();
  if (helper == 0) {
    setsid();
    for (;;) pause();
  }
  // Written where the process can: the tests' output folder, or (a timed process of the
  // performance gate, which now runs first) its private TMPDIR.
  for (const char* folder : {std::getenv("DIT_OUTPUT_DIR"), std::getenv("TMPDIR")})
    if (folder) std::ofstream(std::string(folder) + "/hang.started") << helper << "\n";
  for (;;) pause();
}
CPP
commit_change "Overlap the copy with the compute"
HANG=$(head_sha)
ar hang experiment --classification exact --description "overlap copy and compute"
expect_rc 4
expect_line "status: CRASH"
expect_text "timed out"
expect_discarded "$HANG" "$FAST"
expect_row 6 CRASH exact "$HANG"
find "$(run_dir_of 6)" -name hang.started | grep -q . || fail "the hung process did not start (no hang.started under $(run_dir_of 6))"
expect_gone "$HANG_NAME" "the hung test"

step "a gate test removed by mutable CMake code -> REJECTED (the test set differs from the judge build's)"
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
# The critical gate is registered by tests/ (fixed), after this file: a no-op in its place.
function(fixture_add_gate)
  if(NOT "${ARGV1}" STREQUAL "critical_case_zero")
    _fixture_add_gate(${ARGV})
  endif()
endfunction()
CMAKE
commit_change "Drop a redundant check"
NOGATE=$(head_sha)
ar nogate experiment --classification exact --description "drop a check"
expect_rc 5
expect_line "status: REJECTED"
expect_text "critical_case_zero"
expect_line_re "  configure +ok +[0-9.]+ s"  # a CMake file changed: configured again
expect_discarded "$NOGATE" "$FAST"
expect_row 7 REJECTED exact "$NOGATE"

step "an out-of-scope file changed -> REJECTED (exit 5), logged"
echo "notes" >"$REPO/NOTES.md"
commit_change "Add notes"
SCOPE=$(head_sha)
ar scope-dry-run experiment --classification exact --description "notes" --dry-run --json
expect_rc 5
expect_text '"would": "reject"'
expect_text '"exit_code": 5'
expect_text "out of scope: NOTES.md is not under a mutable path"
[ "$(head_sha)" = "$SCOPE" ] && [ "$(rows)" -eq 7 ] || fail "the dry run reset the branch or added a row"
ar scope experiment --classification exact --description "notes"
expect_rc 5
expect_line "status: REJECTED"
expect_line "reason: out of scope: NOTES.md is not under a mutable path"
expect_discarded "$SCOPE" "$FAST"
expect_row 8 REJECTED exact "$SCOPE"

step "a locked file edited -> REJECTED"
echo "// tuned" >>"$REPO/tools/quality.cpp"
commit_change "Tune the gate"
LOCKED=$(head_sha)
ar locked experiment --classification exact --description "tune the gate"
expect_rc 5
expect_line "status: REJECTED"
expect_text "reason: locked path tools/ changed since init"
expect_discarded "$LOCKED" "$FAST"
expect_row 9 REJECTED exact "$LOCKED"

step "two commits since the best -> refused"
set_plan 14
commit_change "First half"
set_plan 13
commit_change "Second half"
ar two experiment --classification exact --description "two commits"
expect_rc 2
expect_text "2 commits since the best commit ${FAST:0:8}"
expect_text "way out: squash them: git reset --soft ${FAST:0:8}"
[ "$(rows)" -eq 9 ] || fail "a refused experiment added a row"
git_ reset -q --hard "$FAST"

step "a dirty tree -> exit 2"
set_plan 14
ar dirty experiment --classification exact --description "dirty"
expect_rc 2
expect_text "the working tree is dirty (1 path(s): src/plans.txt)"
expect_text "way out: commit the hypothesis"
git_ checkout -q -- src/plans.txt

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
cat >"$REPO/src/work.cpp" <<CPP
$ENGINE_CPP
// Slow once in the unit test (the one caller with DIT_OUTPUT_DIR set: the benchmark gets no
// DIT_* variable), for the test to catch the driver mid-experiment.
std::array<float, kImageValues> fixture_image(std::uint64_t seed) {
  static bool slept = false;
  const char* outputs = std::getenv("DIT_OUTPUT_DIR");
  if (outputs && !slept) {
    slept = true;
    prctl(PR_SET_NAME, "$SLOW_NAME");
    std::ofstream(std::string(outputs) + "/slow.started") << getpid() << "\n";
    sleep(4);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(image_ms()));
  std::array<float, kImageValues> image{};
  for (int k = 0; k < kImageValues; ++k) {
    image[k] = static_cast<float>(engine(static_cast<int>((seed >> (16 * k)) & 0xffff)));
  }
  return image;
}
CPP
set_plan 8
commit_change "Fuse the two passes"
FUSED=$(head_sha)
cp "$STATE/results.tsv" "$WORK/results-before-kill.tsv"
(cd "$REPO" && exec "$DIT_AR" experiment --classification exact --description "fuse") >"$LOGS/killed.out" 2>&1 &
FIRST=$!
for _ in $(seq 1 600); do
  ls "$STATE"/runs/*/outputs/slow.started >/dev/null 2>&1 && break
  sleep 0.1
done
SLOW_STARTED=$(ls "$STATE"/runs/*/outputs/slow.started 2>/dev/null | head -1)
[ -n "$SLOW_STARTED" ] || fail "the first driver never reached its tests"
ar second experiment --classification exact --description "second driver"
expect_rc 2
expect_text "another dit-ar is running on this state directory (pid $FIRST)"
kill -9 "$FIRST"
wait "$FIRST" 2>/dev/null
KILLED_RUN=$(dirname "$(dirname "$SLOW_STARTED")")
ar resumed experiment --classification exact --description "fuse"
expect_rc 0
expect_text "was interrupted: the driver was stopped before it decided"
expect_line "status: KEEP"
expect_line "commit: $FUSED"
# Sealed: marked, moved to <run>.interrupted, a read-only file in its place (no path leads into it).
expect_text "sealed runs/$(basename "$KILLED_RUN") "
[ -f "$KILLED_RUN.interrupted/interrupted.json" ] || fail "the interrupted run directory is not marked"
[ -f "$KILLED_RUN" ] && [ ! -d "$KILLED_RUN" ] || fail "the interrupted run's old path is not a file"
expect_gone "$SLOW_NAME" "the killed driver's test"
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
set_plan 10
commit_change "Split the loop in two"
SPLIT=$(head_sha)
(cd "$REPO" && "$DIT_AR" experiment --classification exact --description "split" --json) >"$LOGS/json.out" 2>"$LOGS/json.err"
RC=$?
LAST=$LOGS/json.out
expect_rc 3
[ "$(head -c 1 "$LAST")" = "{" ] || fail "stdout of --json does not start with a JSON object"
[ "$(tail -n 1 "$LAST")" = "}" ] || fail "stdout of --json does not end with the JSON object"
expect_text '"status": "DISCARD-PERFORMANCE"'
expect_text '"exit_code": 3'
expect_text '"reasons": ['
expect_text "\"commit\": \"$SPLIT\""
grep -qF "dit-ar experiment ${SPLIT:0:8}" "$LOGS/json.err" || fail "progress did not go to stderr under --json"
expect_discarded "$SPLIT" "$FUSED"
expect_row 11 DISCARD-PERFORMANCE exact "$SPLIT"

step "summary and status"
ar summary summary --json
expect_rc 0
grep -q '"experiments": 11' "$LAST" || fail "summary --json does not count 11 rows"
grep -q '"KEEP": 3' "$LAST" || fail "summary --json does not count 3 KEEP"
grep -qE '"min_improvement_percent": [0-9]' "$LAST" || fail "summary --json does not give the effective minimum"
ar summary-text summary
expect_line_re "min_improvement_percent: [0-9.]+% \(lane 5%, A/A noise [0-9.]+%\)"
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

# After the copy above, so the state the report's test reads is unchanged.
step "--progress=json (with --json): stdout is JSON lines, the stages in order, the decision once and last"
set_engine 4
commit_change "Fold the offset again"
REFOLD=$(head_sha)
(cd "$REPO" && DIT_AR_HEARTBEAT_SECONDS=1 "$DIT_AR" experiment --classification exact --description "refold" \
  --json --progress=json) >"$LOGS/progress.out" 2>"$LOGS/progress.err"
RC=$?
LAST=$LOGS/progress.out
expect_rc 3
python3 - "$LAST" "$RC" "$REFOLD" <<'PY' || fail "the --progress=json events are not as documented (driver/progress.h)"
import json, re, sys
path, rc, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
meaning = {0: {"KEEP"}, 3: {"DISCARD-QUALITY", "DISCARD-PERFORMANCE"}, 4: {"CRASH"}, 5: {"REJECTED"}}
events, problems = [], []
for number, line in enumerate(open(path, encoding="utf-8"), 1):
    try:
        events.append(json.loads(line))
    except ValueError:
        problems.append(f"line {number} is not JSON: {line!r}")
elapsed, stage = 0.0, None
for event in events:
    kind = event.get("event")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(event.get("time"))):
        problems.append(f"no UTC ISO-8601 time: {event}")
    if not isinstance(event.get("elapsed_s"), (int, float)) or event["elapsed_s"] < elapsed:
        problems.append(f"elapsed_s missing or going back: {event}")
    else:
        elapsed = event["elapsed_s"]
    if kind == "stage_started":
        if stage is not None:
            problems.append(f"{event['stage']} started while {stage} ran")
        stage = event["stage"]
    elif kind == "stage_heartbeat" and event.get("stage") != stage:
        problems.append(f"a heartbeat of {event.get('stage')} while {stage} ran")
    elif kind == "stage_finished":
        if event.get("status") == "skipped":
            if stage is not None:
                problems.append(f"{event['stage']} skipped while {stage} ran")
        elif event.get("stage") != stage or event.get("status") not in ("ok", "FAILED"):
            problems.append(f"finished out of order: {event} (running: {stage})")
        if not isinstance(event.get("seconds"), (int, float)):
            problems.append(f"no seconds: {event}")
        stage = None
kinds = [event.get("event") for event in events]
finished = [event.get("stage") for event in events if event.get("event") == "stage_finished"]
if not kinds or kinds[0] != "started" or events[0].get("commit") != commit:
    problems.append(f"the first event is not the run's start: {events[:1]}")
if kinds.count("decision") != 1 or kinds[-1] != "decision":
    problems.append(f"not one decision, last: {kinds}")
for expected in ("build (gate inputs)", "tests (fixture, gate inputs)", "judge (fixture)"):
    if expected not in finished:
        problems.append(f"no stage_finished of {expected}: {finished}")
# The lane's gate input targets alone were built: the rest of the build waits for the quality
# gates, which failed.
if "build" in finished:
    problems.append(f"the whole build ran before a quality discard: {finished}")
order = [finished.index(name) for name in ("configure", "build (gate inputs)", "tests (fixture, gate inputs)",
                                           "judge (fixture)") if name in finished]
if order != sorted(order):
    problems.append(f"the stages out of order: {finished}")
if stage is not None:
    problems.append(f"{stage} never finished")
decision = events[-1] if events else {}
if decision.get("status") not in meaning.get(rc, set()) or decision.get("exit_code") != rc:
    problems.append(f"exit {rc} but the decision says {decision.get('status')}, exit_code {decision.get('exit_code')}")
if decision.get("status") != "DISCARD-QUALITY" or decision.get("commit") != commit or not decision.get("reasons"):
    problems.append(f"the decision is not this commit's DISCARD-QUALITY with its reasons: {decision}")
print("\n".join(problems) or f"{len(events)} events: {' '.join(kinds)}")
sys.exit(1 if problems else 0)
PY
expect_discarded "$REFOLD" "$FUSED"
cmp -s "$LAST" "$(run_dir_of "$(rows)")/progress.jsonl" ||
  fail "the run folder's progress.jsonl is not the events --progress=json printed"

step "a correctness test broken and the timed outputs changed -> DISCARD-PERFORMANCE, the other tests not run"
# The performance gate runs before the candidate's other tests: a performance discard does not
# wait for them.
sed -i 's/(seed >> (16 \* k)) \& 0xffff/k/' "$REPO/src/work.cpp"
grep -q 'engine(static_cast<int>(k))' "$REPO/src/work.cpp" || fail "the seed-blind variant was not made"
commit_change "Drop the seed from the image"
SEEDLESS=$(head_sha)
ar seedless experiment --classification exact --description "seedless images"
expect_rc 3
expect_line "status: DISCARD-PERFORMANCE"
expect_text "is not byte-identical"
expect_text "not run after the performance discard: test preset fixture (its other tests: unit_work)"
expect_discarded "$SEEDLESS" "$FUSED"
expect_row "$(rows)" DISCARD-PERFORMANCE exact "$SEEDLESS"
[ -e "$(run_dir_of "$(rows)")/judge/gates/performance.json" ] || fail "the performance gate did not judge"
[ ! -e "$(run_dir_of "$(rows)")/candidate/junit-fixture-other.xml" ] || fail "the other tests ran after the discard"

step "a correctness test broken with the quality and timed outputs intact -> CRASH after the performance gate"
# A stale-cache bug: an image asked for twice in a row with one seed differs the second time. The
# unit test asks twice; the gates' renders and timed images never repeat a seed.
python3 - "$REPO/src/work.cpp" <<'PY'
import sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
old = "  return image;\n}"
assert text.count(old) == 1, "fixture_image's end not found"
text = text.replace(old, "  static std::uint64_t previous = ~std::uint64_t{0};\n"
                         "  if (seed == previous) image[0] += 1.0f;\n"
                         "  previous = seed;\n" + old)
open(path, "w", encoding="utf-8").write(text)
PY
set_plan 4  # and faster: the performance gate passes it to the other tests
commit_change "Remember the last seed"
SEEDLESS=$(head_sha)
ar stale experiment --classification exact --description "stale image cache"
expect_rc 4
expect_line "status: CRASH"
expect_text "unit_work failed"
expect_discarded "$SEEDLESS" "$FUSED"
expect_row "$(rows)" CRASH exact "$SEEDLESS"
[ -e "$(run_dir_of "$(rows)")/judge/gates/performance.json" ] || fail "the performance gate did not run before the other tests"
# Under text progress too, the run folder keeps the events: the start first, the CRASH last, and
# every stage that ended between them with its time.
python3 - "$(run_dir_of "$(rows)")/progress.jsonl" "$SEEDLESS" <<'PY' || fail "the text run's progress.jsonl is not its events"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
kinds = [event["event"] for event in events]
finished = {event["stage"]: event["seconds"] for event in events if event["event"] == "stage_finished"}
problems = []
if kinds[0] != "started" or events[0].get("commit") != sys.argv[2]:
    problems.append(f"the first event is not the run's start: {events[0]}")
if kinds[-1] != "decision" or events[-1].get("status") != "CRASH" or kinds.count("decision") != 1:
    problems.append(f"the last event is not the one CRASH decision: {kinds}")
for stage in ("configure", "build (gate inputs)", "build"):
    if not isinstance(finished.get(stage), (int, float)):
        problems.append(f"no time for {stage}: {finished}")
print("\n".join(problems) or f"{len(events)} events recorded")
sys.exit(1 if problems else 0)
PY

step "a rest of the build longer than the test timeout -> KEEP, the tests given their whole time"
# What the gate inputs do not need is built after their tests and the quality gates ran, before
# the performance gate: that build counts against the build's timeout (300 s here), not the
# tests' (20 s), whose clock stops while it runs.
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
# A step of the build the renders do not need, longer than the tests' timeout.
add_custom_target(fixture_plan_tables ALL COMMAND sleep 22 VERBATIM)
CMAKE
set_plan 4
commit_change "Precompute the plan tables at build time"
SLOWBUILD=$(head_sha)
ar slowbuild experiment --classification exact --description "plan tables at build time"
expect_rc 0
expect_line "status: KEEP"
expect_line "commit: $SLOWBUILD"
expect_row "$(rows)" KEEP exact "$SLOWBUILD"

e2e_finish
