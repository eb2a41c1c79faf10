// What the driver's libgit2 code shares (driver/git_repository.cpp, driver/work_git.cpp): the
// library's one-time initialisation, libgit2 statuses turned into dit::Error, and owning handles.
#pragma once

#include <git2.h>

#include <memory>
#include <string>

#include "core/error.h"

namespace dit::ar::libgit2 {

// Initialises libgit2 once per process (shut down at exit); call before any other libgit2 call.
inline void ensure_initialised() {
  struct LibraryInit {
    LibraryInit() { git_libgit2_init(); }
    ~LibraryInit() { git_libgit2_shutdown(); }
  };
  static LibraryInit init;
}

// Throws dit::Error (io) "git: <what>: <libgit2's message>" for a negative status.
inline void check(int code, const std::string& what) {
  if (code >= 0) return;
  const git_error* error = git_error_last();
  throw Error(ErrorKind::io, "git: " + what + ": " + (error && error->message ? error->message : "unknown error"));
}

// A libgit2 object freed by its own free function.
template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* pointer) const { Free(pointer); }
};
template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, Deleter<T, Free>>;

}  // namespace dit::ar::libgit2
