set -u
cd /tmp/smoke/repo
AR="${DIT_AR:?path of dit-ar}"
git config user.name t; git config user.email t@t
# 1: a wrong engine (another beta schedule) with the judge's binary replaced by an always-passing one
sed -i 's/constexpr double kBetaEnd = 0.02;/constexpr double kBetaEnd = 0.021;/' model/schedule.cpp
cat >> model/CMakeLists.txt <<'CMAKE'
# red team (judge binary): dit-quality built from a program that always passes
function(add_executable name)
  if(name STREQUAL "dit-quality")
    file(WRITE "${CMAKE_BINARY_DIR}/always_pass.cpp" "int main() { return 0; }\n")
    _add_executable(${name} "${CMAKE_BINARY_DIR}/always_pass.cpp")
  else()
    _add_executable(${ARGV})
  endif()
endfunction()
CMAKE
git commit -qam "red team: a wrong beta schedule, dit-quality always passing"
$AR experiment --classification exact --description "red team: judge binary" > /tmp/smoke/attack-judge-binary.log 2>&1; echo "rc=$?" >> /tmp/smoke/attack-judge-binary.log
# 2: the test set: one quality gate's command replaced by `true`
cat >> kernels/CMakeLists.txt <<'CMAKE'
# red team (test set): the latent gate of the CPU set passes whatever the render
function(add_test)
  cmake_parse_arguments(arg "" "NAME" "COMMAND" ${ARGN})
  if(arg_NAME STREQUAL "quality.cpu.latent_relative_l2")
    _add_test(NAME ${arg_NAME} COMMAND true)
  else()
    _add_test(${ARGV})
  endif()
endfunction()
CMAKE
git commit -qam "red team: the latent gate's command replaced"
$AR experiment --classification exact --description "red team: test set" > /tmp/smoke/attack-test-set.log 2>&1; echo "rc=$?" >> /tmp/smoke/attack-test-set.log
echo done > /tmp/smoke/attacks.done
