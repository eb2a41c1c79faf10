# The CPU corpus end to end, in the driver's stage views (ARCHITECTURE.md): record a baseline
# into a fresh temporary state directory (the judge's dit-quality, the renderer named by
# --renderer); then, through CTest, the set's tests only (so this test never selects itself):
#   1. the candidate's test stage: the tests labelled `quality` but not `judge` (the render
#      alone), with DIT_OUTPUT_DIR and no other DIT_* variable; the render must land in
#      $DIT_OUTPUT_DIR/quality/<set>/render;
#   2. the judge stage: the tests labelled `judge` (every gate and the baseline fixture's test,
#      which finds the baseline recorded, and nothing else) with `-FA .*` (the render fixture
#      not run again), DIT_OUTPUT_DIR, DIT_JUDGE_DIR, DIT_BASELINE_DIR, DIT_CLASSIFICATION and
#      DIT_LANE, under `exact`: from the JUnit file every gate ran and passed (none skipped, none
#      failed, as many as the contract asks for: one per required metric and one per critical
#      case of this corpus), each wrote its report to $DIT_JUDGE_DIR/quality/gates/<test
#      name>.json, and none wrote to (or changed anything in) DIT_OUTPUT_DIR; under
#      `numerical`, `approximate` and `quantization`, which this set has no floors or fp32
#      golden for, every gate fails and its report says why;
#   3. every gate fails against an empty DIT_OUTPUT_DIR (no candidate render), and once a golden
#      file is changed.
# Inputs (-D): PROGRAM, RENDERER, GATE_SETS, SET, CONTRACT, CORPUS_NAME, BUILD_DIR, CTEST, WORK_DIR.
foreach(input PROGRAM RENDERER GATE_SETS SET CONTRACT CORPUS_NAME BUILD_DIR CTEST WORK_DIR)
  if(NOT DEFINED ${input})
    message(FATAL_ERROR "end_to_end.cmake needs -D${input}=...")
  endif()
endforeach()

file(READ "${CONTRACT}" contract_text)
string(JSON metric_count LENGTH "${contract_text}" required_metrics)
string(JSON critical_count LENGTH "${contract_text}" critical_cases "${CORPUS_NAME}")
math(EXPR expected_gates "${metric_count} + ${critical_count}")
math(EXPR expected_judge_tests "${expected_gates} + 1")  # and quality.<set>.baseline

# Every child starts from no DIT_* variable of ours, as the driver's children do.
set(clean_environment "${CMAKE_COMMAND}" -E env --unset=DIT_RUN_DIR --unset=DIT_OUTPUT_DIR --unset=DIT_JUDGE_DIR
                      --unset=DIT_BASELINE_DIR --unset=DIT_BEST_BUILD_DIR --unset=DIT_CLASSIFICATION --unset=DIT_LANE)
set(tests_of_set -R "^quality[.]${SET}[.]")

file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${clean_environment} OMP_NUM_THREADS=1 "${PROGRAM}" baseline --gate-sets "${GATE_SETS}"
                        --renderer "${RENDERER}" --set ${SET} --baseline-dir "${WORK_DIR}/baseline"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "recording the baseline failed (exit ${status})")
endif()

# Reads a JUnit file's counts into <prefix>_tests, _failures, _skipped, _disabled.
function(read_junit junit prefix)
  if(NOT EXISTS "${junit}")
    message(FATAL_ERROR "ctest wrote no JUnit file ${junit}")
  endif()
  file(READ "${junit}" text)
  foreach(count tests failures skipped disabled)
    if(NOT text MATCHES "<testsuite[^>]*[ \t\r\n]${count}=\"([0-9]+)\"")
      message(FATAL_ERROR "no ${count} count in ${junit}")
    endif()
    set(${prefix}_${count} ${CMAKE_MATCH_1} PARENT_SCOPE)
  endforeach()
endfunction()

