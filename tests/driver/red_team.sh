#!/bin/bash
# Red-team test of dit-ar's judging (judge-spec.md): on a temporary git repository holding the
# fixture project (tests/driver/fixture), one attack commit per case, each touching only the
# mutable src/ (its CMakeLists.txt at configure time, or work.cpp at run time), is judged with
# `dit-ar experiment`. Every case asserts that
#   - the decision is REJECTED, DISCARD-QUALITY, DISCARD-PERFORMANCE or CRASH, never KEEP, and
#     is the one the case expects (some cases accept two: the attack refused by the sandbox, or
#     done and then detected), with a reason naming the defence (the P_* phrases below);
#   - refs/autoresearch/best did not move, and results.tsv gained exactly the case's row;
#   - the goldens (baseline/), the records (session.json, best.json, results.tsv but the new
#     row), the fixed paths of the user's checkout, the best build (best/) and the judge build
#     (judge/, CTest's Testing/ logs aside) are byte-identical to before (sha256 snapshots);
#   - no process the attack started is left.
# Each case's snapshot is taken just before it, so a change is blamed on the case that made it
# (nothing is repaired: what the driver leaves behind is what the next case starts from).
# Then a faster honest candidate must still be KEEP. Where bwrap works, all this runs twice,
# each pass on a fresh repository: with dit-ar's sandbox (the attack's writes are refused), then
# with DIT_AR_SANDBOX=off (they are done, and the driver's checks after the run must catch and
# undo them). A summary table is printed; the exit code is non-zero on any failure.
# Usage: red_team.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
# RED_TEAM_CASES="3 8 control" runs only those cases (the warm-up, case 0, always runs);
# RED_TEAM_PASSES="sandbox" or "unsandboxed" only that pass.
# DIT_AR_E2E_NO_CLEANUP=1 keeps the temporary repository (its path is printed).
set -u
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3

# ---- The driver's wording: extended regular expressions (grep -E) searched in dit-ar's whole
# output. Align them with driver/.
P_SLOWER='median regressed'                                          # a slower candidate
P_NOT_FASTER='no significant difference|improved only|regressed'     # not faster than the best
P_QUALITY='(quality_output|critical_case_zero) failed'               # a quality gate failed
P_TIMED_OUTPUTS='timed outputs differ from the best'                 # the perf gate's output check
P_UNTIMED='untimed time grew'                                        # the perf gate's wall-time check
P_TEST_SET='test set|gate test|listing'                              # the test-set signature
P_INSTRUCTIONS='perf-request\.json|lane\.json|performance\.json'     # the judge's files changed
P_GOLDEN='golden'                                                    # goldens changed
P_RECORDS='results\.tsv|session\.json|best\.json'                    # records changed
P_CHECKOUT_TAMPER='tests/unit\.cpp|tests/NOTES\.txt|checkout'        # the user's checkout changed
P_BEST_TAMPER='best (build|tree)|best/'                              # the best build changed
P_JUDGE_TAMPER='judge (build|file)|judge/'                           # the judge build changed
P_LIVE_EDIT='src/work\.cpp'                                          # case 15: the edited file named
# Files of the snapshots that may change in any run (a regex on '<sha256>  <part>/<path>'): CTest's
# logs in the judge's build, and the bookkeeping a rebuild rewrites when the driver rebuilds the
# best or the judge after catching a tampered one (the binaries themselves, and any file a run
# leaves behind, are compared).
SNAPSHOT_EXCLUDE='/Testing/|/\.ninja_log$|/\.ninja_deps$|/build\.ninja$|/CMakeFiles/|  best/built\.json$'

# The sandboxed pass alone where bwrap cannot make a sandbox (the probe dit-ar makes): there is
# nothing to test, which CTest is told with its skip code (dit-ar runs unsandboxed there, and the
# unsandboxed pass is the one that tests it).
bwrap_works() { bwrap --ro-bind / / --dev /dev --proc /proc --unshare-net true >/dev/null 2>&1; }
if [ "${RED_TEAM_PASSES:-}" = sandbox ] && ! bwrap_works; then
  echo "red_team: skipped: bwrap cannot make a sandbox on this host, so there is no sandboxed pass to run"
  exit 77
fi

# shellcheck source=e2e_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_common.sh"
e2e_setup red-team
MARKER=red-team-daemon-$$
BRANCH=autoresearch/red-team
FIXED_PATHS=(CMakeLists.txt CMakePresets.json cmake tools tests config quality README.md .gitignore)
SUMMARY=()

# Processes the attacks started (the daemon of case 2 carries MARKER in its command line).
leftovers() { pgrep -f -- "$MARKER" 2>/dev/null | tr '\n' ' '; }
kill_leftovers() { for pid in $(leftovers); do kill -9 "$pid" 2>/dev/null; done; }
e2e_on_exit() { kill_leftovers; }

