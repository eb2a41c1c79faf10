#!/bin/bash
# On the GPU host, from the checkout root (after .deps/ and .bundle/ are staged): the honest pair
# on lane a5500-session-256 under the driver before the judge-integrity change and under this
# one, then the driver's red-team suite with this driver, on this host.
#   run.sh EXPERIMENTS_DIR OUT_DIR BEFORE_REV AFTER_REV
# Per side: a clone of the bundle at REV (the side's commit with the slow baseline on top), then
# tools/gpu-host/research-session.sh with that commit's own driver: baseline, then the
# experiments in EXPERIMENTS_DIR in order (0001 drops the clears, 0002 is its revert). Results in
# OUT_DIR/<side>. Then, in the "after" clone's build: driver_red_team and driver_core_test with
# their JUnit in OUT_DIR. ccache is off on both sides, so every build is a real compile.
set -uo pipefail
experiments=$(cd "$1" && pwd); out=$2; before=$3; after=$4
root=$PWD
mkdir -p "$out"; out=$(cd "$out" && pwd)
. .deps/env.sh >/dev/null
mkdir -p /tmp/jt-bin && cp .deps/root/usr/bin/bwrap /tmp/jt-bin/ && export PATH="/tmp/jt-bin:$PATH"
export CCACHE_DISABLE=1
work=${JT_WORK:-/tmp/judge-timing}
rm -rf "$work"; mkdir -p "$work"
{ echo "bwrap: $(command -v bwrap) $(bwrap --version 2>&1)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } >"$out/host.txt" 2>&1
session() {
  local side=$1 rev=$2 clone=$work/$1 start
  git clone -q "$root/.bundle/repo.bundle" "$clone" && git -C "$clone" checkout -q -B "session-$side" "$rev" || { echo "clone $side failed" | tee -a "$out/sides.txt"; return; }
  cp -r "$root/.deps" "$clone/.deps"
  git -C "$clone" config user.email research-session@localhost
  git -C "$clone" config user.name research-session
  start=$(date +%s)
  (cd "$clone" && bash tools/gpu-host/research-session.sh --tag "timing-$side" --from HEAD --lane a5500-session-256 \
      --experiments "$experiments" --out "$out/$side") >"$out/$side.log" 2>&1
  echo "$side: exit $? in $(( $(date +%s) - start )) s" | tee -a "$out/sides.txt"
}
[ -n "${JT_SKIP_AFTER:-}" ] || session after "$after"
if [ -z "${JT_SKIP_TESTS:-}" ]; then
  clone=$work/after
  start=$(date +%s)
  (cd "$clone" && cmake --build build/a5500 --target dit-ar dit-perf-gate driver_core_test -j "$(nproc)" >"$out/driver-tests-build.log" 2>&1 \
    && ctest --test-dir build/a5500 -R '^(driver_red_team|driver_core_test)$' \
         --output-junit "$out/ctest-driver.xml" --output-on-failure >"$out/ctest-driver.log" 2>&1)
  echo "driver tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$out/sides.txt"
fi
[ -n "${JT_SKIP_BEFORE:-}" ] || session before "$before"
touch "$out/done"
