# shellcheck shell=bash
# Shared by this folder's end-to-end scripts (sourced, not run): the temporary fixture repository
# and the helpers that drive dit-ar on it and check what it did. The sourcing script sets
# DIT_AR, PERF_GATE and FIXTURE first, then calls e2e_setup NAME and e2e_fixture_repo.
# DIT_AR_E2E_NO_CLEANUP=1 keeps the temporary folder (its path is printed) for debugging.

# e2e_setup NAME: creates WORK (removed on exit), REPO, STATE (the state directory), LOGS.
# A script may define e2e_on_exit, run first on exit. WORK is made under $DIT_AR_E2E_TMPDIR,
# default /var/tmp, not /tmp (nor $TMPDIR): dit-ar's sandbox gives candidate processes a
# private /tmp, in which a repository under /tmp would not exist.
e2e_setup() {
  WORK=$(mktemp -d "${DIT_AR_E2E_TMPDIR:-/var/tmp}/dit-ar-$1.XXXXXX")
  REPO=$WORK/repo
  STATE=$REPO/.autoresearch
  LOGS=$WORK/logs
  FAILURES=0
  mkdir -p "$REPO" "$LOGS"
  trap e2e_exit EXIT
}
e2e_exit() {
  if declare -F e2e_on_exit >/dev/null; then e2e_on_exit; fi
  if [ -n "${DIT_AR_E2E_NO_CLEANUP:-}" ]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}

fail() {
  echo "FAIL: $*"
  FAILURES=$((FAILURES + 1))
  if [ -n "${LAST:-}" ] && [ -f "$LAST" ] && [ "${SHOWN_LAST:-}" != "$LAST" ]; then
    SHOWN_LAST=$LAST
    echo "---- output of the last dit-ar command ($LAST) ----"
    cat "$LAST"
    echo "----"
  fi
  e2e_show_crashes
}
# e2e_show_crashes: once per state directory, the reasons of every run recorded as CRASH in it
# (run.json) and the last lines of each log a reason names, so that a failure on a machine whose
# temporary folder is gone (CI) still says why a candidate crashed.
e2e_show_crashes() {
  [ -n "${STATE:-}" ] && [ -d "$STATE/runs" ] && [ "${SHOWN_CRASHES:-}" != "$STATE" ] || return 0
  SHOWN_CRASHES=$STATE
  python3 - "$STATE/runs" <<'PY'
import glob, json, os, re, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "run.json"))):
    try:
        run = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"---- {path}: unreadable ({error})")
        continue
    if run.get("status") != "CRASH":
        continue
    print(f"---- CRASH {run.get('run_dir')} ({run.get('description')}):")
    for reason in run.get("reasons", []):
        print(f"  {reason}")
        for log in re.findall(r"(/\S+\.log)\b", reason):
            if os.path.isfile(log):
                lines = open(log, encoding="utf-8", errors="replace").read().splitlines()
                print(f"  -- last lines of {log}:")
                for line in lines[-25:]:
                    print(f"    {line}")
PY
  echo "----"
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
# expect_line_re REGEX / expect_text_re REGEX: the same with an extended regular expression.
expect_line_re() { grep -qxE -- "$1" "$LAST" || fail "expected a line matching '$1'"; }
expect_text_re() { grep -qE -- "$1" "$LAST" || fail "expected text matching '$1'"; }
# status_of FILE: the decision of dit-ar's output in FILE (its last `status:` line).
status_of() { sed -n 's/^status: //p' "$1" | tail -n 1; }
# decision_rc DECISION: the exit code of a command that decided DECISION (README.md, "Exit codes").
decision_rc() {
  case "$1" in
    KEEP) echo 0 ;;
    DISCARD-QUALITY | DISCARD-PERFORMANCE) echo 3 ;;
    CRASH) echo 4 ;;
    REJECTED) echo 5 ;;
    *) echo "none (not a decision: '$1')" ;;
  esac
}

