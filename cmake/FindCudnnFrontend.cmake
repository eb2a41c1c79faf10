# FindCudnnFrontend: NVIDIA's cudnn-frontend C++ headers (cudnn_frontend.h and its folder), the
# graph API over cuDNN's backend descriptors, header-only, as NVIDIA's PyPI package
# nvidia-cudnn-frontend ships them (include/ of the wheel). The version the project pins and tests
# is 1.32.0 (tools/install-deps.sh, tools/gpu-host/stage-cudnn-frontend.sh); it needs cuDNN 9.
#
# Looked for, in order:
#   1. DIT_CUDNN_FRONTEND_INCLUDE_DIR (cache), else the environment's CUDNN_FRONTEND_INCLUDE_DIR;
#   2. the GPU host's staged copy, share/cudnn-frontend/include.tar.xz under a CMAKE_PREFIX_PATH
#      entry (`. .deps/env.sh` puts .deps/root/usr there) or under this tree's .deps/root/usr:
#      unpacked once into the build tree (_deps/cudnn-frontend/include), again only when the
#      archive changes;
#   3. tools/install-deps.sh's folder, /opt/nvidia-cudnn-frontend/include.
# Sets CudnnFrontend_FOUND, CudnnFrontend_VERSION and the cache variable
# DIT_CUDNN_FRONTEND_INCLUDE_DIR.

# 2. The staged archive.
include("${CMAKE_CURRENT_LIST_DIR}/DitStagedHeaders.cmake")
dit_staged_headers(cudnn-frontend "${DIT_CUDNN_FRONTEND_INCLUDE_DIR}" _cudnn_fe_staged)

# 1 to 3.
set(_cudnn_fe_hints "")
if(DEFINED ENV{CUDNN_FRONTEND_INCLUDE_DIR})
  list(APPEND _cudnn_fe_hints "$ENV{CUDNN_FRONTEND_INCLUDE_DIR}")
endif()
if(_cudnn_fe_staged)
  list(APPEND _cudnn_fe_hints "${_cudnn_fe_staged}")
endif()
list(APPEND _cudnn_fe_hints /opt/nvidia-cudnn-frontend/include)
find_path(DIT_CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend_version.h HINTS ${_cudnn_fe_hints} NO_DEFAULT_PATH
  DOC "cudnn-frontend's include folder (holding cudnn_frontend.h)")

set(CudnnFrontend_VERSION "")
set(_cudnn_fe_reason "")
if(DIT_CUDNN_FRONTEND_INCLUDE_DIR AND NOT EXISTS "${DIT_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
  set(_cudnn_fe_reason "DIT_CUDNN_FRONTEND_INCLUDE_DIR=${DIT_CUDNN_FRONTEND_INCLUDE_DIR} holds no cudnn_frontend.h")
elseif(DIT_CUDNN_FRONTEND_INCLUDE_DIR)
  file(STRINGS "${DIT_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h" _cudnn_fe_lines
    REGEX "^#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION +[0-9]+")
  foreach(_cudnn_fe_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*CUDNN_FRONTEND_${_cudnn_fe_part}_VERSION +([0-9]+).*" "\\1" _cudnn_fe_${_cudnn_fe_part}
      "${_cudnn_fe_lines}")
  endforeach()
  set(CudnnFrontend_VERSION "${_cudnn_fe_MAJOR}.${_cudnn_fe_MINOR}.${_cudnn_fe_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CudnnFrontend
  REQUIRED_VARS DIT_CUDNN_FRONTEND_INCLUDE_DIR CudnnFrontend_VERSION
  VERSION_VAR CudnnFrontend_VERSION
  REASON_FAILURE_MESSAGE "${_cudnn_fe_reason}")
mark_as_advanced(DIT_CUDNN_FRONTEND_INCLUDE_DIR)