wanted() {
  [ -z "${RED_TEAM_CASES:-}" ] && return 0
  for id in $RED_TEAM_CASES; do [ "$id" = "$1" ] && return 0; done
  return 1
}

# ---- Snapshots
# hash_tree LABEL PATH: one line per file (sha256) or link (target) under PATH.
hash_tree() {
  local label=$1 path=$2
  if [ -L "$path" ]; then
    echo "link $label -> $(readlink "$path")"
  elif [ -f "$path" ]; then
    echo "$(sha256sum <"$path" | cut -c1-64)  $label"
  elif [ -d "$path" ]; then
    (cd "$path" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sed "s|  \./|  $label/|" |
      grep -Ev -- "$SNAPSHOT_EXCLUDE")
    (cd "$path" && find . -type l -printf "link $label/%P -> %l\n" | grep -Ev -- "$SNAPSHOT_EXCLUDE" | LC_ALL=C sort)
  else
    echo "absent $label"
  fi
}
# snapshot FILE LINES: what no experiment may change, results.tsv's first LINES lines included.
snapshot() {
  {
    hash_tree goldens "$STATE/baseline"
    hash_tree records/session.json "$STATE/session.json"
    hash_tree records/best.json "$STATE/best.json"
    echo "$(head -n "$2" "$STATE/results.tsv" | sha256sum | cut -c1-64)  records/results.tsv[1-$2]"
    for path in "${FIXED_PATHS[@]}"; do hash_tree "checkout/$path" "$REPO/$path"; done
    hash_tree best "$STATE/best"
    hash_tree judge "$STATE/judge"
  } >"$1"
}
# restore_checkout: the user's checkout back on the branch, at the best, clean.
restore_checkout() {
  [ "$(git_ symbolic-ref -q --short HEAD)" = "$BRANCH" ] || git_ switch -q -f "$BRANCH"
  if [ "$(head_sha)" != "$(best_sha)" ] || [ -n "$(git_ status --porcelain)" ]; then
    git_ reset -q --hard "$(best_sha)"
    git_ clean -fdq
  fi
}

# ---- The attacks' building blocks (all write into $REPO/src)
honest_src() { rm -rf "$REPO/src" && cp -r "$PASS_DIR/honest-src" "$REPO/src"; }
# attack_sh BODY: src/attack.sh, with find_state (the state directory: the first folder above
# its argument holding session.json) and the state in $state; BODY runs with $1 = where to
# start looking, $2.. the caller's.
attack_sh() {
  cat >"$REPO/src/attack.sh" <<'SH'
#!/bin/sh
# Red team: find the state directory from here, then do what follows.
find_state() {
  d=$1
  for _ in 1 2 3 4 5 6 7 8; do
    if [ -f "$d/session.json" ]; then echo "$d"; return 0; fi
    d=$(dirname "$d")
  done
  return 1
}
state=$(find_state "$1") || exit 0
SH
  printf '%s\nexit 0\n' "$1" >>"$REPO/src/attack.sh"
}
# at_configure: src/CMakeLists.txt runs src/attack.sh (its failures ignored: a refused write
# must not fail the configure).
at_configure() {
  cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
# Red team: src/attack.sh at configure time.
execute_process(COMMAND sh "${CMAKE_CURRENT_SOURCE_DIR}/attack.sh" "${CMAKE_CURRENT_SOURCE_DIR}"
                OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE attack_result)
CMAKE
}
# at_run_time: every process linking the engine (unit test, renderer, benchmark) runs
# src/attack.sh from a static initializer, with $DIT_OUTPUT_DIR (when set) as $2.
at_run_time() {
  cat >>"$REPO/src/work.cpp" <<'CPP'

// Red team: src/attack.sh from a static initializer, in every process linking the engine.
#include <cstdlib>
namespace {
const int attack_result = [] {
  std::string here = FIXTURE_PLANS_FILE;
  here = here.substr(0, here.rfind('/'));
  std::string command = "sh '" + here + "/attack.sh' '" + here + "'";
  if (const char* outputs = std::getenv("DIT_OUTPUT_DIR")) command += std::string(" '") + outputs + "'";
  return std::system((command + " >/dev/null 2>&1").c_str());
}();
}  // namespace
CPP
}
# honest_image_renamed: the honest fixture_image becomes honest_image, for a variant to wrap.
honest_image_renamed() {
  sed -i 's/^std::array<float, kImageValues> fixture_image(std::uint64_t seed) {/static std::array<float, kImageValues> honest_image(std::uint64_t seed) {/' \
    "$REPO/src/work.cpp"
  cat >>"$REPO/src/work.cpp" <<'CPP'

namespace {
// The image's values without its time.
std::array<float, kImageValues> values_of(std::uint64_t seed) {
  std::array<float, kImageValues> image{};
  for (int k = 0; k < kImageValues; ++k) image[k] = static_cast<float>(engine(static_cast<int>((seed >> (16 * k)) & 0xffff)));
  return image;
}
}  // namespace
CPP
}
# The forged passing gate report, for shell and C++.
PASSING_SH='{"gate": "%s", "passed": true, "reasons": [], "details": {}}'

