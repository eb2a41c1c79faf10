# The installed package: `cmake --install <build> --prefix P` puts the tools in P/bin and the
# engine's static libraries, headers and CMake package in P/lib and P/include, so that another
# project's `find_package(DitAutoResearch CONFIG)` gives `dit::engine` (README.md, "Installing").
#
#   dit_install_library(TARGET name EXPORT_NAME name [HEADERS file ...])
#     Installs a library of the engine into the package's export set as dit::<EXPORT_NAME>, with
#     HEADERS (paths relative to the calling folder) under the package's include root, in that
#     folder's path: core/tensor.h goes to include/dit-autoresearch/core/tensor.h, so the
#     headers' own includes ("core/tensor.h") resolve as in the source tree.
#
#   dit_install_package()
#     Called once, after every folder: installs dit::build_options (the C++20 and sanitizer
#     flags the libraries' interfaces carry), the export set, the package's config and version
#     files and, in a CUDA build, FindCUDNN.cmake, dit::cccl and (where found) dit::cutlass.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DIT_PACKAGE_NAME DitAutoResearch)
set(DIT_EXPORT_SET DitAutoResearchTargets)
set(DIT_INSTALL_INCLUDE_ROOT "${CMAKE_INSTALL_INCLUDEDIR}/dit-autoresearch")
set(DIT_INSTALL_PACKAGE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/${DIT_PACKAGE_NAME}")
# Installed programs keep the run-time path of the libraries they link outside the system's
# (the CUDA toolkit's, on a GPU host), so they start without LD_LIBRARY_PATH.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)

function(dit_install_library)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;EXPORT_NAME" "HEADERS")
  if(NOT arg_TARGET OR NOT arg_EXPORT_NAME)
    message(FATAL_ERROR "dit_install_library needs TARGET and EXPORT_NAME")
  endif()
  set_target_properties(${arg_TARGET} PROPERTIES EXPORT_NAME ${arg_EXPORT_NAME})
  install(TARGETS ${arg_TARGET} EXPORT ${DIT_EXPORT_SET}
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    INCLUDES DESTINATION "${DIT_INSTALL_INCLUDE_ROOT}")
  file(RELATIVE_PATH folder "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  foreach(header IN LISTS arg_HEADERS)
    get_filename_component(subfolder "${header}" DIRECTORY)
    install(FILES "${header}" DESTINATION "${DIT_INSTALL_INCLUDE_ROOT}/${folder}/${subfolder}")
  endforeach()
endfunction()

function(dit_install_package)
  set_target_properties(dit_build_options PROPERTIES EXPORT_NAME build_options)
  install(TARGETS dit_build_options EXPORT ${DIT_EXPORT_SET})
  if(DIT_WITH_CUDA)
    set_target_properties(dit_cccl PROPERTIES EXPORT_NAME cccl)
    install(TARGETS dit_cccl EXPORT ${DIT_EXPORT_SET})
    # Exported (without its headers) so that an engine library may link dit::cutlass PRIVATE:
    # a static library's export names even its private dependencies.
    if(TARGET dit_cutlass)
      set_target_properties(dit_cutlass PROPERTIES EXPORT_NAME cutlass)
      install(TARGETS dit_cutlass EXPORT ${DIT_EXPORT_SET})
    endif()
    install(FILES "${PROJECT_SOURCE_DIR}/cmake/FindCUDNN.cmake" DESTINATION "${DIT_INSTALL_PACKAGE_DIR}")
    # The toolkit this build used: the package's default where a consumer names none.
    get_filename_component(DIT_CUDA_TOOLKIT_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  endif()
  install(EXPORT ${DIT_EXPORT_SET} NAMESPACE dit:: DESTINATION "${DIT_INSTALL_PACKAGE_DIR}")
  configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/${DIT_PACKAGE_NAME}Config.cmake.in"
    "${PROJECT_BINARY_DIR}/${DIT_PACKAGE_NAME}Config.cmake"
    INSTALL_DESTINATION "${DIT_INSTALL_PACKAGE_DIR}")
  # 0.x: a minor version may change the API.
  write_basic_package_version_file("${PROJECT_BINARY_DIR}/${DIT_PACKAGE_NAME}ConfigVersion.cmake"
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES "${PROJECT_BINARY_DIR}/${DIT_PACKAGE_NAME}Config.cmake"
                "${PROJECT_BINARY_DIR}/${DIT_PACKAGE_NAME}ConfigVersion.cmake"
          DESTINATION "${DIT_INSTALL_PACKAGE_DIR}")
endfunction()
