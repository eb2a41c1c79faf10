# Finds every dependency once, for the whole tree. Optional parts are switched off with a
# message naming the missing package instead of failing the configure step.
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PNG REQUIRED)
# core's SHA-256 (core/sha256.cpp): libcrypto's EVP digest API (Debian: libssl-dev).
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
# Debian's libssl-dev keeps openssl/configuration.h under include/<multiarch>/, which the compiler
# searches on its own only below /usr: a copy staged elsewhere (tools/gpu-host/stage-sandbox.sh
# into .deps/) needs that folder named.
if(CMAKE_LIBRARY_ARCHITECTURE AND NOT EXISTS "${OPENSSL_INCLUDE_DIR}/openssl/configuration.h"
   AND EXISTS "${OPENSSL_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}/openssl/configuration.h"
   AND NOT OPENSSL_INCLUDE_DIR STREQUAL "/usr/include")
  set_property(TARGET OpenSSL::Crypto APPEND PROPERTY
    INTERFACE_INCLUDE_DIRECTORIES "${OPENSSL_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

if(DIT_WITH_CUDA)
  enable_language(CUDA)
  find_package(CUDAToolkit 12.0 REQUIRED)
  find_package(CUDNN REQUIRED)
  include(DitCudaArchitectures)
  # CUDA 13 moved Thrust, CUB and libcu++ under include/cccl; CMake 3.25's CUDA::toolkit does
  # not know that yet, so host code that includes them needs the path added.
  if(NOT TARGET dit_cccl)
    add_library(dit_cccl INTERFACE)
    foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
      if(EXISTS "${dir}/cccl")
        target_include_directories(dit_cccl SYSTEM INTERFACE "${dir}/cccl")
      endif()
    endforeach()
    add_library(dit::cccl ALIAS dit_cccl)
  endif()
  # CUTLASS's headers (FindCUTLASS.cmake), for kernels that fold work into a GEMM's operand loads
  # or its epilogue: dit::cutlass, a SYSTEM include so that its warnings are not the project's.
  # Optional: without it dit::cutlass is not defined and its smoke test (tests/deps/) not built.
  # The version tested is the pinned 4.2.0.0; 3.5 is the oldest a host's own copy may be.
  find_package(CUTLASS 3.5)
  if(CUTLASS_FOUND AND NOT TARGET dit_cutlass)
    add_library(dit_cutlass INTERFACE)
    # BUILD_INTERFACE: the installed package does not ship CUTLASS (DitInstall.cmake).
    target_include_directories(dit_cutlass SYSTEM INTERFACE "$<BUILD_INTERFACE:${DIT_CUTLASS_INCLUDE_DIR}>")
    target_link_libraries(dit_cutlass INTERFACE dit::cccl)
    add_library(dit::cutlass ALIAS dit_cutlass)
  elseif(NOT CUTLASS_FOUND)
    message(WARNING "CUTLASS 3.5+ not found (tools/install-deps.sh, or pip install nvidia-cutlass==4.2.0.0, or "
                    "-DDIT_CUTLASS_INCLUDE_DIR=<folder holding cutlass/ and cute/>): dit::cutlass is not defined "
                    "and cutlass_gemm_test is not built")
  endif()
  # cudnn-frontend's headers (FindCudnnFrontend.cmake), the graph API over cuDNN's backend
  # descriptors, for what cuDNN offers only through it (its fused attention): dit::cudnn_frontend,
  # a SYSTEM include with cuDNN itself, without the frontend's bundled JSON library (serialising
  # graphs is not used, and its nlohmann copy would meet Debian's), and with NVRTC, which one of
  # its engines (for sm_100) calls; nothing of it needs libcuda.so.1 to start, so a machine without
  # a GPU runs its tests to their skip. Optional like CUTLASS: without it dit::cudnn_frontend is
  # not defined and its smoke test (tests/deps/) not built.
  find_package(CudnnFrontend 1.8)
  if(CudnnFrontend_FOUND AND NOT TARGET dit_cudnn_frontend)
    add_library(dit_cudnn_frontend INTERFACE)
    # BUILD_INTERFACE: the installed package does not ship cudnn-frontend (DitInstall.cmake).
    target_include_directories(dit_cudnn_frontend SYSTEM INTERFACE "$<BUILD_INTERFACE:${DIT_CUDNN_FRONTEND_INCLUDE_DIR}>")
    target_compile_definitions(dit_cudnn_frontend INTERFACE CUDNN_FRONTEND_SKIP_JSON_LIB)
    target_link_libraries(dit_cudnn_frontend INTERFACE CUDNN::cudnn CUDA::cudart CUDA::nvrtc)
    add_library(dit::cudnn_frontend ALIAS dit_cudnn_frontend)
  elseif(NOT CudnnFrontend_FOUND)
    message(WARNING "cudnn-frontend 1.8+ not found (tools/install-deps.sh, or "
                    "-DDIT_CUDNN_FRONTEND_INCLUDE_DIR=<folder holding cudnn_frontend.h>): dit::cudnn_frontend "
                    "is not defined and cudnn_sdpa_test is not built")
  endif()
endif()

if(DIT_WITH_TESTS)
  find_package(GTest REQUIRED)
endif()

if(DIT_WITH_BENCH)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND)
    message(WARNING "Google Benchmark not found (Debian: libbenchmark-dev): DIT_WITH_BENCH is switched off")
    set(DIT_WITH_BENCH OFF CACHE BOOL "" FORCE)
  endif()
endif()

if(DIT_WITH_DRIVER)
  find_package(LibGit2)
  find_package(SQLite3)
  find_package(pugixml QUIET)
  set(_missing "")
  if(NOT LibGit2_FOUND)
    list(APPEND _missing "libgit2 (Debian: libgit2-dev)")
  endif()
  if(NOT SQLite3_FOUND)
    list(APPEND _missing "SQLite3 (Debian: libsqlite3-dev)")
  endif()
  if(NOT pugixml_FOUND)
    list(APPEND _missing "pugixml (Debian: libpugixml-dev)")
  endif()
  if(_missing)
    list(JOIN _missing ", " _missing)
    message(WARNING "dit-ar needs ${_missing}: DIT_WITH_DRIVER is switched off")
    set(DIT_WITH_DRIVER OFF CACHE BOOL "" FORCE)
  endif()
endif()
