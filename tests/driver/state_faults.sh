#!/bin/bash
# Faults beyond signals in dit-ar's state directory, on the fixture project
# (tests/driver/fixture): a failing fsync, a short write, and a full disk. Each must end the
# run with exit 2 and an error naming the file (never a decision recorded for the commit),
# leave every record whole (results.tsv byte-identical to before, no temporary file beside the
# JSON records), and the rerun of the same command must finish what was left (the recording,
# or the run itself) with exactly one row.
#   - fsync and short writes: fault_injection.cpp, built here and loaded with LD_PRELOAD into
#     dit-ar only, fails fsync (EIO) or cuts a write short then fails the next (ENOSPC) on the
#     file named by DIT_TEST_FSYNC_FAIL / DIT_TEST_WRITE_FULL: session.json in the baseline's
#     recording, inflight.json, run.json, best.json and results.tsv in experiments.
#   - a full disk: the state directory is moved onto a small tmpfs, in a mount namespace of
#     this test (`unshare -rm`, else bubblewrap's --size --tmpfs), filled to leave a few bytes
#     to a few MiB free before each experiment; then the space is freed and the experiment
#     rerun. Skipped, with a message, where neither can mount a tmpfs.
# Usage: state_faults.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
# STATE_FAULTS_MOUNT=bwrap takes bubblewrap even where unshare works.
# DIT_AR_E2E_NO_CLEANUP=1 keeps the temporary repository (its path is printed).
set -u
# Inside the mount namespace (the full-disk cases), the script runs itself again.
if [ "${1:-}" = --full-disk ]; then
  INSIDE=$2
  shift 2
fi
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
# shellcheck source=e2e_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_common.sh"
SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
BRANCH=autoresearch/state-faults
EXPERIMENT=(experiment --classification exact)