# A listing of every file under a folder with its sha256: what a stage must leave unchanged.
function(snapshot dir out)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${dir}/*")
  list(SORT files)
  set(listing "")
  foreach(f IN LISTS files)
    file(SHA256 "${f}" hash)
    string(APPEND listing "${f} ${hash}\n")
  endforeach()
  set(${out} "${listing}" PARENT_SCOPE)
endfunction()

# 1. The candidate's test stage: the render alone, DIT_OUTPUT_DIR only.
set(outputs "${WORK_DIR}/outputs")
set(junit "${WORK_DIR}/junit-candidate.xml")
execute_process(
  COMMAND ${clean_environment} "DIT_OUTPUT_DIR=${outputs}"
          "${CTEST}" --test-dir "${BUILD_DIR}" -L "^quality$" -LE "^judge$" ${tests_of_set}
          --output-on-failure --output-junit "${junit}"
  RESULT_VARIABLE status)
read_junit("${junit}" candidate)
message(STATUS "candidate stage: ${candidate_tests} tests, ${candidate_failures} failed, ${candidate_skipped} skipped")
if(NOT status EQUAL 0 OR NOT candidate_tests EQUAL 1 OR NOT candidate_failures EQUAL 0 OR NOT candidate_skipped EQUAL 0
   OR NOT candidate_disabled EQUAL 0)
  message(FATAL_ERROR "the candidate stage did not run exactly the render test, passing (ctest exit ${status})")
endif()
if(NOT EXISTS "${outputs}/quality/${SET}/render/render.json")
  message(FATAL_ERROR "the render is not in \$DIT_OUTPUT_DIR/quality/${SET}/render")
endif()
snapshot("${outputs}" outputs_before)

# 2. The judge stage: the gates alone, against that render.
function(run_judge_stage name classification outputs_dir)
  set(judge "${WORK_DIR}/judge-${name}")
  set(junit "${WORK_DIR}/junit-${name}.xml")
  execute_process(
    COMMAND ${clean_environment} "DIT_OUTPUT_DIR=${outputs_dir}" "DIT_JUDGE_DIR=${judge}"
            "DIT_BASELINE_DIR=${WORK_DIR}/baseline" "DIT_CLASSIFICATION=${classification}" "DIT_LANE=end-to-end"
            "${CTEST}" --test-dir "${BUILD_DIR}" -L "^judge$" ${tests_of_set} -FA ".*"
            --output-on-failure --output-junit "${junit}"
    OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE status)
  read_junit("${junit}" run)
  file(GLOB reports "${judge}/quality/gates/quality.${SET}.*.json")
  # The baseline fixture's test reports too (it found the baseline): not a gate.
  list(FILTER reports EXCLUDE REGEX "/quality[.]${SET}[.]baseline[.]json$")
  if(NOT EXISTS "${judge}/quality/gates/quality.${SET}.baseline.json")
    message(FATAL_ERROR "${name}: the baseline test wrote no report in the judge stage")
  endif()
  list(LENGTH reports report_count)
  message(STATUS "${name} (${classification}): ${run_tests} tests, ${run_failures} failed, ${run_skipped} skipped, "
                 "${run_disabled} disabled, ${report_count} gate reports (expected ${expected_gates})")
  if(NOT run_tests EQUAL expected_judge_tests OR NOT run_skipped EQUAL 0 OR NOT run_disabled EQUAL 0
     OR NOT report_count EQUAL expected_gates)
    message("${output}")
    message(FATAL_ERROR "${name}: the judge stage did not run every gate (ctest exit ${status})")
  endif()
  set(passed_reports 0)
  set(reasons "")
  foreach(report IN LISTS reports)
    file(READ "${report}" report_text)
    string(JSON passed GET "${report_text}" passed)
    if(passed)
      math(EXPR passed_reports "${passed_reports} + 1")
    endif()
    string(JSON reason ERROR_VARIABLE no_reason GET "${report_text}" reasons 0)
    string(APPEND reasons "${reason}\n")
  endforeach()
  set(judge_reasons "${reasons}" PARENT_SCOPE)
  set(judge_status ${status} PARENT_SCOPE)
  set(judge_failures ${run_failures} PARENT_SCOPE)
  set(judge_passed_reports ${passed_reports} PARENT_SCOPE)
  set(judge_output "${output}" PARENT_SCOPE)
endfunction()

foreach(classification exact)
  run_judge_stage(${classification} ${classification} "${outputs}")
  if(NOT judge_status EQUAL 0 OR NOT judge_failures EQUAL 0 OR NOT judge_passed_reports EQUAL expected_gates)
    message("${judge_output}")
    message(FATAL_ERROR "${classification}: the quality gates did not all pass (ctest exit ${judge_status})")
  endif()
  snapshot("${outputs}" outputs_after)
  if(NOT outputs_after STREQUAL outputs_before)
    message(FATAL_ERROR "${classification}: the judge stage changed \$DIT_OUTPUT_DIR")
  endif()
endforeach()

# What the CPU set cannot judge: every gate fails, each report saying why.
foreach(refusal "numerical|has no numerical floors" "approximate|renders seeded random weights"
                "quantization|has no fp32 golden")
  string(REPLACE "|" ";" refusal "${refusal}")
  list(GET refusal 0 classification)
  list(GET refusal 1 expected)
  run_judge_stage(${classification} ${classification} "${outputs}")
  string(REGEX MATCHALL "${expected}" found "${judge_reasons}")
  list(LENGTH found found_count)
  if(NOT judge_failures EQUAL expected_gates OR NOT judge_passed_reports EQUAL 0 OR NOT found_count EQUAL expected_gates)
    message("${judge_output}")
    message(FATAL_ERROR "${classification}: not every gate refused with \"${expected}\" "
                        "(${judge_failures} failed, ${found_count} reports say so)")
  endif()
endforeach()

# 3. No render where DIT_OUTPUT_DIR points: every gate fails (none skips, none passes).
run_judge_stage(no-render exact "${WORK_DIR}/empty-outputs")
message(STATUS "no render: ${judge_failures} of ${expected_gates} gates failed (ctest exit ${judge_status})")
if(judge_status EQUAL 0 OR NOT judge_failures EQUAL expected_gates OR NOT judge_passed_reports EQUAL 0)
  message(FATAL_ERROR "a missing candidate render did not fail every gate")
endif()

# A changed golden file: every gate verifies the baseline's manifest first, so all of them fail.
file(GLOB golden_images "${WORK_DIR}/baseline/quality/${SET}/golden/*.png")
list(GET golden_images 0 tampered)
file(APPEND "${tampered}" "x")
run_judge_stage(tampered exact "${outputs}")
message(STATUS "tampered golden: ${judge_failures} of ${expected_gates} gates failed (ctest exit ${judge_status})")
if(judge_status EQUAL 0 OR NOT judge_failures EQUAL expected_gates OR NOT judge_passed_reports EQUAL 0)
  message(FATAL_ERROR "a changed golden file did not fail every gate")
endif()
