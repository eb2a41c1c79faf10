# CTest over the host's GPUs. At configure time the build lists its GPUs (DIT_CTEST_GPUS) and
# writes <build>/ctest-resources.json, the resource specification every ctest run of the build
# reads (CTEST_RESOURCE_SPEC_FILE: a preset run or a plain one). With GPUs, each GPU has
# DIT_CTEST_GPU_SLOTS slots; a GPU test declares RESOURCE_GROUPS "gpus:<all of them>"
# (_dit_mark_gpu_test, DitHelpers.cmake), so CTest runs as many GPU tests at once as there are
# GPUs, and a test that only names its GPU (the quality gates: which device's floors apply)
# declares "gpus:1" (SHARED): up to that many of them share one GPU, never beside a test that
# holds it whole. Each starts with its GPU's index, which the test's process turns into
# CUDA_VISIBLE_DEVICES (core/ctest_gpu.h); tests that time keep RUN_SERIAL. With none (CI,
# a CPU build, a machine without a driver) the specification lists none and GPU tests keep the one
# `gpu` lock and skip as before (a test that asks for a GPU the specification lacks would be
# reported as not run, not skipped).
#   DIT_CTEST_GPUS  auto (default: nvidia-smi's indices, in its PCI bus order; a configure-time
#                   CUDA_VISIBLE_DEVICES of indices narrows them), none, or indices ("0;2" or "0,2")
include_guard(GLOBAL)

set(DIT_CTEST_GPUS "auto" CACHE STRING "GPUs CTest hands to GPU tests: auto, none, or nvidia-smi indices (0;1)")
set(DIT_CTEST_RESOURCE_SPEC "${PROJECT_BINARY_DIR}/ctest-resources.json")
# Slots per GPU: how many SHARED tests one GPU takes at once (core/ctest_gpu.h's kCtestGpuSlots,
# which `dit-ar doctor` writes; tests/tools/ctest_resources_test.cmake checks they agree).
set(DIT_CTEST_GPU_SLOTS 4)

# The indices DIT_CTEST_GPUS names, into `out` (empty: none). `query` is nvidia-smi's answer,
# one index per line, for `auto` (a parameter, so a test can give one without a GPU).
function(dit_ctest_gpu_ids setting query visible out)
  set(ids "")
  if(setting STREQUAL "auto")
    string(REGEX MATCHALL "[0-9]+" ids "${query}")
    if(NOT visible STREQUAL "" AND visible MATCHES "^[0-9]+(,[0-9]+)*$")
      string(REPLACE "," ";" wanted "${visible}")
      set(kept "")
      foreach(id IN LISTS ids)
        if(id IN_LIST wanted)
          list(APPEND kept ${id})
        endif()
      endforeach()
      set(ids ${kept})
    endif()
  elseif(NOT setting STREQUAL "none")
    string(REPLACE "," ";" ids "${setting}")
    foreach(id IN LISTS ids)
      if(NOT id MATCHES "^[0-9]+$")
        message(FATAL_ERROR "DIT_CTEST_GPUS '${setting}': '${id}' is not a GPU index (auto, none, or indices)")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES ids)
  endif()
  set(${out} "${ids}" PARENT_SCOPE)
endfunction()

# The CTest resource specification of `ids`: DIT_CTEST_GPU_SLOTS slots per GPU.
function(dit_write_ctest_resource_spec path ids)
  set(entries "")
  foreach(id IN LISTS ids)
    list(APPEND entries "{\"id\": \"${id}\", \"slots\": ${DIT_CTEST_GPU_SLOTS}}")
  endforeach()
  list(JOIN entries ", " joined)
  file(WRITE "${path}" "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"gpus\": [${joined}]}]}\n")
endfunction()

# nvidia-smi's answer is kept in the cache with the GPU device nodes it was given for
# (DIT_CTEST_GPU_NODES, /dev/nvidia<N>): a configure that finds the same nodes reuses it, since
# starting nvidia-smi costs a fraction of a second of every configure and dit-ar configures every
# experiment's build. A GPU added or taken away changes the nodes, and nvidia-smi is asked again.
set(DIT_CTEST_GPU_NODES "/dev/nvidia[0-9]*" CACHE STRING "the device nodes whose set keys the cached nvidia-smi answer")
set(query "")
if(DIT_WITH_CUDA AND DIT_CTEST_GPUS STREQUAL "auto")
  find_program(DIT_NVIDIA_SMI nvidia-smi)
  file(GLOB nodes "${DIT_CTEST_GPU_NODES}")
  list(SORT nodes)
  string(SHA256 nodes_key "${DIT_NVIDIA_SMI}|${nodes}")
  if(DEFINED DIT_CTEST_GPU_QUERY_KEY AND DIT_CTEST_GPU_QUERY_KEY STREQUAL nodes_key)
    set(query "${DIT_CTEST_GPU_QUERY}")
  elseif(DIT_NVIDIA_SMI)
    execute_process(COMMAND "${DIT_NVIDIA_SMI}" --query-gpu=index --format=csv,noheader
                    OUTPUT_VARIABLE query RESULT_VARIABLE smi_status ERROR_QUIET TIMEOUT 30)
    if(smi_status STREQUAL "0")
      string(REGEX MATCHALL "[0-9]+" kept_indices "${query}")  # a cache entry holds no newline
      set(DIT_CTEST_GPU_QUERY "${kept_indices}" CACHE INTERNAL "nvidia-smi's GPU indices")
      set(DIT_CTEST_GPU_QUERY_KEY "${nodes_key}" CACHE INTERNAL "the nodes and nvidia-smi they were asked with")
    else()
      set(query "")  # not kept: asked again at the next configure
      unset(DIT_CTEST_GPU_QUERY_KEY CACHE)
    endif()
  endif()
endif()
if(DIT_WITH_CUDA)
  dit_ctest_gpu_ids("${DIT_CTEST_GPUS}" "${query}" "$ENV{CUDA_VISIBLE_DEVICES}" DIT_CTEST_GPU_IDS)
else()
  set(DIT_CTEST_GPU_IDS "")
endif()
dit_write_ctest_resource_spec("${DIT_CTEST_RESOURCE_SPEC}" "${DIT_CTEST_GPU_IDS}")
set(CTEST_RESOURCE_SPEC_FILE "${DIT_CTEST_RESOURCE_SPEC}")
list(LENGTH DIT_CTEST_GPU_IDS gpu_count)
message(STATUS "CTest GPUs: ${gpu_count} (${DIT_CTEST_RESOURCE_SPEC})")
