#!/bin/bash
# dit-ar queue and dit-ar work on the fixture project (tests/driver/fixture): a queue of eight
# candidates (seven commits on branches, one patch) judged by one worker, then, from the same
# state, by four workers (pinned to GPUs 0..3, which the fixture's CPU lane does not use) with
# one worker and then the coordinator killed by SIGKILL on the way and the work restarted. The
# decisions (status and judged commit, item by item) must be the serial ones; no row lost or
# doubled, no process and no worktree left, every attempt's worker and GPU recorded, no two
# attempts on one GPU at once. The fixture's benchmark sleeps the time its plan file says, so
# every decision is far from the performance gate's threshold.
# Usage: work_queue.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
set -u
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
unset CCACHE_DISABLE CCACHE_READONLY CUDA_VISIBLE_DEVICES CTEST_RESOURCE_GROUP_COUNT
# shellcheck source=e2e_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_common.sh"
e2e_setup work
MARK="dit-ar-work-$$"
# marked: the live processes of this test's dit-ar runs (each carries WORK_QUEUE_MARK).
marked() { grep -slzF -- "WORK_QUEUE_MARK=$MARK" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr '\n' ' '; }
e2e_on_exit() { for pid in $(marked); do kill -9 "$pid" 2>/dev/null; done; }
# no_process_within SECONDS WHAT: every marked process gone within SECONDS.
no_process_within() {
  local deadline=$((SECONDS + $1))
  while [ -n "$(marked)" ] && [ $SECONDS -lt "$deadline" ]; do sleep 0.1; done
  local left
  left=$(marked)
  [ -z "$left" ] || fail "$2: processes left: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null; echo; done)"
}
# py SCRIPT ARGS...: python3 on the state directory's JSON.
py() { python3 - "$@"; }
rows_whole() {  # no run folder named twice, no torn row
  py "$STATE/results.tsv" <<'PY' || fail "results.tsv: $(cat "$STATE/results.tsv")"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[-1] == "", "torn last line"
header = lines[0].split("\t")
runs = [dict(zip(header, l.split("\t")))["run_dir"] for l in lines[1:-1]]
assert all(len(l.split("\t")) == len(header) for l in lines[1:-1]), "a row of the wrong width"
assert len(runs) == len(set(runs)), "a run recorded twice"
PY
}
no_worktree() {
  [ "$(git_ worktree list | wc -l)" -eq 1 ] || fail "$1: worktrees left: $(git_ worktree list)"
  ! ls -d "$REPO/.git/worktrees/dit-ar-worker-"* >/dev/null 2>&1 || fail "$1: worktree records left in .git/worktrees"
  ! ls -d "$STATE/workers/"*/checkout >/dev/null 2>&1 || fail "$1: a worker's checkout folder is left"
}

step "fixture repository, init, baseline"
e2e_work_fixture

step "eight candidates: seven commits on branches, one patch"
SLEEP='std::this_thread::sleep_for(std::chrono::milliseconds(image_ms()));'
candidate fast 'set_plan 15'
candidate quality 'set_engine 4'
candidate conflict 'set_plan 20'
candidate compile 'echo "#error broken" >>"$REPO/src/work.cpp"'
candidate scope 'echo note >"$REPO/notes.txt"'
candidate halve "sed -i 's|milliseconds(image_ms())|milliseconds(image_ms() / 2)|' \"\$REPO/src/work.cpp\""
candidate slower "sed -i 's|^  return image;|  std::this_thread::sleep_for(std::chrono::milliseconds(20));\n  return image;|' \"\$REPO/src/work.cpp\""
candidate slowest "sed -i 's|^  return image;|  std::this_thread::sleep_for(std::chrono::milliseconds(25));\n  return image;|' \"\$REPO/src/work.cpp\""
grep -qF "$SLEEP" "$REPO/src/work.cpp" || fail "the fixture's engine no longer sleeps as this test expects"
git_ diff "$BASE" cand/slower >"$WORK/slower.patch"
n=0
for name in fast quality conflict compile scope halve slower slowest; do
  n=$((n + 1))
  class=exact
  if [ "$name" = slower ]; then
    ar "queue-$n" queue add --classification exact --description "$name" --patch "$WORK/slower.patch"
  else
    ar "queue-$n" queue add --classification $class --description "$name" "cand/$name"
  fi
  expect_rc 0
  expect_line "status: QUEUED"
  expect_line "id: $(printf %04d $n)"
