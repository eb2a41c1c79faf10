# Shows that check_op_coverage.cmake catches each way of breaking its rule: it runs the check on
# scratch trees, one correct and one per fault, and requires a pass or the fault's message.
#   cmake -DCHECK=<check_op_coverage.cmake> -DSCRATCH=<scratch folder> -P check_op_coverage_self_test.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT CHECK OR NOT SCRATCH)
  message(FATAL_ERROR "usage: cmake -DCHECK=<check_op_coverage.cmake> -DSCRATCH=<folder> -P check_op_coverage_self_test.cmake")
endif()

# A tree with one op (alpha) and its listed test, and every shared piece.
function(make_tree dir)
  file(REMOVE_RECURSE "${dir}")
  foreach(file IN ITEMS alpha.h cuda_check.h cuda_types.h noise_math.h cuda_reduce.cuh)
    file(WRITE "${dir}/kernels/${file}" "")
  endforeach()
  file(WRITE "${dir}/tests/kernels/alpha_test.cpp" "")
  file(WRITE "${dir}/tests/kernels/CMakeLists.txt" "set(kernel_test_sources\n  alpha_test.cpp\n)\n")
endfunction()

set(failures "")
# expect(<case> <tree> PASS) or expect(<case> <tree> FAIL <what the message must say>)
function(expect name dir outcome)
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${dir}" -P "${CHECK}"
                  RESULT_VARIABLE code OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(outcome STREQUAL "PASS" AND NOT code EQUAL 0)
    string(APPEND failures "\n  ${name}: expected a pass, got exit code ${code}:\n${output}")
  elseif(outcome STREQUAL "FAIL" AND code EQUAL 0)
    string(APPEND failures "\n  ${name}: expected a failure, got a pass:\n${output}")
  elseif(outcome STREQUAL "FAIL")
    string(FIND "${output}" "${ARGV3}" at)
    if(at EQUAL -1)
      string(APPEND failures "\n  ${name}: the failure does not say '${ARGV3}':\n${output}")
    endif()
  endif()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

make_tree("${SCRATCH}/correct")
expect(correct "${SCRATCH}/correct" PASS)

make_tree("${SCRATCH}/op_without_test")
file(WRITE "${SCRATCH}/op_without_test/kernels/beta.h" "")
expect(op_without_test "${SCRATCH}/op_without_test" FAIL "tests/kernels/beta_test.cpp does not exist")

make_tree("${SCRATCH}/test_not_listed")
file(WRITE "${SCRATCH}/test_not_listed/kernels/beta.h" "")
file(WRITE "${SCRATCH}/test_not_listed/tests/kernels/beta_test.cpp" "")
expect(test_not_listed "${SCRATCH}/test_not_listed" FAIL "beta_test.cpp is not listed")

make_tree("${SCRATCH}/listed_as_prefix")  # alpha_beta_test.cpp listed does not list beta_test.cpp
file(WRITE "${SCRATCH}/listed_as_prefix/kernels/beta.h" "")
file(WRITE "${SCRATCH}/listed_as_prefix/tests/kernels/beta_test.cpp" "")
file(APPEND "${SCRATCH}/listed_as_prefix/tests/kernels/CMakeLists.txt" "# alpha_beta_test.cpp\n")
expect(listed_as_prefix "${SCRATCH}/listed_as_prefix" FAIL "beta_test.cpp is not listed")

make_tree("${SCRATCH}/test_without_op")
file(WRITE "${SCRATCH}/test_without_op/tests/kernels/gamma_test.cpp" "")
expect(test_without_op "${SCRATCH}/test_without_op" FAIL "gamma_test.cpp tests no op")

make_tree("${SCRATCH}/test_of_a_shared_piece")
file(WRITE "${SCRATCH}/test_of_a_shared_piece/tests/kernels/cuda_types_test.cpp" "")
expect(test_of_a_shared_piece "${SCRATCH}/test_of_a_shared_piece" FAIL "cuda_types_test.cpp tests no op")

make_tree("${SCRATCH}/stale_exemption")
file(REMOVE "${SCRATCH}/stale_exemption/kernels/noise_math.h")
expect(stale_exemption "${SCRATCH}/stale_exemption" FAIL "kernels/noise_math.h does not exist")

file(REMOVE_RECURSE "${SCRATCH}")
if(failures)
  message(FATAL_ERROR "check_op_coverage.cmake missed a fault:${failures}")
endif()
message(STATUS "check_op_coverage.cmake passes the correct tree and names each planted fault")