# vary MS: a faster plan and a rebuilt engine (a comment in work.cpp), committed.
vary() {
  set_plan "$1"
  echo "// variant $1" >>"$REPO/src/work.cpp"
  commit_change "plan $1"
}
# fault_run NAME VARIABLE=VALUE... -- ARGS...: dit-ar ARGS with the fault library loaded.
fault_run() {
  local name=$1
  shift
  local settings=()
  while [ "$1" != -- ]; do
    settings+=("$1")
    shift
  done
  shift
  LAST=$LOGS/$name.out
  (cd "$REPO" && env LD_PRELOAD="$FAULTS" "${settings[@]}" "$DIT_AR" "$@") >"$LAST" 2>&1
  RC=$?
  echo "dit-ar $* (${settings[*]}) -> exit $RC"
}
# save_records: copies of the records, for unchanged_records.
save_records() {
  rm -rf "$WORK/records" && mkdir -p "$WORK/records"
  for file in results.tsv best.json session.json; do
    [ -f "$STATE/$file" ] && cp "$STATE/$file" "$WORK/records/$file"
  done
}
# unchanged_records WHAT FILE...: each FILE (results.tsv, best.json, session.json) as saved.
unchanged_records() {
  local what=$1
  shift
  for file in "$@"; do
    if [ -f "$WORK/records/$file" ]; then
      cmp -s "$WORK/records/$file" "$STATE/$file" || fail "$what: $file changed (a torn or partial record)"
    else
      [ ! -e "$STATE/$file" ] || fail "$what: $file appeared"
    fi
  done
}
# whole_records WHAT: results.tsv whole rows of 16 fields, no temporary files, records readable.
whole_records() {
  local file=$STATE/results.tsv
  if [ -f "$file" ]; then
    [ -z "$(tail -c 1 "$file")" ] || fail "$1: results.tsv ends in a torn line"
    awk -F'\t' 'NF != 16 { bad = 1 } END { exit bad }' "$file" || fail "$1: a results.tsv line has not 16 fields"
    [ -z "$(awk -F'\t' 'NR > 1 { print $16 }' "$file" | sort | uniq -d)" ] || fail "$1: a run has two rows"
  fi
  local temporaries
  temporaries=$(find "$STATE" "$STATE/best" -maxdepth 1 -name '*.tmp.*' 2>/dev/null)
  [ -z "$temporaries" ] || fail "$1: temporary files left beside the records: $temporaries"
  (cd "$REPO" && "$DIT_AR" status) >"$LOGS/status.out" 2>&1 || fail "$1: dit-ar status cannot read the records: $(cat "$LOGS/status.out")"
}
# expect_error TEXT...: exit 2, the error line ("dit-ar <command>: ...") holding every TEXT.
expect_error() {
  expect_rc 2
  local line
  line=$(grep -E '^dit-ar (experiment|baseline): ' "$LAST" | tail -n 1)
  [ -n "$line" ] || fail "no error line from dit-ar"
  echo "  $line"
  for text in "$@"; do
    case $line in *"$text"*) ;; *) fail "the error does not say '$text': $line" ;; esac
  done
}
inflight_phase() { sed -n 's/.*"phase": "\([a-z]*\)".*/\1/p' "$STATE/inflight.json" 2>/dev/null; }
# decided_by_measurement FILE: the run in FILE decided KEEP, or DISCARD-PERFORMANCE for a
# measured reason (the performance gate on a loaded machine), not for missing outputs.
decided_by_measurement() {
  [ "$(status_of "$1")" = KEEP ] && return 0
  [ "$(status_of "$1")" = DISCARD-PERFORMANCE ] &&
    grep -qE '^reason: .*(untimed time grew|regressed|improved only|no significant difference)' "$1"
}
# expect_recorded WHAT ROWS: row ROWS is COMMIT's, KEEP (the best moved to it) or a measured
# DISCARD-PERFORMANCE (the branch back at the best); the worktree clean, the records whole.
expect_recorded() {
  [ "$(rows)" -eq "$2" ] || fail "$1: $(rows) rows, expected $2"
  [ "$(row_field "$2" commit)" = "$COMMIT" ] || fail "$1: row $2 is not $COMMIT's"
  case $(row_field "$2" status) in
    KEEP) [ "$(best_sha)" = "$COMMIT" ] || fail "$1: refs/autoresearch/best is not $COMMIT" ;;
    DISCARD-PERFORMANCE)
      echo "  (the performance gate did not find $COMMIT faster on this machine now: the branch is back at the best)"
      expect_discarded "$COMMIT" "$BEST_BEFORE"
      ;;
    *) fail "$1: row $2 says $(row_field "$2" status)" ;;
  esac
  [ -z "$(git_ status --porcelain)" ] || fail "$1: the worktree is not clean"
  whole_records "$1"
}
# rerun_decides NAME ROWS: the same experiment again, without faults: it decides (or, when its
# decision was being recorded, finishes the recording and finds nothing left to test); ROWS rows.
rerun_decides() {
  ar "$1" "${EXPERIMENT[@]}" --description "$DESCRIPTION"
  if grep -qF "finishing the recording of" "$LAST"; then
    expect_rc 2
    expect_text "nothing to test: HEAD is the best commit"
  else
    decided_by_measurement "$LAST" || fail "$1: the rerun did not decide by measurement: $(status_of "$LAST")"
  fi
  expect_recorded "$1" "$2"
}
# new_experiment MS: commits the next hypothesis (COMMIT, DESCRIPTION, ROWS the rows before,
# BEST_BEFORE).
new_experiment() {
  BEST_BEFORE=$(best_sha)
  vary "$1"
  COMMIT=$(head_sha)
  DESCRIPTION="plan $1"
  ROWS=$(rows)
  save_records
}

