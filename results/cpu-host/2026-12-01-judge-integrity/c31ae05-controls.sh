#!/bin/bash
# Positive controls of the red-team suite: the same kinds of attack against c31ae05's driver on
# c31ae05's own fixture project (tests/driver/fixture there). Each control prints the decision
# and the figures c31ae05's driver recorded; against the current driver each kind ends
# REJECTED, DISCARD or CRASH (tests/driver/red_team.sh).
#   controls.sh OLD_CHECKOUT   (with OLD_CHECKOUT/build/cpu/driver/{dit-ar,dit-perf-gate} built)
set -u
OLD=$(cd "$1" && pwd)
AR=$OLD/build/cpu/driver/dit-ar
PERF_GATE=$OLD/build/cpu/driver/dit-perf-gate
WORK=$(mktemp -d /var/tmp/controls.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fresh() {
  REPO=$WORK/$1
  mkdir -p "$REPO"
  cp -r "$OLD/tests/driver/fixture/." "$REPO/"
  mv "$REPO/gitignore" "$REPO/.gitignore"
  sed -e "s|@DIT_PERF_GATE@|$PERF_GATE|" -e "s|@FIXTURE_GENERATOR@|Ninja|" "$REPO/CMakePresets.json.in" >"$REPO/CMakePresets.json"
  rm "$REPO/CMakePresets.json.in"
  git -C "$REPO" init -q -b main
  git -C "$REPO" -c user.name=c -c user.email=c@c add -A
  git -C "$REPO" -c user.name=c -c user.email=c@c commit -qm fixture
  git -C "$REPO" switch -q -c autoresearch/control
  (cd "$REPO" && "$AR" init --lane fixture >/dev/null && "$AR" baseline >/dev/null) || echo "baseline failed"
}
commit() { git -C "$REPO" -c user.name=c -c user.email=c@c commit -qam "$1"; }
run() {
  local name=$1
  (cd "$REPO" && "$AR" experiment --classification exact --description "$name") >"$WORK/$name.out" 2>&1
  printf '%-18s %-22s %s\n' "$name" "$(sed -n 's/^status: //p' "$WORK/$name.out")" \
    "$(sed -n 's/^objective: //p' "$WORK/$name.out")"
  sed -n 's/^reason: /                   reason: /p' "$WORK/$name.out" | head -2
}
set_time() { sed -i "s/double fixture_time_ms() { return [0-9.]*; }/double fixture_time_ms() { return $1; }/" "$REPO/src/work.cpp"; }
set_output() { sed -i "s/return 7 \* case_index + 3;/return 7 * case_index + $1;/" "$REPO/src/work.cpp"; }

printf '%-18s %-22s %s\n' control "c31ae05's decision" "recorded objective"
# kind 1: the gate's instructions, rewritten at configure time (DIT_RUN_DIR is in its environment)
fresh instructions
set_time 15.0
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
file(READ "$ENV{DIT_RUN_DIR}/lane.json" lane)
string(JSON lane SET "${lane}" mode "\"noise\"")
file(WRITE "$ENV{DIT_RUN_DIR}/lane.json" "${lane}")
CMAKE
commit "a slower commit that turns the comparison into an A/A noise run"; run instructions
# kind 2: a forged report, found first by path
fresh forged-report
set_time 15.0
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
file(WRITE "$ENV{DIT_RUN_DIR}/aaa/performance.json" "{\"gate\": \"performance\", \"passed\": true, \"reasons\": [], \"details\": {\"candidate\": {\"median\": 1.0}, \"best\": {\"median\": 10.0}, \"improvement_percent\": 90.0, \"p_value\": 0.0001}}")
CMAKE
commit "a slower commit with a forged performance report"; run forged-report
# kind 3: the judge's binary, replaced from mutable CMake (a wrong engine, faster)
fresh judge-binary
set_time 5.0; set_output 4
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
function(add_executable name)
  if(name STREQUAL "fixture_quality")
    file(WRITE "${CMAKE_BINARY_DIR}/pass.cpp" "int main() { return 0; }\n")
    _add_executable(${name} "${CMAKE_BINARY_DIR}/pass.cpp")
  else()
    _add_executable(${ARGV})
  endif()
endfunction()
CMAKE
commit "a wrong, faster engine with an always-passing judge"; run judge-binary
# kind 4: the best side, slowed through its build folder
fresh best-binary
cat >"$REPO/src/slow_bench.sh" <<'SH'
#!/bin/sh
# The best's benchmark, made to report 20 ms an iteration.
out=""
for a in "$@"; do case "$a" in --benchmark_out=*) out="${a#--benchmark_out=}" ;; esac; done
"$(dirname "$0")/fixture_bench.real" "$@" >/dev/null || exit 1
sed -i 's/"real_time": [0-9.]*/"real_time": 20.0/' "$out"
SH
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
if(EXISTS "$ENV{DIT_BEST_BUILD_DIR}/fixture_bench" AND NOT EXISTS "$ENV{DIT_BEST_BUILD_DIR}/fixture_bench.real")
  file(RENAME "$ENV{DIT_BEST_BUILD_DIR}/fixture_bench" "$ENV{DIT_BEST_BUILD_DIR}/fixture_bench.real")
  configure_file("${CMAKE_CURRENT_SOURCE_DIR}/slow_bench.sh" "$ENV{DIT_BEST_BUILD_DIR}/fixture_bench" COPYONLY
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endif()
CMAKE
git -C "$REPO" add -A
commit "an unchanged engine, the best's benchmark slowed"; run best-binary
# kind 5: the goldens, rewritten to a wrong engine's outputs
fresh golden-rewrite
set_time 5.0; set_output 4
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
file(WRITE "$ENV{DIT_BASELINE_DIR}/golden.txt" "4\n11\n18\n25\n")
CMAKE
commit "a wrong, faster engine that rewrites the goldens"; run golden-rewrite
# kind 6: the test set, a property no signature held (the unit test made to pass failing)
fresh test-set
set_time 5.0
sed -i 's/void fixture_work() {}/void fixture_work() { std::exit(1); }/' "$REPO/src/work.cpp"
sed -i '1i #include <cstdlib>' "$REPO/src/work.cpp"
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
set_tests_properties(unit_work PROPERTIES WILL_FAIL TRUE)
CMAKE
commit "a faster engine whose unit test fails, marked WILL_FAIL"; run test-set
# kind 7: the records, a KEEP row appended at configure time
fresh records
set_time 15.0
cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
file(APPEND "${CMAKE_SOURCE_DIR}/.autoresearch/results.tsv" "2026-12-01T00:00:00Z\t0000000000000000000000000000000000000000\t0000000000000000000000000000000000000000\tfixture\tnone\tKEEP\texact\tBM_Fixture\t10\t1\t90\t0.0001\t1\t3/3 quality tests passed\tforged\truns/forged\n")
CMAKE
commit "a slower commit that appends a KEEP row"; run records
(cd "$REPO" && "$AR" summary) > "$WORK/records-summary.out" 2>&1
echo "records: summary afterwards:"; grep -E "KEEP|kept" "$WORK/records-summary.out" | head -5
