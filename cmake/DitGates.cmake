# Fixed during a session. Quality gates as CTest fixtures (see quality/README.md).
#
#   dit_add_gate(SET name CORPUS file.jsonl CONTRACT contract.json BACKEND cpu|cuda
#                [PRECISION fp32] [GPU] [RENDER_TIMEOUT seconds] [ENVIRONMENT VAR=value ...]
#                [WEIGHTS checkpoint.safetensors WEIGHTS_SHA256 hex])
#     quality.<set>.baseline          dit-quality baseline --if-missing: records the set's baseline
#                                     when none is (a plain ctest run), else says where it is;
#                                     FIXTURES_SETUP quality.<set>.baseline; labels `quality;judge`
#     quality.<set>.render            dit-quality-render renders the candidate's outputs into
#                                     $DIT_OUTPUT_DIR/quality/<set>/render (no golden path given);
#                                     FIXTURES_SETUP quality.<set>; labels `quality`
#     quality.<set>.<metric>          dit-quality judges one required metric of the contract;
#                                     labels `quality;judge`
#     quality.<set>.critical.<case>   one per critical case of this corpus; labels
#                                     `quality;critical;judge`
#   GPU sets' tests are also labelled `gpu`. The render runs in the candidate's test stage (the
#   driver sets DIT_OUTPUT_DIR only); the gates carry `judge`: the driver runs them from the
#   judge's own build (ctest -R '^(names)$' -FA '.*', so the render fixture is not run again),
#   where they read the render from $DIT_OUTPUT_DIR/quality/<set>/render, the goldens from
#   $DIT_BASELINE_DIR (default DIT_QUALITY_BASELINE_DIR), the classification from
#   $DIT_CLASSIFICATION (default exact), write gate reports to
#   $DIT_JUDGE_DIR/quality/gates/<test name>.json; a missing baseline or missing floors is an error (2).
#   With DIT_OUTPUT_DIR or DIT_JUDGE_DIR unset (a plain `ctest`), DIT_QUALITY_RUN_DIR stands in
#   for it: the render goes to and is read from <run dir>/<set>/render, reports to <run dir>/gates/.
#   ENVIRONMENT applies to the render test (the CPU set pins OpenMP to one thread, so a
#   parallel ctest does not oversubscribe the cores; its outputs are bit-identical either way,
#   which the calibration's one-thread restatement checks).
#   WEIGHTS and WEIGHTS_SHA256 (together; a relative path from the calling CMakeLists.txt's
#   folder, 64 hexadecimal digits) name the DiT checkpoint of every case of the corpus that names
#   none of its own: the renderer refuses (exit 2) a missing file or one of another sha256, and
#   the gates refuse a render whose weights differ from the baseline's. Without them those cases
#   render the embedded default (seeded random weights). The file may be staged after configure.
#   Each call also adds the set to <build>/quality/gate-sets.json, which `dit-quality baseline`
#   reads to record every set of the build (its corpus and contract by absolute path: the judge's
#   gate-sets.json names the judge's own, locked tree; "weights": {"path", "sha256"} likewise).
include_guard(GLOBAL)

set(DIT_QUALITY_BASELINE_DIR "${PROJECT_SOURCE_DIR}/.autoresearch/baseline" CACHE PATH
  "Baseline directory the quality gates use when DIT_BASELINE_DIR is unset")
set(DIT_QUALITY_RUN_DIR "${PROJECT_BINARY_DIR}/quality-run" CACHE PATH
  "Quality directory the render and the gates use when DIT_OUTPUT_DIR or DIT_JUDGE_DIR is unset")
set(DIT_QUALITY_GATE_SETS "${PROJECT_BINARY_DIR}/quality/gate-sets.json")