# ---- The full-disk cases, inside the mount namespace: STATE is on a tmpfs of DISK_BYTES.
full_disk_cases() {
  FAILURES=0
  # Bytes left free before each experiment (none; less than a compiled object; less than the
  # build; less than the performance gate's outputs; enough), each with a faster plan (ms).
  local plans=(5 4 3 2 1 1) case=0
  for free in 0 4096 16384 32768 65536 16777216; do
    step "a full disk: $free bytes left on the state directory's file system"
    new_experiment "${plans[$case]}"
    case=$((case + 1))
    rm -f "$STATE/filler"
    dd if=/dev/zero of="$STATE/filler" bs=65536 2>/dev/null
    [ "$free" -gt 0 ] && truncate -s "-$free" "$STATE/filler"
    echo "  $(df -k --output=avail "$STATE" | tail -n 1) KiB available"
    ar "full-$free" "${EXPERIMENT[@]}" --description "$DESCRIPTION"
    case $RC in
      2)
        expect_error "No space left on device" "$STATE"
        unchanged_records "a full disk ($free bytes)" results.tsv best.json session.json
        # A run refused after its stages ("was not judged"): whatever a configure wrote during it may
        # be torn (CMake reports success over a CMakeCache.txt the full disk cut short), so the next
        # run configures from an empty folder.
        grep -qF "was not judged" "$LAST" && for stamp in "$STATE"/candidate/src/build/*.dit-ar-configured "$STATE"/best/src/build/*.dit-ar-configured; do
          [ ! -e "$stamp" ] || fail "a full disk ($free bytes): $stamp is left, so a torn configure would be reused"
        done
        ;;
      0 | 3)
        decided_by_measurement "$LAST" ||
          fail "a full disk ($free bytes): exit $RC, a decision that is not the commit's: $(status_of "$LAST")"
        ;;
      *) fail "a full disk ($free bytes): exit $RC" ;;
    esac
    whole_records "a full disk ($free bytes)"
    local decided=$RC
    rm -f "$STATE/filler"
    if [ "$decided" -eq 2 ]; then
      rerun_decides "full-$free-rerun" $((ROWS + 1))
    else
      expect_recorded "a full disk ($free bytes)" $((ROWS + 1))
    fi
  done
  echo "FULL_DISK_FAILURES=$FAILURES"
  exit $((FAILURES > 0))
}
if [ -n "${INSIDE:-}" ]; then
  if [ "$INSIDE" = unshare ]; then
    # A tmpfs with a copy of the state directory, bound over it (the builds' absolute paths hold).
    mount -t tmpfs -o "size=$DISK_BYTES" tmpfs "$WORK/disk" || exit 1
    cp -a "$STATE/." "$WORK/disk/" || exit 1
    mount --bind "$WORK/disk" "$STATE" || exit 1
  else
    # bubblewrap mounted the tmpfs over STATE and the state directory's files at WORK/state-on-disk.
    cp -a "$WORK/state-on-disk/." "$STATE/" || exit 1
  fi
  full_disk_cases
fi

e2e_setup state-faults
step "the fault library"
FAULTS=$WORK/fault_injection.so
"${CXX:-c++}" -shared -fPIC -O1 -o "$FAULTS" "$(dirname "$SCRIPT")/fault_injection.cpp" -ldl >"$LOGS/faults.log" 2>&1 ||
  { fail "cannot build the fault library: $(cat "$LOGS/faults.log")"; e2e_finish; }

step "fixture repository, init"
e2e_fixture_repo
git_ switch -q -c "$BRANCH"
ar init init
expect_rc 0
[ "$RC" -eq 0 ] || e2e_finish
INIT=$(head_sha)

step "the baseline: session.json's fsync fails while it is recorded -> exit 2; the rerun finishes it"
# The first matching fsync is the judge's record in session.json; the second, the baseline's.
fault_run baseline-fsync DIT_TEST_FSYNC_FAIL=session.json DIT_TEST_FSYNC_SKIP=1 -- baseline
expect_error "session.json" "fsync" "Input/output error"
[ "$(inflight_phase)" = recording ] || fail "inflight.json does not hold the baseline's recording"
grep -q '"baseline"' "$STATE/session.json" && fail "session.json holds a baseline its failed write should not have left"
whole_records "the baseline's failed session.json"
ar baseline-rerun baseline
expect_rc 2
expect_text "finishing the recording of ${INIT:0:8} (KEEP)"
expect_text "the baseline is already recorded"
expect_row 1 KEEP baseline "$INIT"
[ "$(best_sha)" = "$INIT" ] || fail "refs/autoresearch/best is not the baseline commit"
grep -q '"baseline"' "$STATE/session.json" || fail "session.json has no baseline after the rerun"
whole_records "the baseline's rerun"

step "inflight.json's fsync fails at the start -> exit 2, nothing recorded; the rerun seals the run folder and decides"
new_experiment 24
fault_run inflight-fsync DIT_TEST_FSYNC_FAIL=inflight.json -- "${EXPERIMENT[@]}" --description "$DESCRIPTION"
expect_error "inflight.json" "fsync" "Input/output error"
[ ! -e "$STATE/inflight.json" ] || fail "inflight.json was written although its fsync failed"
unchanged_records "inflight.json's fsync" results.tsv best.json session.json
whole_records "inflight.json's fsync"
ABANDONED=$(ls -d "$STATE"/runs/*/ | tail -n 1)
rerun_decides inflight-rerun $((ROWS + 1))
expect_text "sealed runs/$(basename "$ABANDONED") "
[ -f "${ABANDONED%/}" ] && [ -f "${ABANDONED%/}.interrupted/interrupted.json" ] || fail "the abandoned run folder was not sealed"

