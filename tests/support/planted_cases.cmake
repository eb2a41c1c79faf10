# The check every self-test of a CMake-script test makes on one planted case (cmake -P scripts:
# tests/architecture/bench_holds_code_only.cmake, tests/tools/ci_presets.cmake).
#   dit_check_planted(NAME EXPECTED FOUND FAILURES)
# EXPECTED empty: FOUND (the problems the check reported) must be empty; else FOUND must hold
# exactly one problem, naming EXPECTED. A mismatch is appended to the list named FAILURES.
function(dit_check_planted name expected found failures_var)
  set(failures ${${failures_var}})
  list(LENGTH found count)
  if(expected STREQUAL "")
    if(count GREATER 0)
      list(APPEND failures "${name}: expected nothing, found: ${found}")
    endif()
  elseif(NOT count EQUAL 1)
    list(APPEND failures "${name}: expected one problem naming '${expected}', found ${count}: ${found}")
  else()
    string(FIND "${found}" "${expected}" at)
    if(at EQUAL -1)
      list(APPEND failures "${name}: expected a problem naming '${expected}', found: ${found}")
    endif()
  endif()
  set(${failures_var} ${failures} PARENT_SCOPE)
endfunction()
