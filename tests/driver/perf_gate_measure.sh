#!/bin/bash
# dit-perf-gate outside dit-ar (no DIT_JUDGE_DIR), as a lane's workflow preset runs it: with
# DIT_PERF_LANE it measures the lane's objective once and writes measurement.json (exit 0); an
# unknown lane is exit 2 naming the known ones; without DIT_PERF_LANE it skips (77).
# Usage: perf_gate_measure.sh DIT_PERF_GATE CONFIG BUILD_DIR (the cpu-smoke lane's objective,
# bench/bench_cpu, built in BUILD_DIR)
set -u
GATE=$1 CONFIG=$2 BUILD=$3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
unset DIT_JUDGE_DIR

env -u DIT_PERF_LANE DIT_PERF_CONFIG="$CONFIG" DIT_PERF_BUILD_DIR="$BUILD" "$GATE" >"$out/skip.log" 2>&1
rc=$?
[ "$rc" -eq 77 ] || fail "without DIT_PERF_LANE: exit $rc, expected 77 (skipped)"
grep -q "skipped: no DIT_JUDGE_DIR and no DIT_PERF_LANE" "$out/skip.log" || fail "the skip does not say why"

DIT_PERF_LANE=no-such-lane DIT_PERF_CONFIG="$CONFIG" DIT_PERF_BUILD_DIR="$BUILD" "$GATE" >"$out/unknown.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "an unknown lane: exit $rc, expected 2"
grep -q "no-such-lane" "$out/unknown.log" || fail "the unknown lane is not named: $(cat "$out/unknown.log")"

DIT_PERF_LANE=cpu-smoke DIT_PERF_CONFIG="$CONFIG" DIT_PERF_BUILD_DIR="$BUILD" "$GATE" >"$out/measure.log" 2>&1
rc=$?
cat "$out/measure.log"
[ "$rc" -eq 0 ] || fail "measuring lane cpu-smoke: exit $rc, expected 0"
measurement=$BUILD/perf-gate/cpu-smoke/measurement.json
if [ -f "$measurement" ]; then
  python3 - "$measurement" <<'PY' || fail "measurement.json does not hold a positive median of the lane's objective"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["lane"] == "cpu-smoke" and m["objective"] == "BM_CpuForward/batch:1", m
assert m["median"] > 0 and len(m["values"]) >= 1 and m["decision"] is None, m
PY
else
  fail "no $measurement"
fi
[ "$failures" -eq 0 ] && echo "perf_gate_measure: all checks passed"
exit $((failures > 0))
