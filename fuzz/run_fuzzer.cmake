# Fuzzes one target for a bounded time in a fresh copy of its seed corpus, so the committed
# corpus never changes; a finding is written under WORK_DIR/artifacts and fails the test.
#   cmake -DFUZZER=<binary> -DCORPUS=<dir> -DWORK_DIR=<dir> [-DDICTIONARY=<file>]
#         [-DSECONDS=60] -P run_fuzzer.cmake
foreach(required IN ITEMS FUZZER CORPUS WORK_DIR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "run_fuzzer.cmake needs -D${required}=...")
  endif()
endforeach()
if(NOT DEFINED SECONDS)
  set(SECONDS 60)
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/artifacts")
file(GLOB seeds "${CORPUS}/*")
list(FILTER seeds EXCLUDE REGEX "/README\\.md$")
file(COPY ${seeds} DESTINATION "${WORK_DIR}/corpus")

set(arguments -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
  -artifact_prefix=${WORK_DIR}/artifacts/)
if(DICTIONARY)
  list(APPEND arguments -dict=${DICTIONARY})
endif()
execute_process(COMMAND "${FUZZER}" ${arguments} "${WORK_DIR}/corpus" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} found a failing input (exit ${result}); see ${WORK_DIR}/artifacts")
endif()
