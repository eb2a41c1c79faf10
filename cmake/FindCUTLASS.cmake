# FindCUTLASS: NVIDIA CUTLASS's C++ headers (include/cutlass and include/cute), header-only, as
# NVIDIA's PyPI package nvidia-cutlass ships them (cutlass_library/source/include). The version
# the project pins and tests is 4.2.0.0 (tools/install-deps.sh, tools/gpu-host/stage-cutlass.sh).
#
# Looked for, in order:
#   1. DIT_CUTLASS_INCLUDE_DIR (cache), else the environment's CUTLASS_INCLUDE_DIR;
#   2. the GPU host's staged copy, share/cutlass/include.tar.xz under a CMAKE_PREFIX_PATH entry
#      (`. .deps/env.sh` puts .deps/root/usr there) or under this tree's .deps/root/usr: unpacked
#      once into the build tree (_deps/cutlass/include), again only when the archive changes;
#   3. tools/install-deps.sh's folder, /opt/nvidia-cutlass;
#   4. the wheel in the site folders of the project's Python (DIT_PYTHON3, else python3 on PATH):
#      asked once per build tree and remembered (DIT_CUTLASS_PYTHON_SITES), so that a reconfigure
#      starts no Python, yet still finds a wheel installed there since.
# Sets CUTLASS_FOUND, CUTLASS_VERSION and the cache variable DIT_CUTLASS_INCLUDE_DIR.

# 2. The staged archive.
include("${CMAKE_CURRENT_LIST_DIR}/DitStagedHeaders.cmake")
dit_staged_headers(cutlass "${DIT_CUTLASS_INCLUDE_DIR}" _cutlass_staged)

# 1 to 3.
set(_cutlass_hints "")
if(DEFINED ENV{CUTLASS_INCLUDE_DIR})
  list(APPEND _cutlass_hints "$ENV{CUTLASS_INCLUDE_DIR}")
endif()
if(_cutlass_staged)
  list(APPEND _cutlass_hints "${_cutlass_staged}")
endif()
list(APPEND _cutlass_hints /opt/nvidia-cutlass/cutlass_library/source/include)
find_path(DIT_CUTLASS_INCLUDE_DIR cutlass/version.h HINTS ${_cutlass_hints} NO_DEFAULT_PATH
  DOC "CUTLASS's include folder (holding cutlass/ and cute/)")

# 4. Python's site folders, asked once.
if(NOT DIT_CUTLASS_INCLUDE_DIR)
  if(NOT DEFINED DIT_CUTLASS_PYTHON_SITES)
    if(DIT_PYTHON3)
      set(_cutlass_python "${DIT_PYTHON3}")
    else()
      find_program(_cutlass_python python3 NO_CACHE)
    endif()
    set(_cutlass_sites "")
    if(_cutlass_python)
      execute_process(
        COMMAND "${_cutlass_python}" -c
                "import site, sysconfig; print(';'.join([sysconfig.get_paths()['purelib'], *getattr(site, 'getsitepackages', list)(), site.getusersitepackages()]))"
        OUTPUT_VARIABLE _cutlass_sites OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
    set(DIT_CUTLASS_PYTHON_SITES "${_cutlass_sites}" CACHE INTERNAL "the site folders of Python, where pip puts nvidia-cutlass")
  endif()
  set(_cutlass_hints ${DIT_CUTLASS_PYTHON_SITES})
  list(TRANSFORM _cutlass_hints APPEND /cutlass_library/source/include)
  find_path(DIT_CUTLASS_INCLUDE_DIR cutlass/version.h HINTS ${_cutlass_hints} NO_DEFAULT_PATH)
endif()

set(CUTLASS_VERSION "")
set(_cutlass_reason "")
if(DIT_CUTLASS_INCLUDE_DIR AND NOT EXISTS "${DIT_CUTLASS_INCLUDE_DIR}/cutlass/version.h")
  set(_cutlass_reason "DIT_CUTLASS_INCLUDE_DIR=${DIT_CUTLASS_INCLUDE_DIR} holds no cutlass/version.h")
elseif(DIT_CUTLASS_INCLUDE_DIR)
  file(STRINGS "${DIT_CUTLASS_INCLUDE_DIR}/cutlass/version.h" _cutlass_lines
    REGEX "^#define CUTLASS_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_cutlass_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*CUTLASS_${_cutlass_part} +([0-9]+).*" "\\1" _cutlass_${_cutlass_part} "${_cutlass_lines}")
  endforeach()
  set(CUTLASS_VERSION "${_cutlass_MAJOR}.${_cutlass_MINOR}.${_cutlass_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUTLASS
  REQUIRED_VARS DIT_CUTLASS_INCLUDE_DIR CUTLASS_VERSION
  VERSION_VAR CUTLASS_VERSION
  REASON_FAILURE_MESSAGE "${_cutlass_reason}")
mark_as_advanced(DIT_CUTLASS_INCLUDE_DIR)
