# One-line declarations for tests and benchmarks.
#
#   dit_add_test(NAME name SOURCES a.cpp ... [LIBRARIES lib ...] [LABELS label ...] [GPU]
#                [TIMEOUT seconds] [ENVIRONMENT VAR=value ...])
#     A GoogleTest executable registered as one CTest test. GPU tests carry the label `gpu`,
#     skip (exit code 77) when no GPU is present unless DIT_REQUIRE_GPU=1, and take one GPU
#     each from CTest's resource allocation (DitGpuResources.cmake; the one `gpu` lock without
#     GPUs), so no two run on the same device. Other tests get the label `unit` by default.
#
#   dit_add_benchmark(NAME name SOURCES a.cpp ... [LIBRARIES lib ...] [GPU]
#                     [SMOKE_ARGS arg ...] [PERF_ARGS arg ...])
#     A Google Benchmark executable with two CTest tests: `<name>.smoke` (label `bench-smoke`,
#     a very short run) and `<name>.perf` (label `perf`, RUN_SERIAL, JSON written to
#     $DIT_OUTPUT_DIR/bench/ or the build tree). GPU benchmarks skip like GPU tests.
include_guard(GLOBAL)

set(DIT_TEST_DATA_DIR "${CMAKE_CURRENT_LIST_DIR}/../tests/data" CACHE PATH "Reference vectors and test fixtures")
set(DIT_SKIP_RETURN_CODE 77)

include(${CMAKE_CURRENT_LIST_DIR}/DitGpuResources.cmake)

# A GPU test takes one of the GPUs the build's CTest resource specification lists whole (all its
# DIT_CTEST_GPU_SLOTS slots, DitGpuResources.cmake), or, with none listed, the one `gpu` lock.
# SHARED: a test that only asks the GPU its name takes one slot, beside other such tests, and
# with none listed no lock.
function(_dit_mark_gpu_test test_name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "SHARED" "" "")
  set_property(TEST ${test_name} APPEND PROPERTY LABELS gpu)
  set_property(TEST ${test_name} PROPERTY SKIP_RETURN_CODE ${DIT_SKIP_RETURN_CODE})
  # Compared with the empty string: a one-GPU host's list is "0", which if() reads as false.
  if(NOT DIT_CTEST_GPU_IDS STREQUAL "")
    if(arg_SHARED)
      set_property(TEST ${test_name} PROPERTY RESOURCE_GROUPS "gpus:1")
    else()
      set_property(TEST ${test_name} PROPERTY RESOURCE_GROUPS "gpus:${DIT_CTEST_GPU_SLOTS}")
    endif()
  elseif(NOT arg_SHARED)
    set_property(TEST ${test_name} PROPERTY RESOURCE_LOCK gpu)
  endif()
endfunction()

function(dit_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "GPU" "NAME;TIMEOUT" "SOURCES;LIBRARIES;LABELS;ENVIRONMENT")
  if(NOT arg_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "dit_add_test needs NAME and SOURCES")
  endif()
  add_executable(${arg_NAME} ${arg_SOURCES})
  if(arg_GPU)
    set(main_library dit::gpu_test_main)
  else()
    set(main_library dit::test_main)
  endif()
  target_link_libraries(${arg_NAME} PRIVATE ${arg_LIBRARIES} ${main_library} GTest::gtest dit::build_options)
  target_compile_definitions(${arg_NAME} PRIVATE DIT_TEST_DATA_DIR="${DIT_TEST_DATA_DIR}")
  add_test(NAME ${arg_NAME} COMMAND ${arg_NAME})
  set(labels ${arg_LABELS})
  if(NOT labels AND NOT arg_GPU)
    set(labels unit)
  endif()
  if(labels)
    set_property(TEST ${arg_NAME} PROPERTY LABELS ${labels})
  endif()
  if(arg_GPU)
    _dit_mark_gpu_test(${arg_NAME})
  endif()
  if(arg_TIMEOUT)
    set_property(TEST ${arg_NAME} PROPERTY TIMEOUT ${arg_TIMEOUT})
  endif()
  if(arg_ENVIRONMENT)
    set_property(TEST ${arg_NAME} PROPERTY ENVIRONMENT ${arg_ENVIRONMENT})
  endif()
endfunction()

function(dit_add_benchmark)
  cmake_parse_arguments(PARSE_ARGV 0 arg "GPU" "NAME" "SOURCES;LIBRARIES;SMOKE_ARGS;PERF_ARGS")
  if(NOT arg_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "dit_add_benchmark needs NAME and SOURCES")
  endif()
  add_executable(${arg_NAME} ${arg_SOURCES})
  target_link_libraries(${arg_NAME} PRIVATE ${arg_LIBRARIES} benchmark::benchmark dit::build_options)
  # Debian 12's Google Benchmark 1.7.1 takes a plain number of seconds; 1.8 takes it too.
  add_test(NAME ${arg_NAME}.smoke
    COMMAND ${arg_NAME} --benchmark_min_time=0.01 --benchmark_repetitions=1 ${arg_SMOKE_ARGS})
  set_property(TEST ${arg_NAME}.smoke PROPERTY LABELS bench-smoke)
  # The benchmark's main (bench/support) writes its JSON to $DIT_OUTPUT_DIR/bench/<name>.json
  # when the driver sets DIT_OUTPUT_DIR (the candidate's test processes), else to bench-results/
  # in the build tree.
  add_test(NAME ${arg_NAME}.perf COMMAND ${arg_NAME} ${arg_PERF_ARGS})
  set_property(TEST ${arg_NAME}.perf PROPERTY ENVIRONMENT
    DIT_BENCH_NAME=${arg_NAME} DIT_BENCH_DEFAULT_DIR=${CMAKE_BINARY_DIR}/bench-results)
  set_property(TEST ${arg_NAME}.perf PROPERTY LABELS perf)
  set_property(TEST ${arg_NAME}.perf PROPERTY RUN_SERIAL TRUE)
  if(arg_GPU)
    _dit_mark_gpu_test(${arg_NAME}.smoke)
    _dit_mark_gpu_test(${arg_NAME}.perf)
  endif()
endfunction()

include(DitGates)