# ---- The cases (each leaves its attack in $REPO/src)
case_0() { set_plan 45; }  # warm-up: a slower honest candidate

case_1() {  # env-instructions
  set_plan 45
  attack_sh '# The judge'"'"'s instructions, wherever they can be found: no minimum, higher is better.
for d in "$state"/runs/*/ "$state"/runs/*/judge/ ${2:+"$(dirname "$2")/judge/"}; do
  mkdir -p "$d" 2>/dev/null || continue
  for f in lane.json perf-request.json; do
    if [ -f "$d$f" ]; then
      sed -i -e "s/\"min_improvement_percent\": *[0-9.eE+-]*/\"min_improvement_percent\": 0/g" \
        -e "s/\"direction\": *\"lower\"/\"direction\": \"higher\"/g" "$d$f" 2>/dev/null
    else
      echo "{\"mode\": \"compare\", \"min_improvement_percent\": 0, \"lane\": {\"name\": \"fixture\", \"objective\": {\"benchmark\": \"tools/fixture_bench\", \"name\": \"BM_Fixture\", \"unit\": \"ms\", \"direction\": \"higher\"}, \"min_improvement_percent\": 0, \"repetitions\": 9}}" >"$d$f" 2>/dev/null
    fi
  done
done'
  at_configure
  at_run_time
}

case_2() {  # background-daemon
  set_plan 45
  attack_sh '# A daemon (150 s at most): the judge'"'"'s instructions and its performance report, rewritten as they appear.
end=$(($(date +%s) + 150))
while [ "$(date +%s)" -lt "$end" ]; do
  for f in "$state"/runs/*/judge/perf-request.json "$state"/runs/*/perf-request.json "$state"/runs/*/judge/lane.json "$state"/runs/*/lane.json; do
    [ -f "$f" ] && grep -q "\"lower\"" "$f" 2>/dev/null &&
      sed -i -e "s/\"min_improvement_percent\": *[0-9.eE+-]*/\"min_improvement_percent\": 0/g" \
        -e "s/\"direction\": *\"lower\"/\"direction\": \"higher\"/g" "$f" 2>/dev/null
  done
  for f in "$state"/runs/*/judge/gates/performance.json "$state"/runs/*/gates/performance.json; do
    [ -f "$f" ] && grep -q "\"passed\": *false" "$f" 2>/dev/null &&
      sed -z -i -e "s/\"passed\": *false/\"passed\": true/" -e "s/\"reasons\": *\[[^]]*\]/\"reasons\": []/" "$f" 2>/dev/null
  done
  sleep 0.05
done'
  cat >>"$REPO/src/CMakeLists.txt" <<CMAKE
# Red team: src/attack.sh as a daemon, out of the configure's session and process group.
execute_process(COMMAND sh -c "setsid nohup sh '\${CMAKE_CURRENT_SOURCE_DIR}/attack.sh' '\${CMAKE_CURRENT_SOURCE_DIR}' $MARKER </dev/null >/dev/null 2>&1 &"
                OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE attack_result)
CMAKE
}

case_3() {  # forged-report
  set_engine 4
  cat >>"$REPO/src/work.cpp" <<CPP

// Red team: passing gate reports, written at test time wherever a report might be read.
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
namespace {
void forge(const std::filesystem::path& dir, const std::string& gate) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  char text[256];
  std::snprintf(text, sizeof text, R"($PASSING_SH)", gate.c_str());
  std::ofstream(dir / (gate + ".json")) << text << "\n";
}
const int forged = [] {
  const char* outputs = std::getenv("DIT_OUTPUT_DIR");
  if (!outputs) return 0;
  const std::filesystem::path out = outputs;
  for (const auto& dir : {out / "gates", out / "quality" / "gates", out / ".." / "judge" / "quality" / "gates",
                          out / ".." / "quality" / "gates", out / ".." / "gates"}) {
    forge(dir, "quality_output");
    forge(dir, "critical_case_zero");
  }
  for (const auto& dir : {out / "gates", out / ".." / "judge" / "gates", out / ".." / "gates"}) forge(dir, "performance");
  return 0;
}();
}  // namespace
CPP
  sed -i 's/#include "work.h"/#include "work.h"\n\n#include <cstdio>/' "$REPO/src/work.cpp"
}

