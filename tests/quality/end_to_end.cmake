# The CPU corpus end to end, as CI runs it: record a baseline into a fresh temporary state
# directory, then run the set's quality gates through CTest (labels ^quality$, the set's
# tests only, so this test never selects itself) under `exact` and under `quantization`, and
# require from the JUnit file that every gate test ran and passed: none skipped, none failed,
# and as many as the contract asks for (render + one per required metric + one per critical
# case of this corpus), each of which wrote its gate report; then that they all fail once a
# golden file is changed.
# Inputs (-D): PROGRAM, GATE_SETS, SET, CONTRACT, CORPUS_NAME, BUILD_DIR, CTEST, WORK_DIR.
foreach(input PROGRAM GATE_SETS SET CONTRACT CORPUS_NAME BUILD_DIR CTEST WORK_DIR)
  if(NOT DEFINED ${input})
    message(FATAL_ERROR "end_to_end.cmake needs -D${input}=...")
  endif()
endforeach()

file(READ "${CONTRACT}" contract_text)
string(JSON metric_count LENGTH "${contract_text}" required_metrics)
string(JSON critical_count LENGTH "${contract_text}" critical_cases "${CORPUS_NAME}")
math(EXPR expected_tests "1 + ${metric_count} + ${critical_count}")
math(EXPR expected_reports "${metric_count} + ${critical_count}")

file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E env OMP_NUM_THREADS=1 "${PROGRAM}" baseline --gate-sets "${GATE_SETS}" --set ${SET}
                        --baseline-dir "${WORK_DIR}/baseline"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "recording the baseline failed (exit ${status})")
endif()

foreach(classification exact quantization)
  set(junit "${WORK_DIR}/junit-${classification}.xml")
  set(run_dir "${WORK_DIR}/run-${classification}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "DIT_BASELINE_DIR=${WORK_DIR}/baseline" "DIT_RUN_DIR=${run_dir}"
            "DIT_CLASSIFICATION=${classification}"
            "${CTEST}" --test-dir "${BUILD_DIR}" -L "^quality$" -R "^quality[.]${SET}[.]"
            --output-on-failure --output-junit "${junit}"
    RESULT_VARIABLE status)
  if(NOT EXISTS "${junit}")
    message(FATAL_ERROR "${classification}: ctest wrote no JUnit file (exit ${status})")
  endif()
  file(READ "${junit}" junit_text)
  if(NOT junit_text MATCHES "<testsuite[^>]*[ \t\r\n]tests=\"([0-9]+)\"")
    message(FATAL_ERROR "${classification}: no test count in ${junit}")
  endif()
  set(tests ${CMAKE_MATCH_1})
  string(REGEX MATCH "<testsuite[^>]*[ \t\r\n]failures=\"([0-9]+)\"" ignored "${junit_text}")
  set(failures ${CMAKE_MATCH_1})
  string(REGEX MATCH "<testsuite[^>]*[ \t\r\n]skipped=\"([0-9]+)\"" ignored "${junit_text}")
  set(skipped ${CMAKE_MATCH_1})
  string(REGEX MATCH "<testsuite[^>]*[ \t\r\n]disabled=\"([0-9]+)\"" ignored "${junit_text}")
  set(disabled ${CMAKE_MATCH_1})
  file(GLOB reports "${run_dir}/quality/gates/quality.${SET}.*.json")
  list(LENGTH reports report_count)
  message(STATUS "${classification}: ${tests} tests, ${failures} failed, ${skipped} skipped, "
                 "${disabled} disabled, ${report_count} gate reports (expected ${expected_tests} tests)")
  if(NOT status EQUAL 0 OR NOT tests EQUAL expected_tests OR NOT failures EQUAL 0 OR NOT skipped EQUAL 0
     OR NOT disabled EQUAL 0 OR NOT report_count EQUAL expected_reports)
    message(FATAL_ERROR "${classification}: the quality gates did not all run and pass (ctest exit ${status})")
  endif()
  foreach(report IN LISTS reports)
    file(READ "${report}" report_text)
    string(JSON passed GET "${report_text}" passed)
    if(NOT passed)
      message(FATAL_ERROR "${report} says the gate did not pass")
    endif()
  endforeach()
endforeach()

# The same gates must fail once a golden file is changed: every gate verifies the baseline's
# manifest first, so all of them fail and none skips.
file(GLOB golden_images "${WORK_DIR}/baseline/quality/${SET}/golden/*.png")
list(GET golden_images 0 tampered)
file(APPEND "${tampered}" "x")
set(junit "${WORK_DIR}/junit-tampered.xml")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env "DIT_BASELINE_DIR=${WORK_DIR}/baseline" "DIT_RUN_DIR=${WORK_DIR}/run-tampered"
          "${CTEST}" --test-dir "${BUILD_DIR}" -L "^quality$" -R "^quality[.]${SET}[.]" --output-junit "${junit}"
  OUTPUT_QUIET RESULT_VARIABLE status)
file(READ "${junit}" junit_text)
string(REGEX MATCH "<testsuite[^>]*[ \t\r\n]failures=\"([0-9]+)\"" ignored "${junit_text}")
message(STATUS "tampered golden: ${CMAKE_MATCH_1} of ${expected_reports} gates failed (ctest exit ${status})")
if(status EQUAL 0 OR NOT CMAKE_MATCH_1 EQUAL expected_reports)
  message(FATAL_ERROR "a changed golden file did not fail every gate")
endif()