done
ar queue-list queue list
expect_rc 0
[ "$(grep -c ' pending ' "$LAST")" -eq 8 ] || fail "queue list does not show eight pending items"
ar queue-bad queue add --classification exact --description twice
expect_rc 2
expect_text "name one candidate"
ar work-gpus work --workers 3 --gpus 0,1
expect_rc 2
expect_text "two workers never time on one GPU"

step "one worker, serially"
cp -a "$STATE" "$WORK/state0"
git_ for-each-ref --format='%(objectname) %(refname)' refs/autoresearch refs/notes >"$WORK/refs0"
start=$SECONDS
ar serial work --workers 1
expect_rc 0
echo "one worker: $((SECONDS - start)) s"
expect_line "status: DRAINED"
expect_line "recorded: 8"
decisions "$WORK/serial"
cat "$WORK/serial"
expected="0001 KEEP
0002 DISCARD-QUALITY
0003 CRASH
0004 CRASH
0005 REJECTED
0006 KEEP
0007 DISCARD-PERFORMANCE
0008 DISCARD-PERFORMANCE"
[ "$(cut -d' ' -f1,2 "$WORK/serial")" = "$expected" ] || fail "the serial decisions are not the expected ones"
grep -q "rebase conflict" "$STATE/$(py "$STATE/queue.json" <<'PY'
import json, sys
print(json.load(open(sys.argv[1]))["items"][2]["decision"]["run_dir"])
PY
)/run.json" || fail "item 0003 is not a rebase conflict"
[ "$(rows)" -eq 9 ] || fail "expected 9 rows after the serial work, found $(rows)"
rows_whole
no_worktree "after one worker"
[ "$(head_sha)" = "$(best_sha)" ] || fail "the branch did not follow the best"
ar status-serial status
expect_rc 0

