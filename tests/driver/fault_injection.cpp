// Test-only fault injection for dit-ar's state files, loaded with LD_PRELOAD by state_faults.sh
// (never linked into dit-ar): it interposes fsync(2), fdatasync(2) and write(2) and, for a
// descriptor whose path contains the value of one of these variables, fails them:
//   DIT_TEST_FSYNC_FAIL=<text>  fsync and fdatasync return EIO (after DIT_TEST_FSYNC_SKIP=<n>
//                               matching calls that succeed, default 0);
//   DIT_TEST_WRITE_FULL=<text>  a write of more than one byte writes half of it (a short
//                               write, as on a disk filling up), the next write fails with
//                               ENOSPC.
// Both are DIT_* variables, so the driver's stages never see them: only the dit-ar process
// itself meets the faults. Without them the library changes nothing.
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

// Whether `descriptor` names a file whose path contains the value of `variable`.
bool matches(int descriptor, const char* variable) {
  const char* text = getenv(variable);
  if (!text || !*text) return false;
  char link[64];
  char path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
  const ssize_t length = readlink(link, path, sizeof path - 1);
  if (length <= 0) return false;
  path[length] = '\0';
  return strstr(path, text) != nullptr;
}

template <typename Function>
Function next(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

bool short_write_done = false;

// Whether this matching fsync fails (the first DIT_TEST_FSYNC_SKIP ones do not).
bool fsync_fails(int descriptor) {
  static long skipped = 0;
  if (!matches(descriptor, "DIT_TEST_FSYNC_FAIL")) return false;
  const char* skip = getenv("DIT_TEST_FSYNC_SKIP");
  if (skip && skipped < atol(skip)) {
    ++skipped;
    return false;
  }
  return true;
}

}  // namespace

extern "C" int fsync(int descriptor) {
  static auto real = next<int (*)(int)>("fsync");
  if (fsync_fails(descriptor)) {
    errno = EIO;
    return -1;
  }
  return real(descriptor);
}

extern "C" int fdatasync(int descriptor) {
  static auto real = next<int (*)(int)>("fdatasync");
  if (fsync_fails(descriptor)) {
    errno = EIO;
    return -1;
  }
  return real(descriptor);
}

extern "C" ssize_t write(int descriptor, const void* data, size_t count) {
  static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (count > 1 && matches(descriptor, "DIT_TEST_WRITE_FULL")) {
    if (short_write_done) {
      short_write_done = false;
      errno = ENOSPC;
      return -1;
    }
    short_write_done = true;
    return real(descriptor, data, count / 2);
  }
  return real(descriptor, data, count);
}
