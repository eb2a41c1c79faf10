#!/bin/sh
# One lane of config/autoresearch.json on a CI runner, as dit-ar builds and tests it but without a
# decision: `cmake --workflow --preset LANE` (the lane's configure, build and test presets), then
# the lane's JUnit files and the benchmark JSON its perf presets wrote, copied into ARTIFACTS.
#   tools/ci/gpu-lane.sh LANE [ARTIFACTS]     ARTIFACTS defaults to out/ci/LANE
# Exits with the workflow's status, after copying whatever it left. tools/ci/README.md.
set -eu
cd "$(dirname "$0")/../.."
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: tools/ci/gpu-lane.sh LANE [ARTIFACTS]" >&2
  exit 2
fi
lane=$1
artifacts=${2:-out/ci/$lane}

# The lane's build folder and test presets, one a line: the build folder first.
lane_facts=$(python3 - "$lane" <<'PY'
import json, sys
lanes = json.load(open("config/autoresearch.json"))["lanes"]
if sys.argv[1] not in lanes:
    sys.exit("gpu-lane: no lane %r in config/autoresearch.json (lanes: %s)" % (sys.argv[1], ", ".join(sorted(lanes))))
print(lanes[sys.argv[1]]["build_dir"])
print("\n".join(lanes[sys.argv[1]]["test_presets"]))
PY
) || exit 2
build_dir=$(echo "$lane_facts" | sed -n 1p)
test_presets=$(echo "$lane_facts" | sed 1d)

# Each test preset writes <build>/junit/<preset>.xml (CMakePresets.json, preset `common`): clear
# them, and the benchmark JSON, so that only this run's files are copied.
for preset in $test_presets; do rm -f "$build_dir/junit/$preset.xml"; done
rm -rf "$build_dir/bench-results" "$build_dir/perf-gate/$lane"

status=0
cmake --workflow --preset "$lane" || status=$?

mkdir -p "$artifacts/junit" "$artifacts/bench" "$artifacts/logs"
junit=""
for preset in $test_presets; do
  if [ -f "$build_dir/junit/$preset.xml" ]; then
    cp "$build_dir/junit/$preset.xml" "$artifacts/junit/"
    junit="$junit $preset.xml"
  else
    echo "gpu-lane: test preset $preset wrote no JUnit (an earlier step failed?)" >&2
  fi
done
# Perf runs write <build>/bench-results/<benchmark>.json, or $DIT_OUTPUT_DIR/bench/ when set.
bench=""
for folder in "$build_dir/bench-results" "${DIT_OUTPUT_DIR:+$DIT_OUTPUT_DIR/bench}"; do
  [ -n "$folder" ] || continue
  for file in "$folder"/*.json; do
    if [ -f "$file" ]; then
      cp "$file" "$artifacts/bench/"
      bench="$bench ${file##*/}"
    fi
  done
done
# perf_gate outside dit-ar measures the lane's objective once: <build>/perf-gate/<lane>/.
for file in measurement.json benchmark.json; do
  if [ -f "$build_dir/perf-gate/$lane/$file" ]; then
    cp "$build_dir/perf-gate/$lane/$file" "$artifacts/bench/perf-gate-$file"
    bench="$bench perf-gate-$file"
  fi
done
if [ -f "$build_dir/Testing/Temporary/LastTest.log" ]; then
  cp "$build_dir/Testing/Temporary/LastTest.log" "$artifacts/logs/"
fi
{
  echo "lane: $lane"
  echo "commit: $(git rev-parse --verify -q HEAD || echo unknown)"
  echo "workflow_status: $status"
  echo "junit:$junit"
  echo "bench:$bench"
} >"$artifacts/summary.txt"
cat "$artifacts/summary.txt"
exit "$status"