git_() { git -C "$REPO" "$@"; }
head_sha() { git_ rev-parse HEAD; }
best_sha() { git_ rev-parse -q --verify refs/autoresearch/best; }
rows() { if [ -f "$STATE/results.tsv" ]; then echo $(($(wc -l <"$STATE/results.tsv") - 1)); else echo 0; fi; }
# row_field N COLUMN: the value of COLUMN in data row N (1-based).
row_field() {
  awk -F'\t' -v row="$1" -v column="$2" 'NR == 1 { for (i = 1; i <= NF; i++) index_of[$i] = i; next }
    NR == row + 1 { print $(index_of[column]) }' "$STATE/results.tsv"
}
# run_dir_of N: the absolute run directory of data row N.
run_dir_of() { echo "$STATE/$(row_field "$1" run_dir)"; }
expect_row() {  # expect_row N STATUS CLASSIFICATION COMMIT
  [ "$(rows)" -eq "$1" ] || fail "expected $1 rows in results.tsv, found $(rows)"
  [ "$(row_field "$1" status)" = "$2" ] || fail "row $1: status '$(row_field "$1" status)', expected '$2'"
  [ "$(row_field "$1" classification)" = "$3" ] || fail "row $1: classification '$(row_field "$1" classification)', expected '$3'"
  [ "$(row_field "$1" commit)" = "$4" ] || fail "row $1: commit '$(row_field "$1" commit)', expected '$4'"
  [ -d "$STATE/$(row_field "$1" run_dir)" ] || fail "row $1: run directory '$(row_field "$1" run_dir)' missing"
  git_ notes --ref=autoresearch show "$4" 2>/dev/null | grep -qF "\"status\": \"$2\"" ||
    fail "row $1: no git note with status $2 on $4"
}
# expect_number_between VALUE LOW HIGH WHAT: a measured number within [LOW, HIGH].
expect_number_between() {
  awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v + 0 == v && v >= lo && v <= hi) }' ||
    fail "$4 is '$1', expected between $2 and $3"
}
# expect_report FILE PASSED: a gate report {"gate","passed",...} with "passed": PASSED.
expect_report() {
  if [ ! -f "$1" ]; then
    fail "no gate report at $1"
  elif ! grep -qE "\"passed\": *$2" "$1"; then
    fail "the gate report $1 does not say \"passed\": $2: $(head -c 400 "$1")"
  fi
}

# commit_change MESSAGE: commits the working tree's changes.
commit_change() { git_ add -A && git_ commit -q -m "$1"; }
# set_plan MS: the engine's plan, the milliseconds one timed image really takes (src/plans.txt).
set_plan() { sed -i "s/^image_ms .*/image_ms $1/" "$REPO/src/plans.txt"; }
# set_engine OFFSET: the engine's model is 7 * value + OFFSET (3 is the baseline's: other
# values change every rendered case and every timed image).
set_engine() { sed -i "s/return 7 \* value + [0-9]*; }/return 7 * value + $1; }/" "$REPO/src/work.cpp"; }
# expect_discarded SHA BEST: the branch is back at BEST and SHA is archived.
expect_discarded() {
  [ "$(head_sha)" = "$2" ] || fail "the branch was not reset to the best ($2); HEAD is $(head_sha)"
  [ "$(best_sha)" = "$2" ] || fail "refs/autoresearch/best moved to $(best_sha)"
  [ "$(git_ rev-parse -q --verify "refs/autoresearch/discarded/$1")" = "$1" ] ||
    fail "refs/autoresearch/discarded/$1 missing"
  [ -z "$(git_ status --porcelain)" ] || fail "the working tree is not clean after the reset"
}

# e2e_fixture_repo: the fixture project as a git repository in REPO, on branch main, one commit.
e2e_fixture_repo() {
  cp -r "$FIXTURE/." "$REPO/"
  mv "$REPO/gitignore" "$REPO/.gitignore"
  local generator="Unix Makefiles"
  command -v ninja >/dev/null 2>&1 && generator=Ninja
  sed -e "s|@DIT_PERF_GATE@|$PERF_GATE|" -e "s|@FIXTURE_GENERATOR@|$generator|" "$REPO/CMakePresets.json.in" \
    >"$REPO/CMakePresets.json"
  rm "$REPO/CMakePresets.json.in"
  git_ init -q -b main
  git_ config user.name "dit-ar e2e"
  git_ config user.email "e2e@localhost"
  commit_change "fixture project"
}

# e2e_work_fixture: for the tests of dit-ar work (work_queue.sh, slurm_work.sh), the fixture
# repository on a branch autoresearch/work (BASE its commit), dit-ar init and the baseline.
e2e_work_fixture() {
  e2e_fixture_repo
  # Several workers share two cores here: a process's untimed start-up varies by more than the
  # fixture's 30 ms allowance, which these tests do not exercise.
  sed -i 's/"max_untimed_growth_seconds": 0.03/"max_untimed_growth_seconds": 0.5/' "$REPO/config/autoresearch.json"
  commit_change "fixture: the untimed allowance of a loaded machine"
  git_ switch -q -c autoresearch/work
  BASE=$(head_sha)
  ar init init
  expect_rc 0
  ar baseline baseline
  expect_rc 0
  expect_line "status: KEEP"
}
# candidate NAME CHANGE: a branch cand/NAME from BASE with what the shell code CHANGE does committed.
candidate() {
  git_ switch -q -c "cand/$1" "$BASE"
  eval "$2"
  commit_change "$1"
  git_ switch -q autoresearch/work
}
# decisions FILE: "id status commit" per item of queue.json, into FILE.
decisions() {
  python3 - "$STATE/queue.json" >"$1" <<'PY'
import json, sys
for item in json.load(open(sys.argv[1]))["items"]:
    d = item["decision"] or {}
    print(item["id"], d.get("status", "undecided"), d.get("commit", "-"))
PY
}

# e2e_finish: the verdict and exit code.
e2e_finish() {
  echo
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