step "run.json's fsync fails after the decision -> exit 2, nothing recorded; the rerun runs it again"
new_experiment 18
fault_run run-json-fsync DIT_TEST_FSYNC_FAIL=run.json -- "${EXPERIMENT[@]}" --description "$DESCRIPTION"
expect_error "run.json" "fsync" "Input/output error"
[ "$(inflight_phase)" = running ] || fail "inflight.json does not hold the run"
unchanged_records "run.json's fsync" results.tsv best.json session.json
whole_records "run.json's fsync"
rerun_decides run-json-rerun $((ROWS + 1))
expect_text "was interrupted"

step "best.json's fsync fails while a KEEP is recorded -> exit 2; the rerun finishes the recording"
new_experiment 10
fault_run best-fsync DIT_TEST_FSYNC_FAIL=best.json -- "${EXPERIMENT[@]}" --description "$DESCRIPTION"
expect_error "best.json" "fsync" "Input/output error"
[ "$(inflight_phase)" = recording ] || fail "inflight.json does not hold the recording"
unchanged_records "best.json's fsync" results.tsv best.json session.json
whole_records "best.json's fsync"
rerun_decides best-rerun $((ROWS + 1))
[ "$(row_field "$((ROWS + 1))" status)" != KEEP ] || grep -qF "\"commit\": \"$COMMIT\"" "$STATE/best.json" ||
  fail "best.json does not name $COMMIT after the rerun"

step "results.tsv's fsync fails -> exit 2, the file cut back to its rows; the rerun appends the row once"
new_experiment 8
fault_run results-fsync DIT_TEST_FSYNC_FAIL=results.tsv -- "${EXPERIMENT[@]}" --description "$DESCRIPTION"
expect_error "results.tsv" "fsync" "Input/output error" "the file is left as it was"
[ "$(inflight_phase)" = recording ] || fail "inflight.json does not hold the recording"
unchanged_records "results.tsv's fsync" results.tsv
whole_records "results.tsv's fsync"
rerun_decides results-rerun $((ROWS + 1))

step "results.tsv's append cut short by a full disk -> exit 2, the torn row cut off; the rerun appends it once"
new_experiment 6
fault_run results-short DIT_TEST_WRITE_FULL=results.tsv -- "${EXPERIMENT[@]}" --description "$DESCRIPTION"
expect_error "results.tsv" "write" "No space left on device"
unchanged_records "results.tsv's short write" results.tsv
whole_records "results.tsv's short write"
rerun_decides results-short-rerun $((ROWS + 1))

step "a full disk: the state directory on a small tmpfs"
STATE_KIB=$(du -sk "$STATE" | cut -f1)
export DISK_BYTES=$(((STATE_KIB + 48 * 1024) * 1024))
export WORK REPO STATE LOGS
mkdir -p "$WORK/disk" "$WORK/state-on-disk"
if [ "${STATE_FAULTS_MOUNT:-}" != bwrap ] &&
  unshare -rm sh -c 'mount -t tmpfs -o size=1m tmpfs "$1"' sh "$WORK/disk" 2>/dev/null; then
  echo "unshare -rm: the state directory ($STATE_KIB KiB) on a tmpfs of $((DISK_BYTES >> 20)) MiB"
  unshare -rm bash "$SCRIPT" --full-disk unshare "$DIT_AR" "$PERF_GATE" "$FIXTURE" 2>&1 | tee "$LOGS/full-disk.out"
elif bwrap --dev-bind / / --size 1048576 --tmpfs "$WORK/disk" true 2>/dev/null; then
  echo "bubblewrap: the state directory ($STATE_KIB KiB) on a tmpfs of $((DISK_BYTES >> 20)) MiB"
  bwrap --dev-bind / / --bind "$STATE" "$WORK/state-on-disk" --size "$DISK_BYTES" --tmpfs "$STATE" \
    bash "$SCRIPT" --full-disk bwrap "$DIT_AR" "$PERF_GATE" "$FIXTURE" 2>&1 | tee "$LOGS/full-disk.out"
else
  echo "SKIPPED: neither \`unshare -rm\` nor bubblewrap (--size --tmpfs) can mount a tmpfs here; the full-disk cases did not run"
  : >"$LOGS/full-disk.out"
  echo "FULL_DISK_FAILURES=0" >"$LOGS/full-disk.out"
fi
full_disk_failures=$(sed -n 's/^FULL_DISK_FAILURES=//p' "$LOGS/full-disk.out")
[ -n "$full_disk_failures" ] || fail "the full-disk cases did not finish (see above)"
FAILURES=$((FAILURES + ${full_disk_failures:-0}))

e2e_finish