step "the same queue from the same state, four workers, one worker and then the coordinator killed"
rm -rf "$STATE"
cp -a "$WORK/state0" "$STATE"
git_ for-each-ref --format='%(refname)' refs/autoresearch refs/notes | while read -r ref; do git_ update-ref -d "$ref"; done
while read -r sha ref; do git_ update-ref "$ref" "$sha"; done <"$WORK/refs0"
git_ reset -q --hard "$BASE"
start=$SECONDS
LAST=$LOGS/parallel-1.out
(cd "$REPO" && exec env "WORK_QUEUE_MARK=$MARK" "$DIT_AR" work --workers 4 --gpus 0,1,2,3) >"$LAST" 2>&1 &
COORDINATOR=$!
# A worker, once two are building: a child of the coordinator (its stage supervisors, forks of
# it, have the same command line).
worker_pids() {
  for pid in $(marked); do
    [ "$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null)" = "$COORDINATOR" ] && echo "$pid"
  done
}
deadline=$((SECONDS + 60))
while [ "$(ls "$STATE"/runs/*/build.log 2>/dev/null | wc -l)" -lt 2 ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
ar lock work --workers 1
expect_rc 2
expect_text "another dit-ar is running"
VICTIM=$(worker_pids | head -n 1)
if [ -n "$VICTIM" ]; then
  kill -9 "$VICTIM"
  echo "killed worker pid $VICTIM"
else
  fail "no worker to kill"
fi
# The coordinator, once a verdict has come back (recorded as a row, or judged and waiting for
# its turn in queue.json) while workers still run: decisions are recorded in queue order, so the
# first row can come with the last verdict, when no worker is left to run.
verdict_in() { [ "$(rows)" -ge 2 ] || grep -q '"outcome": "judged"' "$STATE/queue.json" 2>/dev/null; }
deadline=$((SECONDS + 120))
while ! verdict_in && [ $SECONDS -lt $deadline ] && kill -0 "$COORDINATOR" 2>/dev/null; do sleep 0.1; done
RUNNING=$(worker_pids | wc -w)
if kill -0 "$COORDINATOR" 2>/dev/null && [ "$RUNNING" -gt 0 ]; then
  kill -9 "$COORDINATOR"
  echo "killed the coordinator after $(($(rows) - 1)) decision(s) and $(grep -c '"outcome": "judged"' "$STATE/queue.json") verdict(s), $RUNNING worker(s) running"
else
  fail "the coordinator ended (or had no worker running) before it could be killed"
fi
wait "$COORDINATOR" 2>/dev/null
no_process_within 12 "after the coordinator's kill"
rows_whole
grep -q "lost: the worker ended without a verdict (killed by signal 9)" "$STATE/queue.json" ||
  fail "the killed worker's attempt is not recorded as lost"
LAST=$LOGS/parallel-2.out
(cd "$REPO" && exec env "WORK_QUEUE_MARK=$MARK" "$DIT_AR" work --workers 4 --gpus 0,1,2,3) >"$LAST" 2>&1
RC=$?
echo "dit-ar work --workers 4 (restarted) -> exit $RC; four workers: $((SECONDS - start)) s with the kills"
expect_rc 0
expect_text "removed the worktree dit-ar-worker-"
expect_line "status: DRAINED"
decisions "$WORK/parallel"
cat "$WORK/parallel"
diff "$WORK/serial" "$WORK/parallel" || fail "four workers did not reach the serial decisions"
[ "$(rows)" -eq 9 ] || fail "expected 9 rows after the parallel work, found $(rows)"
rows_whole
no_worktree "after four workers"
no_process_within 2 "after four workers"
[ "$(head_sha)" = "$(best_sha)" ] || fail "the branch did not follow the best"
ls -d "$STATE"/runs/*.interrupted >/dev/null 2>&1 || fail "no run folder of a killed attempt was sealed"
py "$STATE/queue.json" "$STATE" <<'PY' || fail "the attempts' workers and GPUs are not as they should be"
import json, os, sys
state = sys.argv[2]
items = json.load(open(sys.argv[1]))["items"]
spans = []
workers = set()
for item in items:
    for a in item["attempts"]:
        if a["worker"] == 0:
            continue  # a rebase conflict: nothing ran
        if "ended" in a and a.get("gpu"):
            spans.append((a["gpu"], a["started"], a["ended"], item["id"]))
        workers.add(a["worker"])
    d = item["decision"]
    run = os.path.join(state, d["run_dir"])
    if d["status"] != "CRASH" or "rebase conflict" not in open(os.path.join(run, "run.json")).read():
        w = json.load(open(os.path.join(run, "worker.json")))
        assert str(w["worker"]) == d["worker"] and w["gpu"] == d["gpu"] == str(int(d["worker"]) - 1), (d, w)
        assert "beside" in w and "timed_stages" in w, w
assert len(workers) > 1, "one worker did all the work"
spans.sort()
for (g1, s1, e1, i1), (g2, s2, e2, i2) in zip(spans, spans[1:]):
    assert g1 != g2 or e1 <= s2, f"two attempts on GPU {g1} at once: {i1} and {i2}"
PY
# What ran beside a timed stage is recorded (four workers on two cores: something always does).
grep -qs '"during": "judge (fixture-perf)"' "$STATE"/runs/*/worker.json ||
  fail "no worker.json records what ran beside a timed stage"
ar status-parallel status
expect_rc 0
ar queue-final queue list --json
expect_rc 0

e2e_finish
