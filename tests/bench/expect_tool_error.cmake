# Runs TOOL with ARGS (a ;-list) and fails unless it exits with CODE and its stderr matches MATCH.
execute_process(COMMAND "${TOOL}" ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL CODE OR NOT err MATCHES "${MATCH}")
  message(FATAL_ERROR "expected exit code ${CODE} and stderr matching '${MATCH}', got ${rc}\n${out}\n${err}")
endif()
