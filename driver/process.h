// Child processes for the driver's stages (cmake, ctest, benchmarks), each under a supervisor
// of its own so that none outlives the driver, even one killed by SIGKILL.
//
// run_process() forks a supervisor (a copy of the calling process, named `dit-reaper`, in a
// process group of its own, a child subreaper that ignores SIGINT, SIGTERM and SIGHUP), which
// forks the stage's child into a further process group (with PR_SET_PDEATHSIG(SIGKILL) towards
// the supervisor) and execs it. The supervisor watches two things at once: the child (through a
// pidfd) and the caller (a pipe whose only write end the caller holds, and its parent pid).
//   - The child exits: the supervisor kills what is left of its group and every descendant it
//     adopted (a process that called setsid() and lost its parent is re-parented to the nearest
//     subreaper: the supervisor), reaps them, reports the child's wait status and run time to
//     the caller and exits.
//   - The caller dies (kill -9 included; the pipe reaches end-of-file): the supervisor does the
//     same sweep at once and exits. Sandboxed stages are covered twice (bwrap
//     --die-with-parent ends the sandbox when its parent, the child, dies).
// The supervisor does not exec, so it keeps every descriptor the caller had, the state
// directory's lock among them (LockFile): a new driver cannot take the lock before the
// supervisors of a killed one have finished their sweep. Only a SIGKILL of the supervisor itself
// ends it without a sweep; its child then dies (PR_SET_PDEATHSIG) and the child's orphans go
// to the next subreaper up (the driver, whose run_process() then sweeps the child's group and
// the children it did not have before the stage, never its other children).
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
  // Told the child's process group id once it exists. If it throws, the child and everything
  // it started are killed and reaped before the exception goes on.
  std::function<void(int process_group)> on_start;
};

struct ProcessResult {
  bool started = false;    // false when the program could not be executed at all
  int exit_code = -1;      // valid when it exited normally
  int signal = 0;          // the signal that ended it, if one did
  bool timed_out = false;  // the driver killed it at the limit
  double seconds = 0.0;    // from the child's fork to its exit, measured by its supervisor
  std::string error;       // why it did not start, if it did not

  bool succeeded() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit code 2", "killed by signal 11 (Segmentation fault)", ...
};

// Runs the child to completion (or to its timeout) under its supervisor; when it returns, no
// process the child started is left, and the caller's other children are as they were (neither
// killed nor reaped). A child another thread of the caller forks meanwhile counts as the
// stage's: the driver forks nothing else while a stage runs.
ProcessResult run_process(const ProcessOptions& options);

// Runs argv as run_process() does (argv[0] looked up in PATH, stderr discarded), at most
// `timeout`; its stdout when it succeeded.
std::optional<std::string> process_output(std::vector<std::string> argv, std::chrono::seconds timeout);

// Makes this process adopt orphaned descendants (Linux PR_SET_CHILD_SUBREAPER), so processes
// that escape their group by setsid() can still be found and ended. Call once at start-up.
void become_subreaper();

// Kills a process group left by a driver that died (SIGKILL); returns whether any was alive.
bool kill_process_group(int process_group);

// Whether a process with this id exists (zombies excluded).
bool process_alive(int pid);

}  // namespace dit::ar
