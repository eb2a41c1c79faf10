// Child processes for the driver's stages (cmake, ctest, benchmarks): each in its own process
// group, output to a log file, a wall-clock limit that kills the whole group, and a sweep
// afterwards that leaves no descendant behind, not even one that called setsid().
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dit::ar {

struct ProcessOptions {
  std::vector<std::string> argv;                   // argv[0] is looked up in PATH
  std::filesystem::path working_dir;               // empty: the current folder
  std::map<std::string, std::string> environment;  // added to (or replacing) the inherited ones
  // Inherited variables whose names start with one of these are not passed on ("DIT_": the
  // driver's stages see only the variables it sets for them).
  std::vector<std::string> drop_inherited_prefixes;
  std::filesystem::path log_path;                    // stdout and stderr appended here (empty: inherited)
  std::optional<std::filesystem::path> stdout_path;  // stdout alone to this file instead
  std::chrono::seconds timeout{0};                   // zero: no limit
  std::function<void(int process_group)> on_start;   // told the group id once it exists
};

struct ProcessResult {
  bool started = false;    // false when the program could not be executed at all
  int exit_code = -1;      // valid when it exited normally
  int signal = 0;          // the signal that ended it, if one did
  bool timed_out = false;  // the driver killed it at the limit
  double seconds = 0.0;
  std::string error;  // why it did not start, if it did not

  bool succeeded() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit code 2", "killed by signal 11 (Segmentation fault)", ...
};

// Runs the child to completion (or to its timeout) and reaps every process it left.
ProcessResult run_process(const ProcessOptions& options);

// Makes this process adopt orphaned descendants (Linux PR_SET_CHILD_SUBREAPER), so processes
// that escape their group by setsid() can still be found and ended. Call once at start-up.
void become_subreaper();

// Kills a process group left by a driver that died (SIGKILL); returns whether any was alive.
bool kill_process_group(int process_group);

// Whether a process with this id exists (zombies excluded).
bool process_alive(int pid);

}  // namespace dit::ar
