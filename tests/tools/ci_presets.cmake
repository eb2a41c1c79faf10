# The presets a CI pipeline or an agent runs (README.md, "Presets"): every lane of the session
# config has a workflow preset of its name whose steps are exactly the lane's configure preset,
# build preset and test presets, in the lane's order, so `cmake --workflow --preset <lane>` builds
# and tests a tree as dit-ar would; and every test preset writes JUnit (output.outputJUnitFile, its
# own or inherited) to a path relative to its build directory, no two of one build the same file.
#
#   cmake -DSOURCE_DIR=<repository root> -P ci_presets.cmake
#       checks CMakePresets.json against config/autoresearch.json, failing with every problem.
#   cmake -DSELF_TEST_DIR=<scratch folder> -P ci_presets.cmake
#       breaks small presets and config documents in each way of the table below and fails unless
#       the checks find exactly the one problem each case planted (and nothing in the clean one).
include("${CMAKE_CURRENT_LIST_DIR}/../support/planted_cases.cmake")
cmake_minimum_required(VERSION 3.25)

# Index of the preset NAME in the array KIND of PRESETS, or -1.
function(preset_index presets kind name out)
  set(${out} -1 PARENT_SCOPE)
  string(JSON count ERROR_VARIABLE missing LENGTH "${presets}" ${kind})
  if(missing OR count EQUAL 0)
    return()
  endif()
  math(EXPR last "${count} - 1")
  foreach(index RANGE ${last})
    string(JSON found GET "${presets}" ${kind} ${index} name)
    if(found STREQUAL name)
      set(${out} ${index} PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# The value at the path ARGN of preset NAME of KIND, its own or the first found through
# `inherits` (depth first, in order, as CMake resolves it); "" with FOUND false when none has it.
function(preset_field presets kind name out found)
  set(${out} "" PARENT_SCOPE)
  set(${found} FALSE PARENT_SCOPE)
  preset_index("${presets}" ${kind} "${name}" index)
  if(index EQUAL -1)
    return()
  endif()
  string(JSON value ERROR_VARIABLE missing GET "${presets}" ${kind} ${index} ${ARGN})
  if(NOT missing)
    set(${out} "${value}" PARENT_SCOPE)
    set(${found} TRUE PARENT_SCOPE)
    return()
  endif()
  string(JSON type ERROR_VARIABLE missing TYPE "${presets}" ${kind} ${index} inherits)
  if(missing)
    return()
  endif()
  set(parents "")
  if(type STREQUAL "STRING")
    string(JSON parents GET "${presets}" ${kind} ${index} inherits)
  else()
    string(JSON count LENGTH "${presets}" ${kind} ${index} inherits)
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(position RANGE ${last})
        string(JSON parent GET "${presets}" ${kind} ${index} inherits ${position})
        list(APPEND parents "${parent}")
      endforeach()
    endif()
  endif()
  foreach(parent IN LISTS parents)
    preset_field("${presets}" ${kind} "${parent}" value parent_found ${ARGN})
    if(parent_found)
      set(${out} "${value}" PARENT_SCOPE)
      set(${found} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# Every problem of PRESETS (CMakePresets.json's text) against CONFIG (autoresearch.json's), into OUT.
function(preset_problems presets config out)
  set(problems "")
  string(JSON lane_count LENGTH "${config}" lanes)
  if(lane_count GREATER 0)
    math(EXPR last "${lane_count} - 1")
    foreach(position RANGE ${last})
      string(JSON lane MEMBER "${config}" lanes ${position})
      string(JSON configure GET "${config}" lanes "${lane}" configure_preset)
      string(JSON build GET "${config}" lanes "${lane}" build_preset)
      set(expected "configure ${configure}" "build ${build}")
      string(JSON test_count LENGTH "${config}" lanes "${lane}" test_presets)
      if(test_count GREATER 0)
        math(EXPR last_test "${test_count} - 1")
        foreach(test RANGE ${last_test})
          string(JSON name GET "${config}" lanes "${lane}" test_presets ${test})
          list(APPEND expected "test ${name}")
        endforeach()
      endif()
      list(JOIN expected ", " expected_text)
      preset_index("${presets}" workflowPresets "${lane}" index)
      if(index EQUAL -1)
        list(APPEND problems "lane ${lane} has no workflow preset ${lane} (steps: ${expected_text})")
        continue()
      endif()
      set(steps "")
      string(JSON step_count ERROR_VARIABLE missing LENGTH "${presets}" workflowPresets ${index} steps)
      if(NOT missing AND step_count GREATER 0)
        math(EXPR last_step "${step_count} - 1")
        foreach(step RANGE ${last_step})
          string(JSON type GET "${presets}" workflowPresets ${index} steps ${step} type)
          string(JSON name GET "${presets}" workflowPresets ${index} steps ${step} name)
          list(APPEND steps "${type} ${name}")
        endforeach()
      endif()
      if(NOT steps STREQUAL expected)
        list(JOIN steps ", " steps_text)
        list(APPEND problems
             "workflow preset ${lane} runs (${steps_text}), lane ${lane} of the config runs (${expected_text})")
      endif()
    endforeach()
  endif()

  set(junit_files "")
  string(JSON test_count ERROR_VARIABLE missing LENGTH "${presets}" testPresets)
  if(NOT missing AND test_count GREATER 0)
    math(EXPR last "${test_count} - 1")
    foreach(index RANGE ${last})
      string(JSON name GET "${presets}" testPresets ${index} name)
      string(JSON hidden ERROR_VARIABLE not_hidden GET "${presets}" testPresets ${index} hidden)  # never inherited
      if(NOT not_hidden AND hidden)
        continue()
      endif()
      preset_field("${presets}" testPresets "${name}" junit junit_found output outputJUnitFile)
      if(NOT junit_found OR junit STREQUAL "")
        list(APPEND problems "test preset ${name} writes no JUnit (no output.outputJUnitFile, own or inherited)")
        continue()
      endif()
      # A relative path is the build directory's; one from a macro (${sourceDir}, $env{...}) is not.
      if(IS_ABSOLUTE "${junit}" OR (junit MATCHES "^\\$" AND NOT junit MATCHES "^\\$\\{presetName\\}")
         OR junit MATCHES "(^|/)\\.\\.(/|$)")
        list(APPEND problems "test preset ${name} writes JUnit to ${junit}, not a path inside its build directory")
        continue()
      endif()
      string(REPLACE "\${presetName}" "${name}" file "${junit}")
      preset_field("${presets}" testPresets "${name}" configure configure_found configurePreset)
      set(key "${configure}:${file}")
      string(MD5 key_id "${key}")
      if(DEFINED owner_${key_id})
        list(APPEND problems
             "test presets ${owner_${key_id}} and ${name} both write ${file} in the build of ${configure}")
      else()
        set(owner_${key_id} "${name}")
      endif()
    endforeach()
  endif()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

if(DEFINED SELF_TEST_DIR)
  set(base_config [=[{"lanes": {"gpu-lane": {"configure_preset": "gpu", "build_preset": "gpu-session",
    "test_presets": ["gpu", "gpu-perf"]}}}]=])
  set(base_presets [=[{"version": 6,
    "configurePresets": [{"name": "gpu", "binaryDir": "${sourceDir}/build/${presetName}"}],
    "buildPresets": [{"name": "gpu-session", "configurePreset": "gpu"}],
    "testPresets": [
      {"name": "common", "hidden": true, "output": {"outputOnFailure": true, "outputJUnitFile": "junit/${presetName}.xml"}},
      {"name": "gpu-required", "hidden": true, "environment": {"DIT_REQUIRE_GPU": "1"}},
      {"name": "gpu", "inherits": ["common", "gpu-required"], "configurePreset": "gpu"},
      {"name": "gpu-perf", "inherits": "common", "configurePreset": "gpu", "output": {"verbosity": "verbose"}}],
    "workflowPresets": [{"name": "gpu-lane", "steps": [{"type": "configure", "name": "gpu"},
      {"type": "build", "name": "gpu-session"}, {"type": "test", "name": "gpu"}, {"type": "test", "name": "gpu-perf"}]}]}]=])
  # name|what the one problem found must name ("" for none)
  set(cases
      "clean|"
      "junit_through_second_parent|"
      "lane_without_workflow|lane gpu-lane has no workflow preset"
      "workflow_named_otherwise|lane gpu-lane has no workflow preset"
      "workflow_other_build|workflow preset gpu-lane runs"
      "workflow_missing_test|workflow preset gpu-lane runs"
      "workflow_tests_reordered|workflow preset gpu-lane runs"
      "workflow_extra_test|workflow preset gpu-lane runs"
      "lane_changed_build|workflow preset gpu-lane runs"
      "test_preset_without_junit|test preset gpu writes no JUnit"
      "junit_absolute|test preset gpu-perf writes JUnit to /tmp/junit.xml"
      "junit_outside_build|test preset gpu-perf writes JUnit to ../junit.xml"
      "junit_shared|test presets gpu and gpu-perf both write junit/all.xml")
  set(failures "")
  foreach(case IN LISTS cases)
    string(REPLACE "|" ";" fields "${case}")
    list(GET fields 0 name)
    list(GET fields 1 expected)
    set(presets "${base_presets}")
    set(config "${base_config}")
    if(name STREQUAL "junit_through_second_parent")
      string(JSON presets SET "${presets}" testPresets 2 inherits [=[["gpu-required", "common"]]=])
    elseif(name STREQUAL "lane_without_workflow")
      string(JSON presets REMOVE "${presets}" workflowPresets 0)
    elseif(name STREQUAL "workflow_named_otherwise")
      string(JSON presets SET "${presets}" workflowPresets 0 name [=["gpu"]=])
    elseif(name STREQUAL "workflow_other_build")
      string(JSON presets SET "${presets}" workflowPresets 0 steps 1 name [=["gpu"]=])
    elseif(name STREQUAL "workflow_missing_test")
      string(JSON presets REMOVE "${presets}" workflowPresets 0 steps 3)
    elseif(name STREQUAL "workflow_tests_reordered")
      string(JSON presets SET "${presets}" workflowPresets 0 steps 2 name [=["gpu-perf"]=])
      string(JSON presets SET "${presets}" workflowPresets 0 steps 3 name [=["gpu"]=])
    elseif(name STREQUAL "workflow_extra_test")
      string(JSON presets SET "${presets}" workflowPresets 0 steps 4 [=[{"type": "test", "name": "gpu"}]=])
    elseif(name STREQUAL "lane_changed_build")
      string(JSON config SET "${config}" lanes gpu-lane build_preset [=["gpu"]=])
    elseif(name STREQUAL "test_preset_without_junit")
      string(JSON presets REMOVE "${presets}" testPresets 0 output outputJUnitFile)
      string(JSON presets SET "${presets}" testPresets 3 output outputJUnitFile [=["junit/perf.xml"]=])
    elseif(name STREQUAL "junit_absolute")
      string(JSON presets SET "${presets}" testPresets 3 output outputJUnitFile [=["/tmp/junit.xml"]=])
    elseif(name STREQUAL "junit_outside_build")
      string(JSON presets SET "${presets}" testPresets 3 output outputJUnitFile [=["../junit.xml"]=])
    elseif(name STREQUAL "junit_shared")
      string(JSON presets SET "${presets}" testPresets 0 output outputJUnitFile [=["junit/all.xml"]=])
    endif()
    file(WRITE "${SELF_TEST_DIR}/${name}/CMakePresets.json" "${presets}\n")
    file(WRITE "${SELF_TEST_DIR}/${name}/autoresearch.json" "${config}\n")
    preset_problems("${presets}" "${config}" found)
    dit_check_planted("${name}" "${expected}" "${found}" failures)
  endforeach()
  if(failures)
    list(JOIN failures "\n  " text)
    message(FATAL_ERROR "ci_presets self-test failed:\n  ${text}")
  endif()
  list(LENGTH cases count)
  message(STATUS "ci_presets: ${count} of ${count} cases found as planted")
elseif(DEFINED SOURCE_DIR)
  file(READ "${SOURCE_DIR}/CMakePresets.json" presets)
  file(READ "${SOURCE_DIR}/config/autoresearch.json" config)
  preset_problems("${presets}" "${config}" found)
  if(found)
    list(LENGTH found count)
    list(JOIN found "\n  " text)
    message(FATAL_ERROR "${count} problem(s) in CMakePresets.json (README.md, \"Presets\"):\n  ${text}")
  endif()
  string(JSON lanes LENGTH "${config}" lanes)
  message(STATUS "every lane (${lanes}) has its workflow preset, and every test preset writes its own JUnit")
else()
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository root> -P ci_presets.cmake\n"
                      "       cmake -DSELF_TEST_DIR=<scratch folder> -P ci_presets.cmake")
endif()
