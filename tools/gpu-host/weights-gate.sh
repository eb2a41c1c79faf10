#!/bin/bash
# Gate set `weights` on the GPU host: the session corpus at fp16 rendered from a checkpoint file
# (quality/CMakeLists.txt, DIT_GATE_WEIGHTS). Reconfigures BUILD with the file and its sha256,
# calibrates the set's floors on this GPU into the tree's contract (--write-contract; the data in
# quality/calibration/<gpu>-weights.json), then runs its CTest fixtures: render, baseline and
# every gate, with JUnit. Run from the tree's root after a full build.
#   tools/gpu-host/weights-gate.sh BUILD CHECKPOINT OUT
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: weights-gate.sh BUILD CHECKPOINT OUT" >&2; exit 2; }
build=$1 checkpoint=$2 out=$3
[ -f "$checkpoint" ] || { echo "weights-gate: no checkpoint $checkpoint" >&2; exit 2; }
checkpoint=$(cd "$(dirname "$checkpoint")" && pwd)/$(basename "$checkpoint")
mkdir -p "$out" quality/calibration || exit 2
out=$(cd "$out" && pwd)
sha=$(sha256sum "$checkpoint" | cut -d' ' -f1)
echo "weights-gate: $checkpoint sha256 $sha"
cmake "$build" -DDIT_GATE_WEIGHTS="$checkpoint" -DDIT_GATE_WEIGHTS_SHA256="$sha" >"$out/configure.log" 2>&1 \
  || { tail -20 "$out/configure.log"; exit 2; }
cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 2; }
slug=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
"$build/quality/dit-quality-render" calibrate --gate-sets "$build/quality/gate-sets.json" --set weights \
  --out "quality/calibration/$slug-weights.json" --write-contract quality/contract.json \
  --calibration-file "quality/calibration/$slug-weights.json" >"$out/calibrate.log" 2>&1
status=$?
tail -8 "$out/calibrate.log"
cp quality/contract.json "quality/calibration/$slug-weights.json" "$out/" 2>/dev/null
[ $status -eq 0 ] || exit 1
ctest --test-dir "$build" -R '^quality\.weights\.' --output-junit "$out/ctest-weights.xml" \
  --output-on-failure >"$out/ctest-weights.log" 2>&1
status=$?
grep -E "tests passed|tests failed|\(Failed\)|Skipped" "$out/ctest-weights.log" | tail -12
exit $status
