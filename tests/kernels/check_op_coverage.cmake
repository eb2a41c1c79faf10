# Fails unless every op of kernels/ has its test file, listed in tests/kernels/CMakeLists.txt, and
# every test file names an op. An op is a header kernels/<op>.h other than the shared pieces below
# (kernels/README.md; the .cuh files are shared pieces too); its test is tests/kernels/<op>_test.cpp.
# A variant (kernels/<op>_<form>.h, such as attention_flash.h) is an op with a test file of its own.
#   cmake -DSOURCE_DIR=<checkout> -P tests/kernels/check_op_coverage.cmake
cmake_minimum_required(VERSION 3.25)
set(shared_headers
  cuda_check.h  # the CUDA and cuBLAS call checks
  cuda_types.h  # device dtypes and argument checks
  noise_math.h  # the noise's arithmetic, tested with the noise in noise_test.cpp
)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<checkout> -P check_op_coverage.cmake")
endif()
set(kernels "${SOURCE_DIR}/kernels")
set(tests "${SOURCE_DIR}/tests/kernels")
file(GLOB headers RELATIVE "${kernels}" "${kernels}/*.h")
file(GLOB test_files RELATIVE "${tests}" "${tests}/*_test.cpp")
file(READ "${tests}/CMakeLists.txt" listing)

set(problems "")
set(ops 0)
foreach(header IN LISTS shared_headers)
  if(NOT EXISTS "${kernels}/${header}")
    string(APPEND problems "\n  ${header} is exempt as a shared piece, but kernels/${header} does not exist")
  endif()
endforeach()
foreach(header IN LISTS headers)
  if(header IN_LIST shared_headers)
    continue()
  endif()
  math(EXPR ops "${ops} + 1")
  string(REGEX REPLACE "\\.h$" "" op "${header}")
  if(NOT EXISTS "${tests}/${op}_test.cpp")
    string(APPEND problems "\n  kernels/${header} declares an op, but tests/kernels/${op}_test.cpp does not exist")
  elseif(NOT listing MATCHES "(^|[ \t\n])${op}_test\\.cpp([ \t\n)]|$)")
    string(APPEND problems "\n  tests/kernels/${op}_test.cpp is not listed in tests/kernels/CMakeLists.txt")
  endif()
endforeach()
foreach(test_file IN LISTS test_files)
  string(REGEX REPLACE "_test\\.cpp$" "" op "${test_file}")
  if(NOT EXISTS "${kernels}/${op}.h" OR "${op}.h" IN_LIST shared_headers)
    string(APPEND problems "\n  tests/kernels/${test_file} tests no op: there is no kernels/${op}.h")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "kernel tests do not cover kernels/ one file per op (kernels/README.md):${problems}")
endif()
message(STATUS "${ops} ops in kernels/, each with its listed test file in tests/kernels/")
