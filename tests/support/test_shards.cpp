// DIT_TEST_SHARDS: one GoogleTest binary as several processes (test_shards.h).
#include "tests/support/test_shards.h"

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace dit::test {

namespace {

constexpr int kMaxShards = 64;
constexpr int kAutoMaxShards = 8;

// The shard count DIT_TEST_SHARDS asks for: 0 when unset, -1 when malformed.
int requested_shards(const char* text) {
  if (!text || !*text) return 0;
  if (std::string_view(text) == "auto") {
    const unsigned cores = std::thread::hardware_concurrency();
    return static_cast<int>(std::clamp(cores, 1u, static_cast<unsigned>(kAutoMaxShards)));
  }
  char* end = nullptr;
  const long count = std::strtol(text, &end, 10);
  if (*end != '\0' || count < 1 || count > kMaxShards) return -1;
  return static_cast<int>(count);
}

bool asks_for_report_or_listing(int argc, char** argv) {
  if (std::getenv("GTEST_OUTPUT")) return true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument(argv[i]);
    if (argument.rfind("--gtest_output", 0) == 0 || argument.rfind("--gtest_list_tests", 0) == 0) return true;
  }
  return false;
}

// The environment of shard `index` of `count`: this one's, without DIT_TEST_SHARDS and
// GoogleTest's shard variables, and with them set for this shard.
std::vector<std::string> shard_environment(int index, int count) {
  std::vector<std::string> variables;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view variable(*entry);
    if (variable.rfind("DIT_TEST_SHARDS=", 0) == 0 || variable.rfind("GTEST_TOTAL_SHARDS=", 0) == 0 ||
        variable.rfind("GTEST_SHARD_INDEX=", 0) == 0 || variable.rfind("GTEST_SHARD_STATUS_FILE=", 0) == 0)
      continue;
    variables.emplace_back(variable);
  }
  variables.push_back("GTEST_TOTAL_SHARDS=" + std::to_string(count));
  variables.push_back("GTEST_SHARD_INDEX=" + std::to_string(index));
  return variables;
}

struct Shard {
  pid_t pid = 0;
  std::FILE* output = nullptr;  // its stdout and stderr
  int status = 0;
};

// An anonymous in-memory file for one shard's output: no file system is written, so sharding
// works where /tmp and the build tree are read-only (the driver's sandbox).
std::FILE* output_file() {
  const int descriptor = memfd_create("dit-test-shard-output", MFD_CLOEXEC);
  if (descriptor < 0) return nullptr;
  std::FILE* file = fdopen(descriptor, "w+");
  if (!file) close(descriptor);
  return file;
}

void print_output(std::FILE* output) {
  std::rewind(output);
  char buffer[1 << 16];
  size_t read = 0;
  while ((read = std::fread(buffer, 1, sizeof buffer, output)) > 0) std::fwrite(buffer, 1, read, stdout);
}

}  // namespace

int run_in_shards(int argc, char** argv) {
  const char* setting = std::getenv("DIT_TEST_SHARDS");
  const int count = requested_shards(setting);
  if (count < 0) {
    std::fprintf(stderr, "%s: DIT_TEST_SHARDS='%s' is not a shard count (1 to %d, or auto)\n", argv[0], setting,
                 kMaxShards);
    return 2;
  }
  if (count <= 1 || std::getenv("GTEST_SHARD_INDEX") || std::getenv("GTEST_TOTAL_SHARDS") ||
      asks_for_report_or_listing(argc, argv))
    return -1;

  const auto start = std::chrono::steady_clock::now();
  std::vector<Shard> shards(static_cast<size_t>(count));
  bool started_all = true;
  for (int index = 0; index < count; ++index) {
    Shard& shard = shards[static_cast<size_t>(index)];
    shard.output = output_file();
    if (!shard.output) {
      std::fprintf(stderr, "%s: cannot make a file for shard %d's output: %s\n", argv[0], index, std::strerror(errno));
      started_all = false;
      break;
    }
    std::vector<std::string> variables = shard_environment(index, count);
    std::vector<char*> environment;
    for (auto& variable : variables) environment.push_back(variable.data());
    environment.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fileno(shard.output), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fileno(shard.output), STDERR_FILENO);
    std::fflush(nullptr);
    const int error = posix_spawn(&shard.pid, "/proc/self/exe", &actions, nullptr, argv, environment.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) {
      std::fprintf(stderr, "%s: cannot start shard %d: %s\n", argv[0], index, std::strerror(error));
      shard.pid = 0;
      started_all = false;
      break;
    }
  }
  int failed = 0;
  for (int index = 0; index < count; ++index) {
    Shard& shard = shards[static_cast<size_t>(index)];
    if (shard.pid > 0) {
      while (waitpid(shard.pid, &shard.status, 0) < 0 && errno == EINTR) {}
    }
    const bool passed = shard.pid > 0 && WIFEXITED(shard.status) && WEXITSTATUS(shard.status) == 0;
    if (shard.pid > 0) {
      std::printf("==== shard %d of %d (GTEST_SHARD_INDEX=%d) ====\n", index + 1, count, index);
      print_output(shard.output);
      if (!passed) {
        std::printf("==== shard %d of %d failed: %s %d ====\n", index + 1, count,
                    WIFSIGNALED(shard.status) ? "killed by signal" : "exit code",
                    WIFSIGNALED(shard.status) ? WTERMSIG(shard.status) : WEXITSTATUS(shard.status));
      }
    }
    if (!passed) ++failed;
    if (shard.output) std::fclose(shard.output);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("==== %d shard(s) in %.2f s: %s ====\n", count, seconds,
              failed == 0 && started_all ? "all passed" : (std::to_string(failed) + " failed").c_str());
  std::fflush(stdout);
  return failed == 0 && started_all ? 0 : 1;
}

}  // namespace dit::test
