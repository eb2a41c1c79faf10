# FindLibGit2: libgit2 as the imported target LibGit2::LibGit2, through pkg-config when it is
# there and a plain search otherwise (CMAKE_PREFIX_PATH covers a staged .deps/ tree).
# Sets LibGit2_FOUND, LibGit2_VERSION, LibGit2_INCLUDE_DIR, LibGit2_LIBRARY.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_LIBGIT2 QUIET libgit2)
endif()

find_path(LibGit2_INCLUDE_DIR git2.h HINTS ${PC_LIBGIT2_INCLUDE_DIRS})
find_library(LibGit2_LIBRARY NAMES git2 HINTS ${PC_LIBGIT2_LIBRARY_DIRS})

if(LibGit2_INCLUDE_DIR AND EXISTS "${LibGit2_INCLUDE_DIR}/git2/version.h")
  file(STRINGS "${LibGit2_INCLUDE_DIR}/git2/version.h" _git2_version
    REGEX "^#define LIBGIT2_VERSION +\"[^\"]+\"")
  string(REGEX REPLACE ".*\"([^\"]+)\".*" "\\1" LibGit2_VERSION "${_git2_version}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibGit2
  REQUIRED_VARS LibGit2_LIBRARY LibGit2_INCLUDE_DIR
  VERSION_VAR LibGit2_VERSION)

if(LibGit2_FOUND AND NOT TARGET LibGit2::LibGit2)
  add_library(LibGit2::LibGit2 UNKNOWN IMPORTED)
  set_target_properties(LibGit2::LibGit2 PROPERTIES
    IMPORTED_LOCATION "${LibGit2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LibGit2_INCLUDE_DIR}")
endif()
mark_as_advanced(LibGit2_INCLUDE_DIR LibGit2_LIBRARY)