function(dit_add_gate)
  cmake_parse_arguments(PARSE_ARGV 0 arg "GPU" "SET;CORPUS;CONTRACT;BACKEND;PRECISION;RENDER_TIMEOUT;WEIGHTS;WEIGHTS_SHA256"
    "ENVIRONMENT")
  if(NOT arg_SET OR NOT arg_CORPUS OR NOT arg_CONTRACT OR NOT arg_BACKEND)
    message(FATAL_ERROR "dit_add_gate needs SET, CORPUS, CONTRACT and BACKEND")
  endif()
  if((arg_WEIGHTS AND NOT arg_WEIGHTS_SHA256) OR (arg_WEIGHTS_SHA256 AND NOT arg_WEIGHTS))
    message(FATAL_ERROR "dit_add_gate(SET ${arg_SET}): WEIGHTS and WEIGHTS_SHA256 go together")
  endif()
  string(LENGTH "${arg_WEIGHTS_SHA256}" sha256_length)  # CMake's regular expressions have no {64}
  if(arg_WEIGHTS_SHA256 AND (NOT arg_WEIGHTS_SHA256 MATCHES "^[0-9a-fA-F]+$" OR NOT sha256_length EQUAL 64))
    message(FATAL_ERROR "dit_add_gate(SET ${arg_SET}): WEIGHTS_SHA256 '${arg_WEIGHTS_SHA256}' is not 64 hexadecimal digits")
  endif()
  if(NOT TARGET dit-quality OR NOT TARGET dit-quality-render)
    message(FATAL_ERROR "dit_add_gate needs the dit-quality and dit-quality-render targets (quality/CMakeLists.txt)")
  endif()
  if(NOT arg_PRECISION)
    set(arg_PRECISION fp32)
  endif()
  get_filename_component(corpus "${arg_CORPUS}" ABSOLUTE)
  get_filename_component(contract "${arg_CONTRACT}" ABSOLUTE)
  get_filename_component(corpus_name "${corpus}" NAME)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${corpus}" "${contract}")

  # The gate-sets file: every set declared so far in this build.
  get_property(sets GLOBAL PROPERTY DIT_QUALITY_SET_ENTRIES)
  string(JSON entry SET "{}" name "\"${arg_SET}\"")
  string(JSON entry SET "${entry}" corpus "\"${corpus}\"")
  string(JSON entry SET "${entry}" contract "\"${contract}\"")
  string(JSON entry SET "${entry}" backend "\"${arg_BACKEND}\"")
  string(JSON entry SET "${entry}" precision "\"${arg_PRECISION}\"")
  string(JSON entry SET "${entry}" data_dir "\"${DIT_TEST_DATA_DIR}\"")
  if(arg_WEIGHTS)
    get_filename_component(weights "${arg_WEIGHTS}" ABSOLUTE)
    string(TOLOWER "${arg_WEIGHTS_SHA256}" weights_sha256)
    string(JSON entry SET "${entry}" weights "{\"path\": \"${weights}\", \"sha256\": \"${weights_sha256}\"}")
  endif()
  list(APPEND sets "${entry}")
  set_property(GLOBAL PROPERTY DIT_QUALITY_SET_ENTRIES "${sets}")
  list(JOIN sets ",\n    " joined)
  file(WRITE "${DIT_QUALITY_GATE_SETS}" "{\n  \"sets\": [\n    ${joined}\n  ]\n}\n")

  file(READ "${contract}" contract_text)
  string(JSON metric_count LENGTH "${contract_text}" required_metrics)
  string(JSON critical_list ERROR_VARIABLE no_critical GET "${contract_text}" critical_cases "${corpus_name}")
  if(no_critical)
    message(FATAL_ERROR "${contract}: critical_cases has no entry for ${corpus_name}")
  endif()
  string(JSON critical_count LENGTH "${critical_list}")

  set(common --gate-sets "${DIT_QUALITY_GATE_SETS}" --set ${arg_SET} --default-run-dir "${DIT_QUALITY_RUN_DIR}")
  set(render_test quality.${arg_SET}.render)
  add_test(NAME ${render_test} COMMAND dit-quality-render render ${common})
  set_tests_properties(${render_test} PROPERTIES FIXTURES_SETUP quality.${arg_SET} LABELS quality
    SKIP_RETURN_CODE 77)
  if(arg_ENVIRONMENT)
    set_tests_properties(${render_test} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
  if(arg_RENDER_TIMEOUT)
    set_tests_properties(${render_test} PROPERTIES TIMEOUT ${arg_RENDER_TIMEOUT})
  endif()
  # The baseline, when none is recorded: a plain `ctest --preset` run records it first from this
  # build's engine and says so. It carries `judge`, so dit-ar's candidate stage never runs it;
  # in the judge stage (DIT_JUDGE_DIR set) a missing baseline is an error instead.
  set(baseline_test quality.${arg_SET}.baseline)
  add_test(NAME ${baseline_test} COMMAND dit-quality baseline --gate-sets "${DIT_QUALITY_GATE_SETS}" --set ${arg_SET} --if-missing
    --renderer $<TARGET_FILE:dit-quality-render> --default-baseline-dir "${DIT_QUALITY_BASELINE_DIR}")
  set_tests_properties(${baseline_test} PROPERTIES FIXTURES_SETUP quality.${arg_SET}.baseline
    LABELS "quality;judge" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  if(arg_RENDER_TIMEOUT)
    set_tests_properties(${baseline_test} PROPERTIES TIMEOUT ${arg_RENDER_TIMEOUT})
  endif()
  set(gate_tests "")
  math(EXPR last_metric "${metric_count} - 1")
  foreach(index RANGE ${last_metric})
    string(JSON metric GET "${contract_text}" required_metrics ${index})
    add_test(NAME quality.${arg_SET}.${metric} COMMAND dit-quality gate ${common} --metric ${metric}
      --default-baseline-dir "${DIT_QUALITY_BASELINE_DIR}")
    set_tests_properties(quality.${arg_SET}.${metric} PROPERTIES LABELS "quality;judge")
    list(APPEND gate_tests quality.${arg_SET}.${metric})
  endforeach()
  if(critical_count GREATER 0)
    math(EXPR last_case "${critical_count} - 1")
    foreach(index RANGE ${last_case})
      string(JSON case_id GET "${critical_list}" ${index})
      add_test(NAME quality.${arg_SET}.critical.${case_id} COMMAND dit-quality gate ${common}
        --critical-case ${case_id} --default-baseline-dir "${DIT_QUALITY_BASELINE_DIR}")
      set_tests_properties(quality.${arg_SET}.critical.${case_id} PROPERTIES LABELS "quality;critical;judge")
      list(APPEND gate_tests quality.${arg_SET}.critical.${case_id})
    endforeach()
  endif()
  set_tests_properties(${gate_tests} PROPERTIES FIXTURES_REQUIRED "quality.${arg_SET};quality.${arg_SET}.baseline"
    SKIP_RETURN_CODE 77)
  if(arg_GPU)
    # The render and the baseline run the model; a gate only asks the device its name (whose
    # floors apply), so the gates share the GPU and run side by side.
    foreach(test_name IN LISTS render_test baseline_test)
      _dit_mark_gpu_test(${test_name})
    endforeach()
    foreach(test_name IN LISTS gate_tests)
      _dit_mark_gpu_test(${test_name} SHARED)
    endforeach()
  endif()
  list(LENGTH gate_tests gate_count)
  math(EXPR test_count "${gate_count} + 2")
  # How many tests this set adds (the end-to-end check asserts that many ran).
  set_property(GLOBAL PROPERTY DIT_QUALITY_TEST_COUNT_${arg_SET} ${test_count})
endfunction()
