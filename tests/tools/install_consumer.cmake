# The installed package works for a project outside the tree (README.md, "Installing"):
#
#   cmake -DBUILD_DIR=<build> -DSOURCE_DIR=<repository root> -DWORK_DIR=<scratch folder>
#         -DGENERATOR=... [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DBUILD_TYPE=...]
#         [-DPREFIX_PATH=a|b] [-DLIBDIR=lib] [-DEXPECT_DRIVER=ON] -P install_consumer.cmake
#
# installs BUILD_DIR into WORK_DIR/prefix (cmake --install), checks the package files and that
# every installed program starts (--help), copies tests/tools/install_consumer/ out of the tree,
# configures it against the prefix alone (find_package(DitAutoResearch CONFIG), dit::engine),
# builds it, checks that no include path of its compile leads into the source tree, and runs it: one forward pass
# of a tiny DiT on the CPU backend, which works in a CUDA build on a machine without a GPU too.
cmake_minimum_required(VERSION 3.25)

foreach(required IN ITEMS BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "install_consumer.cmake needs -D${required}=...")
  endif()
endforeach()
if(NOT DEFINED LIBDIR)
  set(LIBDIR lib)
endif()
set(prefix "${WORK_DIR}/prefix")
set(consumer_source "${WORK_DIR}/consumer-src")
set(consumer_build "${WORK_DIR}/consumer-build")
set(expected_output "dit::engine DiT-consumer on cpu: output \\[1, 8, 8, 8\\], finite")

# Runs a command, failing with its output unless it exits 0; its standard output goes to OUT.
function(run_step what out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${output}\n${errors}")
  endif()
  message(STATUS "${what}: ok")
  set(${out} "${output}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
run_step("cmake --install ${BUILD_DIR} --prefix ${prefix}" ignored
  "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

set(package_dir "${prefix}/${LIBDIR}/cmake/DitAutoResearch")
set(programs dit-sample dit-quality dit-quality-render)
if(EXPECT_DRIVER)
  list(APPEND programs dit-ar)
endif()
set(missing "")
foreach(file IN ITEMS "${package_dir}/DitAutoResearchConfig.cmake" "${package_dir}/DitAutoResearchConfigVersion.cmake"
                      "${package_dir}/DitAutoResearchTargets.cmake" "${prefix}/include/dit-autoresearch/model/dit_model.h"
                      "${prefix}/include/dit-autoresearch/core/tensor.h"
                      "${prefix}/include/dit-autoresearch/kernels/sampler_step.h")
  if(NOT EXISTS "${file}")
    list(APPEND missing "${file}")
  endif()
endforeach()
foreach(program IN LISTS programs)
  if(NOT EXISTS "${prefix}/bin/${program}")
    list(APPEND missing "${prefix}/bin/${program}")
  endif()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "the install left out:\n  ${text}")
endif()
foreach(program IN LISTS programs)
  run_step("installed ${program} --help" ignored "${prefix}/bin/${program}" --help)
endforeach()

# The consumer is configured from a copy outside the tree, against the prefix and the build's
# own dependency prefixes only.
file(COPY "${SOURCE_DIR}/tests/tools/install_consumer/" DESTINATION "${consumer_source}")
set(search_path "${prefix}")
if(DEFINED PREFIX_PATH AND NOT PREFIX_PATH STREQUAL "")
  string(REPLACE "|" ";" extra "${PREFIX_PATH}")
  list(APPEND search_path ${extra})
endif()
list(JOIN search_path "\\;" search_text)
set(configure_arguments -S "${consumer_source}" -B "${consumer_build}" "-G${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${search_text}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
foreach(setting IN ITEMS MAKE_PROGRAM:CMAKE_MAKE_PROGRAM CXX_COMPILER:CMAKE_CXX_COMPILER BUILD_TYPE:CMAKE_BUILD_TYPE)
  string(REPLACE ":" ";" pair "${setting}")
  list(GET pair 0 input)
  list(GET pair 1 variable)
  if(DEFINED ${input} AND NOT "${${input}}" STREQUAL "")
    list(APPEND configure_arguments "-D${variable}=${${input}}")
  endif()
endforeach()
run_step("configure the consumer" ignored "${CMAKE_COMMAND}" ${configure_arguments})

file(STRINGS "${consumer_build}/CMakeCache.txt" found_dir REGEX "^DitAutoResearch_DIR:")
string(REGEX REPLACE "^[^=]*=" "" found_dir "${found_dir}")
file(REAL_PATH "${found_dir}" found_dir)
file(REAL_PATH "${package_dir}" expected_dir)
if(NOT found_dir STREQUAL expected_dir)
  message(FATAL_ERROR "the consumer found DitAutoResearch in ${found_dir}, not in the install prefix (${expected_dir})")
endif()

run_step("build the consumer" ignored "${CMAKE_COMMAND}" --build "${consumer_build}" --parallel 2)
# No include path of the consumer's compile may lead into the source tree (the scratch folder may
# lie inside it, in the build tree; so may a dependency prefix of $CMAKE_PREFIX_PATH, such as a
# GPU host's staged .deps/).
file(READ "${consumer_build}/compile_commands.json" commands)
string(REGEX MATCHALL "(-I|-isystem )[^ \"]+" include_flags "${commands}")
string(REPLACE ":" ";" dependency_prefixes "$ENV{CMAKE_PREFIX_PATH}")
foreach(flag IN LISTS include_flags)
  string(REGEX REPLACE "^(-I|-isystem )" "" path "${flag}")
  string(FIND "${path}/" "${SOURCE_DIR}/" in_source)
  string(FIND "${path}/" "${WORK_DIR}/" in_work)
  set(in_dependency FALSE)
  foreach(prefix IN LISTS dependency_prefixes)
    string(FIND "${path}/" "${prefix}/" at)
    string(FIND "${SOURCE_DIR}/" "${prefix}/" holds_source)  # a prefix above the tree excuses nothing
    if(prefix AND at EQUAL 0 AND NOT holds_source EQUAL 0)
      set(in_dependency TRUE)
    endif()
  endforeach()
  if(in_source EQUAL 0 AND NOT in_work EQUAL 0 AND NOT in_dependency)
    message(FATAL_ERROR "the consumer compiles with ${flag}, a path of the source tree:\n${commands}")
  endif()
endforeach()

run_step("run the consumer" output "${consumer_build}/dit-install-consumer")
string(STRIP "${output}" output)
if(NOT output MATCHES "^${expected_output}$")
  message(FATAL_ERROR "the consumer printed\n  ${output}\nexpected\n  ${expected_output}")
endif()
message(STATUS "${output}")