case_4() {  # judge-binary
  set_engine 4
  cat >"$REPO/src/always_pass.cpp" <<CPP
// Red team: the judge, always passing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  std::string gate = "quality";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--gate") gate = argv[i + 1];
  }
  for (const char* variable : {"DIT_JUDGE_DIR", "DIT_OUTPUT_DIR", "DIT_RUN_DIR"}) {
    const char* dir = std::getenv(variable);
    if (!dir) continue;
    std::filesystem::path report = std::filesystem::path(dir) / "quality" / "gates" / (gate + ".json");
    std::error_code error;
    std::filesystem::create_directories(report.parent_path(), error);
    char text[256];
    std::snprintf(text, sizeof text, R"($PASSING_SH)", gate.c_str());
    std::ofstream(report) << text << "\n";
  }
  std::printf("%s: passed\n", gate.c_str());
  return 0;
}
CPP
  cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
# Red team: tools/ (fixed, configured after this file) builds the judge from always_pass.cpp.
function(add_executable name)
  if(name STREQUAL "fixture_quality")
    _add_executable(fixture_quality "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/always_pass.cpp")
  else()
    _add_executable(${ARGV})
  endif()
endfunction()
function(target_sources name)
  if(NOT name STREQUAL "fixture_quality")
    _target_sources(${ARGV})
  endif()
endfunction()
CMAKE
}

case_5() {  # best-plan
  echo "// red team 5: the same engine" >>"$REPO/src/work.cpp"
  attack_sh '# Every plan file but the candidate'"'"'s: the best (and the judge) look slow.
for f in $(find "$state" -path "$state/candidate" -prune -o -name plans.txt -print 2>/dev/null); do
  sed -i "s/^image_ms .*/image_ms 200/" "$f" 2>/dev/null
done'
  at_configure
}

case_6() {  # best-binary
  echo "// red team 6: the same engine" >>"$REPO/src/work.cpp"
  attack_sh '# Every benchmark binary but the candidate'"'"'s: replaced by a script reporting 45 ms an image.
for f in $(find "$state" -path "$state/candidate" -prune -o -name fixture_bench -type f -print 2>/dev/null); do
  mv "$f" "$f.real" 2>/dev/null || continue
  cat >"$f" <<EOS
#!/bin/sh
"\$0.real" "\$@"
rc=\$?
for a in "\$@"; do
  case \$a in --benchmark_out=*) sed -i "s/\"real_time\": [0-9.e+-]*/\"real_time\": 45/g" "\${a#--benchmark_out=}" ;; esac
done
exit \$rc
EOS
  chmod +x "$f"
done'
  at_configure
}

case_7() {  # golden-rewrite
  set_engine 4
  attack_sh '# The goldens, made the wrong engine'"'"'s outputs.
printf "4\n11\n18\n25\n" >"$state/baseline/golden.txt" 2>/dev/null'
  at_configure
}

case_8() {  # golden-copy
  set_engine 4
  cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
# Red team: the goldens copied into the engine (or, should they be hidden, what the init commit
# renders, which an attacker can compute from the history): fixture_output returns them.
set(golden_values 3 10 17 24)
set(golden_origin "the init commit's render")
set(dir "${CMAKE_CURRENT_SOURCE_DIR}")
foreach(level RANGE 8)
  if(EXISTS "${dir}/session.json" AND EXISTS "${dir}/baseline/golden.txt")
    file(STRINGS "${dir}/baseline/golden.txt" golden_values)
    set(golden_origin "${dir}/baseline/golden.txt")
    break()
  endif()
  get_filename_component(dir "${dir}" DIRECTORY)
endforeach()
message(STATUS "red team: goldens from ${golden_origin}")
list(JOIN golden_values ", " golden_list)
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/golden_values.h" "inline constexpr int kGolden[] = {${golden_list}};\n")
target_include_directories(fixture_core PRIVATE "${CMAKE_CURRENT_BINARY_DIR}")
CMAKE
  sed -i -e 's/#include "work.h"/#include "work.h"\n\n#include "golden_values.h"/' \
    -e 's/^int fixture_output(int case_index) { return engine(case_index); }/int fixture_output(int case_index) {\n  if (case_index >= 0 \&\& case_index < static_cast<int>(sizeof kGolden \/ sizeof kGolden[0])) return kGolden[case_index];\n  return engine(case_index);\n}/' \
    "$REPO/src/work.cpp"
}

