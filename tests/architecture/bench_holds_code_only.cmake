# bench/ holds code only, and no code comment cites a results folder (results/README.md): what was
# measured lives in results/<gpu>/<yyyy-mm-dd>-<commit>/, and a comment states the measured fact
# with its GPU instead of pointing there.
#
#   cmake -DSOURCE_DIR=<repository root> -P bench_holds_code_only.cmake
#       fails naming every file under bench/ whose extension is not code, every folder under bench/
#       named results, and every line of a code file in model/ kernels/ bench/ quality/ driver/ core/
#       that cites results/ (bench-results/, the build tree's benchmark output, is no citation).
#   cmake -DSELF_TEST_DIR=<scratch folder> -P bench_holds_code_only.cmake
#       plants each case of the table below in a small tree under the scratch folder and fails
#       unless the checks find exactly what the case planted (and nothing in the clean tree).
include("${CMAKE_CURRENT_LIST_DIR}/../support/planted_cases.cmake")
cmake_minimum_required(VERSION 3.20)

# What bench/ may hold: sources, scripts, build files and READMEs.
set(code_extensions .cpp .h .hpp .cu .cuh .py .sh .md)
set(code_names CMakeLists.txt)
# Where a code comment must not cite results/, and which files there are code.
set(comment_dirs model kernels bench quality driver core)
set(comment_globs *.cpp *.h *.hpp *.cu *.cuh *.py *.sh *.cmake CMakeLists.txt)

# Every entry of ROOT/bench/ that is not code, one problem a line, into OUT.
function(bench_problems root out)
  set(problems "")
  list(JOIN code_extensions " " allowed)
  string(APPEND allowed " and ${code_names}")
  file(GLOB_RECURSE entries LIST_DIRECTORIES true RELATIVE "${root}" "${root}/bench/*")
  list(SORT entries)
  foreach(entry IN LISTS entries)
    if(entry MATCHES "(^|/)__pycache__(/|$)")  # Python's byte-code cache, never tracked
      continue()
    endif()
    get_filename_component(name "${entry}" NAME)
    if(IS_DIRECTORY "${root}/${entry}")
      if(name STREQUAL "results")
        list(APPEND problems "${entry}/: a results folder, measured data goes to results/<gpu>/<date>-<commit>/")
      endif()
      continue()
    endif()
    get_filename_component(extension "${entry}" LAST_EXT)
    if(NOT name IN_LIST code_names AND NOT extension IN_LIST code_extensions)
      list(APPEND problems "${entry}: not code (bench/ holds ${allowed}), measured data goes to results/<gpu>/<date>-<commit>/")
    endif()
  endforeach()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

# Every line of a code file under ROOT/<comment_dirs> that cites results/, into OUT.
function(comment_problems root out)
  set(problems "")
  foreach(dir IN LISTS comment_dirs)
    set(globs "")
    foreach(glob IN LISTS comment_globs)
      list(APPEND globs "${root}/${dir}/${glob}")
    endforeach()
    file(GLOB_RECURSE files RELATIVE "${root}" ${globs})
    list(SORT files)
    foreach(file IN LISTS files)
      file(STRINGS "${root}/${file}" lines REGEX "results/")
      foreach(line IN LISTS lines)
        if(" ${line}" MATCHES "[^-A-Za-z0-9_]results/")
          string(STRIP "${line}" line)
          list(APPEND problems "${file}: cites a results folder: ${line}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

if(DEFINED SELF_TEST_DIR)
  # name|file planted|its content|what the one problem found must name ("" for none)
  set(cases
      "clean|||"
      "json_in_bench|bench/x.json|{}|bench/x.json"
      "text_output_in_bench|bench/gemm16.txt|median 5.2 us|bench/gemm16.txt"
      "patch_in_bench|bench/engine/experiment.patch|--- a/x|bench/engine/experiment.patch"
      "file_without_extension|bench/Makefile|all:|bench/Makefile"
      "results_folder_in_bench|bench/results/README.md|# a run|bench/results/"
      "cuda_comment_cites|kernels/k2.cu|// 9.75 us on an H200 (bench/results/h200-x)|kernels/k2.cu"
      "python_comment_cites|quality/q.py|# see results/h200/2026-12-01-x|quality/q.py"
      "nested_cmake_comment_cites|model/cuda/CMakeLists.txt|# as in results/RESULTS.md|model/cuda/CMakeLists.txt"
      "header_comment_cites|core/c.h|// results/h200/2026-12-01-abc1234/ncu.txt|core/c.h")
  # The tree every case starts from: code only, comments that state facts, and the build tree's
  # bench-results/ named in a comment, which is allowed.
  set(base_files
      "bench/bench_x.cpp|// on an H200, 3 ms an image faster than before"
      "bench/CMakeLists.txt|add_executable(bench_x bench_x.cpp)"
      "bench/README.md|# bench"
      "bench/side_by_side.sh|out=build/side-by-side"
      "bench/torch_reference.py|results = {}"
      "bench/support/s.h|// writes to bench-results/ in the build tree"
      "bench/__pycache__/torch_reference.cpython-312.pyc|"
      "kernels/k.cu|// 44 us against 52 on an H200"
      "driver/d.cpp|// else to bench-results/ in the build tree"
      "quality/q2.py|# ok_results/x and bench-results/y name no results folder")
  set(failures "")
  foreach(case IN LISTS cases)
    string(REPLACE "|" ";" fields "${case}")
    list(GET fields 0 name)
    list(GET fields 1 planted)
    list(GET fields 2 content)
    list(GET fields 3 expected)
    set(root "${SELF_TEST_DIR}/${name}")
    file(REMOVE_RECURSE "${root}")
    foreach(base IN LISTS base_files)
      string(REPLACE "|" ";" base_fields "${base}")
      list(GET base_fields 0 base_path)
      list(GET base_fields 1 base_content)
      file(WRITE "${root}/${base_path}" "${base_content}\n")
    endforeach()
    if(NOT planted STREQUAL "")
      file(WRITE "${root}/${planted}" "${content}\n")
    endif()
    bench_problems("${root}" found_bench)
    comment_problems("${root}" found_comments)
    set(found ${found_bench} ${found_comments})
    dit_check_planted("${name}" "${expected}" "${found}" failures)
  endforeach()
  if(failures)
    list(JOIN failures "\n  " text)
    message(FATAL_ERROR "bench_holds_code_only self-test failed:\n  ${text}")
  endif()
  list(LENGTH cases count)
  message(STATUS "bench_holds_code_only: ${count} of ${count} cases found as planted")
elseif(DEFINED SOURCE_DIR)
  bench_problems("${SOURCE_DIR}" found_bench)
  comment_problems("${SOURCE_DIR}" found_comments)
  set(found ${found_bench} ${found_comments})
  if(found)
    list(LENGTH found count)
    list(JOIN found "\n  " text)
    message(FATAL_ERROR "${count} problem(s): bench/ holds code only and code comments cite no "
                        "results folder (results/README.md):\n  ${text}")
  endif()
  list(JOIN comment_dirs "/ " dirs)
  message(STATUS "bench/ holds code only, and no code comment in ${dirs}/ cites results/")
else()
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository root> -P bench_holds_code_only.cmake\n"
                      "       cmake -DSELF_TEST_DIR=<scratch folder> -P bench_holds_code_only.cmake")
endif()
