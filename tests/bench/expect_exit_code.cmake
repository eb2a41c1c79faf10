# Runs the error probe and fails unless it exits with 1 and says why.
execute_process(COMMAND "${PROBE}" --benchmark_min_time=0.01
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "ended in an error")
  message(FATAL_ERROR "expected exit code 1 and an error message, got ${rc}\n${out}\n${err}")
endif()