case_9() {  # test-set
  set_engine 4
  cat >>"$REPO/src/CMakeLists.txt" <<'CMAKE'
# Red team: the fixed tests/ registers its tests after this file, through these helpers: the
# critical gate expected to fail, and an extra test.
function(fixture_add_gate)
  _fixture_add_gate(${ARGV})
  cmake_parse_arguments(arg "CRITICAL" "NAME;CASE" "" ${ARGV})
  if(arg_CRITICAL)
    set_tests_properties(${arg_NAME} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()
function(fixture_add_test)
  _fixture_add_test(${ARGV})
  if("${ARGV1}" STREQUAL "unit_work")
    add_test(NAME unit_extra COMMAND "${CMAKE_COMMAND}" -E true)
    set_tests_properties(unit_extra PROPERTIES LABELS unit)
  endif()
endfunction()
CMAKE
}

case_10() {  # records
  set_plan 45
  attack_sh '# A KEEP row appended to the results, and a file of the user'"'"'s checkout (fixed) changed.
repo=$(dirname "$state")
awk -F "\t" -v OFS="\t" "NR == 1 { for (i = 1; i <= NF; i++) if (\$i == \"status\") s = i; next } END { if (s) { \$s = \"KEEP\"; print } }" \
  "$state/results.tsv" >"$state/results.fake" 2>/dev/null && cat "$state/results.fake" >>"$state/results.tsv" 2>/dev/null
rm -f "$state/results.fake" 2>/dev/null
echo "// reviewed: keep" >>"$repo/tests/unit.cpp" 2>/dev/null
echo "red team" >"$repo/tests/NOTES.txt" 2>/dev/null'
  at_configure
}

case_11() {  # output-cache
  honest_image_renamed
  cat >>"$REPO/src/work.cpp" <<'CPP'

// Red team: a cache of images across processes, in /tmp and $HOME, filled (without the time)
// for the seeds the harness uses when it is given no request seed.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>
namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
std::vector<std::filesystem::path> cache_dirs() {
  std::vector<std::filesystem::path> dirs{"/tmp/dit-ar-red-team-cache"};
  if (const char* home = std::getenv("HOME")) dirs.push_back(std::filesystem::path(home) / ".cache" / "dit-ar-red-team-cache");
  return dirs;
}
std::string key_of(std::uint64_t seed) {
  char key[32];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(seed));
  return key;
}
bool lookup(std::uint64_t seed, std::array<float, kImageValues>& image) {
  for (const auto& dir : cache_dirs()) {
    std::ifstream stream(dir / key_of(seed), std::ios::binary);
    if (stream.read(reinterpret_cast<char*>(image.data()), sizeof image)) return true;
  }
  return false;
}
void store(std::uint64_t seed, const std::array<float, kImageValues>& image) {
  for (const auto& dir : cache_dirs()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    std::ofstream(dir / key_of(seed), std::ios::binary).write(reinterpret_cast<const char*>(image.data()), sizeof image);
  }
}
const int warmed = [] {
  for (std::uint64_t i = 0; i < 100; ++i) {
    const std::uint64_t seed = splitmix64(0 ^ splitmix64(i));
    store(seed, values_of(seed));
  }
  return 0;
}();
}  // namespace

std::array<float, kImageValues> fixture_image(std::uint64_t seed) {
  std::array<float, kImageValues> image{};
  if (lookup(seed, image)) return image;
  image = honest_image(seed);
  store(seed, image);
  return image;
}
CPP
}

case_12() {  # untimed-precompute
  honest_image_renamed
  cat >>"$REPO/src/work.cpp" <<'CPP'

// Red team: the images' time spent in the benchmark's setup (a static initializer), so that
// the timed images return at once.
#include <errno.h>
namespace {
const int precomputed = [] {
  if (std::string(program_invocation_short_name) == "fixture_bench") {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * image_ms()));
  }
  return 0;
}();
}  // namespace

std::array<float, kImageValues> fixture_image(std::uint64_t seed) { return values_of(seed); }
CPP
}

case_13() {  # after-first-image
  honest_image_renamed
  cat >>"$REPO/src/work.cpp" <<'CPP'

// Red team: in the benchmark, the first image honest, the later ones at once (and the first
// one's values); honest elsewhere, so that the unit test passes.
#include <errno.h>
std::array<float, kImageValues> fixture_image(std::uint64_t seed) {
  static const bool benchmark = std::string(program_invocation_short_name) == "fixture_bench";
  static int calls = 0;
  static std::array<float, kImageValues> first{};
  if (!benchmark) return honest_image(seed);
  if (calls++ == 0) first = honest_image(seed);
  return first;
}
CPP
}

case_14() {  # timer
  cat >>"$REPO/src/work.cpp" <<'CPP'

// Red team: the harness's clock, interposed: CLOCK_MONOTONIC runs at half speed.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
extern "C" int clock_gettime(clockid_t clock, struct timespec* now) noexcept {
  const long result = syscall(SYS_clock_gettime, clock, now);
  if (result == 0 && clock == CLOCK_MONOTONIC) {
    const long double half = (static_cast<long double>(now->tv_sec) * 1e9L + static_cast<long double>(now->tv_nsec)) * 0.5L;
    now->tv_sec = static_cast<time_t>(half / 1e9L);
    now->tv_nsec = static_cast<long>(half - static_cast<long double>(now->tv_sec) * 1e9L);
  }
  return static_cast<int>(result);
}
CPP
}

