# FindCUDNN: cuDNN 9 headers and library, as the imported target CUDNN::cudnn.
#
# Looked for, in order: CUDNN_ROOT (cache or environment; may be laid out like the
# nvidia-cudnn Python wheel: include/cudnn.h and lib/libcudnn.so.9 with no unversioned
# libcudnn.so), the CUDA toolkit, then the system paths.
# Sets CUDNN_FOUND, CUDNN_VERSION, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY.
set(_cudnn_hints "")
if(CUDNN_ROOT)
  list(APPEND _cudnn_hints "${CUDNN_ROOT}")
endif()
if(DEFINED ENV{CUDNN_ROOT})
  list(APPEND _cudnn_hints "$ENV{CUDNN_ROOT}")
endif()
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _cudnn_hints "${CUDAToolkit_LIBRARY_ROOT}")
endif()
if(CUDAToolkit_BIN_DIR)
  list(APPEND _cudnn_hints "${CUDAToolkit_BIN_DIR}/..")
endif()

find_path(CUDNN_INCLUDE_DIR cudnn_version.h
  HINTS ${_cudnn_hints}
  PATH_SUFFIXES include targets/x86_64-linux/include)
find_library(CUDNN_LIBRARY
  NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu targets/x86_64-linux/lib)

if(CUDNN_INCLUDE_DIR AND EXISTS "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_lines
    REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(part MAJOR MINOR PATCHLEVEL)
    string(REGEX REPLACE ".*CUDNN_${part} +([0-9]+).*" "\\1" _cudnn_${part} "${_cudnn_lines}")
  endforeach()
  set(CUDNN_VERSION "${_cudnn_MAJOR}.${_cudnn_MINOR}.${_cudnn_PATCHLEVEL}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