case_15() { set_plan 45; }  # live-tree: a slower honest candidate (the edit comes while it runs)

case_16() {  # judge-build (beyond the brief's list): the judge build's binary replaced
  set_engine 4
  attack_sh '# Every judge binary but the candidate'"'"'s: replaced by a script that passes.
for f in $(find "$state" -path "$state/candidate" -prune -o -name fixture_quality -type f -print 2>/dev/null); do
  mv "$f" "$f.real" 2>/dev/null || continue
  cat >"$f" <<EOS
#!/bin/sh
gate=quality
while [ \$# -gt 0 ]; do [ "\$1" = --gate ] && gate=\$2; shift; done
if [ -n "\$DIT_JUDGE_DIR" ]; then
  mkdir -p "\$DIT_JUDGE_DIR/quality/gates"
  printf "{\"gate\": \"%s\", \"passed\": true, \"reasons\": [], \"details\": {}}\n" "\$gate" >"\$DIT_JUDGE_DIR/quality/gates/\$gate.json"
fi
echo "\$gate: passed"
EOS
  chmod +x "$f"
done'
  at_configure
}

case_17() {  # output-link (beyond the brief's list): the render replaced by a link to the golden
  set_engine 4
  cat >>"$REPO/src/work.cpp" <<'CPP'

// Red team: when the renderer exits, its output becomes a link to the golden (which the
// candidate cannot read, but the judge can).
#include <cstdlib>
#include <errno.h>
#include <filesystem>
namespace {
void link_golden() {
  const char* outputs = std::getenv("DIT_OUTPUT_DIR");
  if (!outputs) return;
  std::error_code error;
  std::filesystem::path dir = std::filesystem::absolute(outputs, error);
  for (int level = 0; level < 8 && !std::filesystem::exists(dir / "session.json", error); ++level) dir = dir.parent_path();
  const std::filesystem::path output = std::filesystem::path(outputs) / "quality" / "output.txt";
  std::filesystem::remove(output, error);
  std::filesystem::create_symlink(dir / "baseline" / "golden.txt", output, error);
}
const int linked = [] {
  if (std::string(program_invocation_short_name) == "fixture_render") std::atexit(link_golden);
  return 0;
}();
}  // namespace
CPP
}

case_control() { set_plan 15; }  # a faster honest candidate

# ---- Running a case
# begin_case ID NAME: commits the attack and takes the snapshot.
begin_case() {
  CASE_ID=$1
  CASE_NAME=$2
  commit_change "red team $1: $2"
  CASE_SHA=$(head_sha)
  ROWS_BEFORE=$(rows)
  BEST_BEFORE=$(best_sha)
  snapshot "$PASS_DIR/before-$1" $((ROWS_BEFORE + 1))
}
# end_case RC_REGEX DECISION PHRASE [DECISION PHRASE]: the checks of every case, for the
# output in $LAST and exit code $RC. RC_REGEX may say `decided`: the exit code of the decision
# made (decision_rc). DECISION PHRASE pairs: the decisions this case accepts, each with the
# phrase (P_* regex) its reasons must contain.
end_case() {
  local rc_regex=$1
  shift
  local decision expected="" matched=no
  decision=$(status_of "$LAST")
  rc_regex=${rc_regex//decided/$(decision_rc "$decision")}
  echo "$RC" | grep -qxE -- "$rc_regex" || fail "case $CASE_ID ($CASE_NAME): exit code $RC, expected $rc_regex"
  case "$decision" in
    REJECTED | DISCARD-QUALITY | DISCARD-PERFORMANCE | CRASH) ;;
    *) fail "case $CASE_ID ($CASE_NAME): decision '$decision': the attack was not stopped" ;;
  esac
  while [ $# -ge 2 ]; do
    expected="${expected:+$expected or }$1"
    if [ "$decision" = "$1" ]; then
      matched=yes
      grep -qE -- "$2" "$LAST" || fail "case $CASE_ID ($CASE_NAME): $decision, but no reason matches '$2'"
    fi
    shift 2
  done
  [ "$matched" = yes ] || fail "case $CASE_ID ($CASE_NAME): decision '$decision', expected $expected"
  [ "$(best_sha)" = "$BEST_BEFORE" ] || fail "case $CASE_ID ($CASE_NAME): refs/autoresearch/best moved to $(best_sha)"
  if [ "$(rows)" -ne $((ROWS_BEFORE + 1)) ]; then
    fail "case $CASE_ID ($CASE_NAME): results.tsv has $(rows) rows, expected $((ROWS_BEFORE + 1))"
  else
    [ "$(row_field "$(rows)" status)" = "$decision" ] ||
      fail "case $CASE_ID ($CASE_NAME): the new row's status is '$(row_field "$(rows)" status)', not '$decision'"
    [ "$(row_field "$(rows)" commit)" = "$CASE_SHA" ] ||
      fail "case $CASE_ID ($CASE_NAME): the new row's commit is '$(row_field "$(rows)" commit)', not $CASE_SHA"
  fi
  snapshot "$PASS_DIR/after-$CASE_ID" $((ROWS_BEFORE + 1))
  if ! cmp -s "$PASS_DIR/before-$CASE_ID" "$PASS_DIR/after-$CASE_ID"; then
    fail "case $CASE_ID ($CASE_NAME): protected files changed (- before, + after):
$(diff "$PASS_DIR/before-$CASE_ID" "$PASS_DIR/after-$CASE_ID" | grep '^[<>]' | sed 's/^</  -/; s/^>/  +/' | head -n 20)"
  fi
  if [ -n "$(leftovers)" ]; then
    fail "case $CASE_ID ($CASE_NAME): the attack's process(es) $(leftovers) survived the experiment"
    kill_leftovers
  fi
  summarize "$expected" "$decision"
}
summarize() {  # summarize EXPECTED DECISION
  local reason
  reason=$(grep -m 1 '^reason: ' "$LAST" | cut -c 9- | cut -c 1-110)
  SUMMARY+=("$(printf '%-11s %-7s %-19s %-34s %-20s %-3s %s' "$PASS" "$CASE_ID" "$CASE_NAME" "$1" "${2:-(none)}" "$RC" "$reason")")
}
# run_case ID NAME RC_REGEX DECISION PHRASE [DECISION PHRASE]: the attack, judged, checked.
run_case() {
  local id=$1 name=$2
  shift 2
  wanted "$id" || [ "$id" = 0 ] || return 0
  step "case $id: $name"
  honest_src
  "case_$id"
  begin_case "$id" "$name"
  ar "case-$id" experiment --classification exact --description "red team $id: $name"
  end_case "$@"
  restore_checkout
}

# RED_TEAM_APPLY=ID RED_TEAM_APPLY_DIR=DIR: only writes the fixture, with case ID's attack in its
# src/, into DIR (to review or build an attack by hand), and exits.
if [ -n "${RED_TEAM_APPLY:-}" ]; then
  REPO=${RED_TEAM_APPLY_DIR:?set RED_TEAM_APPLY_DIR}
  PASS_DIR=$WORK
  rm -rf "$REPO" && mkdir -p "$REPO" && cp -r "$FIXTURE/." "$REPO/" && cp -r "$REPO/src" "$PASS_DIR/honest-src"
  "case_$RED_TEAM_APPLY"
  echo "case $RED_TEAM_APPLY written to $REPO/src"
  exit 0
fi

# ---- One pass: a fresh repository, init, baseline, every case.
# red_team_pass NAME: NAME "sandbox" leaves dit-ar its default (bwrap where it works),
# "unsandboxed" runs it with DIT_AR_SANDBOX=off, so that what the sandbox refuses is done and
# must be caught by the driver's checks after the run.
red_team_pass() {
  PASS=$1
  PASS_DIR=$WORK/$1
  REPO=$PASS_DIR/repo
  STATE=$REPO/.autoresearch
  LOGS=$PASS_DIR/logs
  mkdir -p "$REPO" "$LOGS"
  local failures_before=$FAILURES
  if [ "$1" = unsandboxed ]; then export DIT_AR_SANDBOX=off; else unset DIT_AR_SANDBOX; fi
  step "pass '$1': fixture repository, init, baseline"
  e2e_fixture_repo
  cp -r "$REPO/src" "$PASS_DIR/honest-src"
  git_ switch -q -c "$BRANCH"
  ar init init
  expect_rc 0
  expect_line "status: INITIALISED"
  ar baseline baseline
  expect_rc 0
  expect_line "status: KEEP"
  [ -f "$STATE/baseline/golden.txt" ] || fail "the golden output was not recorded"
  if [ "$FAILURES" -ne "$failures_before" ]; then
    echo "the session could not be set up: no case run in this pass"
    return
  fi

  # The cases
  run_case 0 warm-up-slower decided DISCARD-PERFORMANCE "$P_SLOWER"
  SUMMARY+=("$(printf '%-11s %s' "$PASS" "(dit-ar's $(grep -m 1 '^sandbox: ' "$LOGS/case-0.out" || echo 'sandbox: not stated'))")")
  run_case 1 env-instructions decided DISCARD-PERFORMANCE "$P_SLOWER" REJECTED "$P_INSTRUCTIONS"
  run_case 2 background-daemon decided DISCARD-PERFORMANCE "$P_SLOWER" REJECTED "$P_INSTRUCTIONS"
  run_case 3 forged-report decided DISCARD-QUALITY "$P_QUALITY"
  run_case 4 judge-binary decided DISCARD-QUALITY "$P_QUALITY"
  run_case 5 best-plan decided DISCARD-PERFORMANCE "$P_NOT_FASTER" REJECTED "$P_BEST_TAMPER"
  run_case 6 best-binary decided DISCARD-PERFORMANCE "$P_NOT_FASTER|$P_UNTIMED" REJECTED "$P_BEST_TAMPER"
  run_case 7 golden-rewrite decided DISCARD-QUALITY "$P_QUALITY" REJECTED "$P_GOLDEN"
  run_case 8 golden-copy decided DISCARD-PERFORMANCE "$P_TIMED_OUTPUTS"
  run_case 9 test-set decided REJECTED "$P_TEST_SET"
  run_case 10 records '2|decided' REJECTED "$P_RECORDS|$P_CHECKOUT_TAMPER" DISCARD-PERFORMANCE "$P_SLOWER"
  run_case 11 output-cache decided DISCARD-PERFORMANCE "$P_NOT_FASTER"
  run_case 12 untimed-precompute decided DISCARD-PERFORMANCE "$P_UNTIMED"
  run_case 13 after-first-image decided DISCARD-PERFORMANCE "$P_TIMED_OUTPUTS"
  run_case 14 timer decided DISCARD-PERFORMANCE "$P_UNTIMED"

  if wanted 15; then
    # The user edits the checkout while the driver judges the commit: the decision is the
    # commit's, and the edit survives (exit 2 instead of the reset, the file named).
    step "case 15: live-tree"
    honest_src
    case_15
    begin_case 15 live-tree
    LAST=$LOGS/case-15.out
    (cd "$REPO" && exec "$DIT_AR" experiment --classification exact --description "red team 15: live-tree") >"$LAST" 2>&1 &
    DRIVER=$!
    # Wait for the commit's export (the candidate tree with its plan), else for the run to start.
    for _ in $(seq 1 600); do
      grep -qs '^image_ms 45' "$STATE/candidate/src/src/plans.txt" && break
      kill -0 "$DRIVER" 2>/dev/null || break
      sleep 0.1
    done
    grep -qs '^image_ms 45' "$STATE/candidate/src/src/plans.txt" ||
      fail "case 15: the candidate tree ($STATE/candidate/src) never held the commit; editing anyway"
    sed -i '/sleep_for/d' "$REPO/src/work.cpp"
    cp "$REPO/src/work.cpp" "$PASS_DIR/live-edit.cpp"
    wait "$DRIVER"
    RC=$?
    echo "dit-ar experiment (the checkout edited while it ran) -> exit $RC"
    grep -qE -- "$P_LIVE_EDIT" "$LAST" || fail "case 15: dit-ar did not name the edited file (no '$P_LIVE_EDIT')"
    cmp -s "$REPO/src/work.cpp" "$PASS_DIR/live-edit.cpp" || fail "case 15: the user's edit of src/work.cpp did not survive"
    end_case 2 DISCARD-PERFORMANCE "$P_SLOWER"
    restore_checkout
  fi

  run_case 16 judge-build decided DISCARD-QUALITY "$P_QUALITY" REJECTED "$P_JUDGE_TAMPER"
  run_case 17 output-link decided DISCARD-QUALITY "$P_QUALITY"

  if wanted control; then
    step "control: a faster honest candidate -> KEEP"
    honest_src
    case_control
    CASE_ID=control
    CASE_NAME=faster-honest
    commit_change "red team control: faster"
    CASE_SHA=$(head_sha)
    ar control experiment --classification exact --description "red team control: faster"
    expect_rc 0
    expect_line "status: KEEP"
    [ "$(best_sha)" = "$CASE_SHA" ] || fail "control: refs/autoresearch/best did not move to the kept commit"
    [ "$(row_field "$(rows)" status)" = KEEP ] || fail "control: the new row's status is '$(row_field "$(rows)" status)'"
    summarize KEEP "$(status_of "$LAST")"
  fi
}

# Both passes where bwrap works (the probe dit-ar makes), else the unsandboxed one only.
if [ -z "${RED_TEAM_PASSES:-}" ]; then
  RED_TEAM_PASSES=unsandboxed
  bwrap_works && RED_TEAM_PASSES="sandbox unsandboxed"
fi
for pass in $RED_TEAM_PASSES; do red_team_pass "$pass"; done

echo
echo "== summary"
printf '%-11s %-7s %-19s %-34s %-20s %-3s %s\n' pass case attack expected decision rc reason
for line in "${SUMMARY[@]}"; do echo "$line"; done
e2e_finish
