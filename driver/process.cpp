// fork/exec under a per-stage supervisor (process.h): the supervisor forks the child into its
// own group, waits on a pidfd for it and on a pipe for the caller, and sweeps the group and its
// adopted orphans when either ends. Everything that runs between fork and exit in the
// supervisor, or between fork and exec in the child, is made of system calls on memory prepared
// before the fork (no allocation, no stdio), as fork() of a process with threads requires.
#include "driver/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

extern char** environ;

namespace dit::ar {

namespace {

constexpr auto kTerminateGrace = std::chrono::seconds(2);  // SIGTERM first, so tools can clean up
constexpr std::int64_t kSweepLimitNanoseconds = 10'000'000'000;
constexpr long kSweepPauseNanoseconds = 5'000'000;

// ---- System calls only (safe after fork) --------------------------------------------------------

std::int64_t monotonic_nanoseconds() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void pause_nanoseconds(long nanoseconds) {
  timespec pause{0, nanoseconds};
  while (::nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
}

// "/proc/<pid>/stat" into `path` (at least 32 bytes).
void stat_path(int pid, char* path) {
  char digits[16];
  int count = 0;
  do {
    digits[count++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0);
  const char prefix[] = "/proc/";
  int at = 0;
  for (const char* c = prefix; *c; ++c) path[at++] = *c;
  while (count > 0) path[at++] = digits[--count];
  for (const char* c = "/stat"; *c; ++c) path[at++] = *c;
  path[at] = '\0';
}

// The parent pid of `pid` from /proc/<pid>/stat, or -1 if it is gone; `state` gets the state letter.
int parent_of(int pid, char& state) {
  char path[48];
  stat_path(pid, path);
  const int descriptor = ::open(path, O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) return -1;
  char text[512];
  const ssize_t got = ::read(descriptor, text, sizeof text - 1);
  ::close(descriptor);
  if (got <= 0) return -1;
  // "pid (comm) S ppid ...": the name may hold anything, so the last ')' ends it.
  const char* close = nullptr;
  for (ssize_t i = 0; i < got; ++i) {
    if (text[i] == ')') close = text + i;
  }
  if (!close) return -1;
  const char* cursor = close + 1;
  const char* end = text + got;
  while (cursor < end && *cursor == ' ') ++cursor;
  if (cursor >= end) return -1;
  state = *cursor++;
  while (cursor < end && *cursor == ' ') ++cursor;
  int parent = 0;
  bool any = false;
  while (cursor < end && *cursor >= '0' && *cursor <= '9') {
    parent = parent * 10 + (*cursor++ - '0');
    any = true;
  }
  return any ? parent : -1;
}

struct LinuxDirent64 {
  std::uint64_t inode;
  std::int64_t offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

// Calls visit(pid) for each process whose parent is `parent` (zombies included).
template <typename Visit>
void for_each_child(int parent, Visit visit) {
  const int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return;
  alignas(8) char buffer[8192];
  for (;;) {
    const long got = ::syscall(SYS_getdents64, proc, buffer, sizeof buffer);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      const auto* entry = reinterpret_cast<const LinuxDirent64*>(buffer + at);
      at += entry->length;
      int pid = 0;
      const char* c = entry->name;
      for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
      if (*c != '\0' || pid <= 0) continue;
      char state = 0;
      if (parent_of(pid, state) == parent) visit(pid);
    }
  }
  ::close(proc);
}

bool group_alive(int process_group) { return process_group > 1 && (::kill(-process_group, 0) == 0 || errno == EPERM); }

// Reaps every child that has ended; returns the wait status of `watched` in `status` when it
// was among them.
bool reap_ended(int watched, int& status) {
  bool found = false;
  int ended_status = 0;
  for (pid_t ended; (ended = ::waitpid(-1, &ended_status, WNOHANG)) > 0;) {
    if (ended == watched) {
      status = ended_status;
      found = true;
    }
  }
  return found;
}

// Kills `process_group` and each child of this process that `is_stage_process` picks (the
// stage's orphans it adopted as a subreaper) with SIGKILL, again and again, reaping those
// children, until none is left or the limit. Other children are neither killed nor reaped.
template <typename IsStageProcess>
void sweep(int process_group, IsStageProcess is_stage_process) {
  const std::int64_t deadline = monotonic_nanoseconds() + kSweepLimitNanoseconds;
  const int self = ::getpid();
  while (monotonic_nanoseconds() < deadline) {
    bool any = false;
    if (group_alive(process_group)) {
      ::kill(-process_group, SIGKILL);
      any = true;
    }
    for_each_child(self, [&any, &is_stage_process](int child) {
      if (!is_stage_process(child)) return;
      ::kill(child, SIGKILL);
      int ignored = 0;
      ::waitpid(child, &ignored, WNOHANG);
      any = true;
    });
    if (!any) return;
    pause_nanoseconds(kSweepPauseNanoseconds);
  }
}

// The supervisor's children are all the stage's: its child and the orphans it adopted.
constexpr auto kEveryChild = [](int) { return true; };

bool write_all(int descriptor, const void* data, size_t count) {
  const char* cursor = static_cast<const char*>(data);
  while (count > 0) {
    const ssize_t written = ::write(descriptor, cursor, count);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    cursor += written;
    count -= static_cast<size_t>(written);
  }
  return true;
}

// Reads exactly `count` bytes; false at end-of-file or on error.
bool read_all(int descriptor, void* data, size_t count) {
  char* cursor = static_cast<char*>(data);
  while (count > 0) {
    const ssize_t got = ::read(descriptor, cursor, count);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    cursor += got;
    count -= static_cast<size_t>(got);
  }
  return true;
}

// What the supervisor tells the caller (one write each, smaller than PIPE_BUF).
struct Report {
  enum Kind : int { started = 1, finished = 2, fork_failed = 3 };
  int kind = 0;
  int value = 0;  // the child's pid (started), its wait status (finished), errno (fork_failed)
  std::int64_t nanoseconds = 0;
};

// Everything the child needs, prepared before the first fork.
struct ChildPlan {
  char** argv = nullptr;
  char** environment = nullptr;
  int log = -1;
  int out = -1;
  const char* working_dir = nullptr;  // null: stay
  int exec_status = -1;               // the write end: errno when exec fails
};

constexpr int kSupervisorIgnores[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTTIN, SIGTTOU};

[[noreturn]] void exec_child(const ChildPlan& plan, int supervisor) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != supervisor) ::_exit(127);  // the supervisor died before the line above
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int signal_number : kSupervisorIgnores) ::sigaction(signal_number, &defaults, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) ::dup2(null, STDIN_FILENO);  // dup2 clears close-on-exec on the copy
  if (plan.log >= 0) {
    ::dup2(plan.log, STDOUT_FILENO);
    ::dup2(plan.log, STDERR_FILENO);
  }
  if (plan.out >= 0) ::dup2(plan.out, STDOUT_FILENO);
  if (plan.working_dir && ::chdir(plan.working_dir) != 0) {
    const int error = errno;
    write_all(plan.exec_status, &error, sizeof error);
    ::_exit(127);
  }
  ::execvpe(plan.argv[0], plan.argv, plan.environment);
  const int error = errno;
  write_all(plan.exec_status, &error, sizeof error);
  ::_exit(127);
}

// The supervisor: forks and watches the child, sweeps when it or the caller ends.
[[noreturn]] void supervise(const ChildPlan& plan, int caller, int lifeline, int report) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_NAME, "dit-reaper", 0, 0, 0);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int signal_number : kSupervisorIgnores) ::sigaction(signal_number, &ignore, nullptr);
  if (::getppid() != caller) ::_exit(0);  // the caller is already gone: start nothing
  const int self = ::getpid();
  const std::int64_t start = monotonic_nanoseconds();
  const pid_t child = ::fork();
  if (child < 0) {
    Report failed{Report::fork_failed, errno, 0};
    write_all(report, &failed, sizeof failed);
    ::_exit(0);
  }
  if (child == 0) exec_child(plan, self);
  ::setpgid(child, child);
  ::close(plan.exec_status);
  if (plan.log >= 0) ::close(plan.log);
  if (plan.out >= 0) ::close(plan.out);
  Report started{Report::started, child, 0};
  write_all(report, &started, sizeof started);

  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  int status = 0;
  std::int64_t end = 0;
  for (;;) {
    pollfd watched[2] = {{lifeline, POLLIN, 0}, {pidfd, POLLIN, 0}};
    // Without pidfds (kernels before 5.3) the child's end is noticed by polling.
    const int count = ::poll(watched, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? 200 : 2);
    if (reap_ended(child, status)) {
      end = monotonic_nanoseconds();
      break;
    }
    const bool caller_gone = (count > 0 && watched[0].revents != 0) || ::getppid() != caller;
    if (caller_gone) {
      sweep(child, kEveryChild);
      ::_exit(0);
    }
  }
  sweep(child, kEveryChild);
  Report finished{Report::finished, status, end - start};
  write_all(report, &finished, sizeof finished);
  ::_exit(0);
}

// ---- The caller's side ----------------------------------------------------------------------------

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides,
                                            const std::vector<std::string>& drop_prefixes) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    std::string name = text.substr(0, text.find('='));
    bool dropped = false;
    for (const auto& prefix : drop_prefixes) dropped = dropped || name.rfind(prefix, 0) == 0;
    if (!overrides.count(name) && !dropped) entries.push_back(text);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

int open_for_append(const std::filesystem::path& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// A descriptor closed when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int descriptor = -1) : descriptor_(descriptor) {}
  ~Descriptor() { reset(); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return descriptor_; }
  void reset(int descriptor = -1) {
    if (descriptor_ >= 0) ::close(descriptor_);
    descriptor_ = descriptor;
  }

 private:
  int descriptor_;
};

bool make_pipe(Descriptor& read_end, Descriptor& write_end) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return false;
  read_end.reset(ends[0]);
  write_end.reset(ends[1]);
  return true;
}

// The children `parent` has now (zombies included).
std::vector<int> children_of(int parent) {
  std::vector<int> children;
  for_each_child(parent, [&children](int child) { children.push_back(child); });
  return children;
}

// Waits for the supervisor's `finished` report (or its end without one), then reaps it.
bool await_supervisor(int supervisor, int report, Report& finished, int& supervisor_status) {
  const bool reported = read_all(report, &finished, sizeof finished) && finished.kind == Report::finished;
  while (::waitpid(supervisor, &supervisor_status, 0) < 0 && errno == EINTR) {}
  return reported;
}

}  // namespace

std::string ProcessResult::describe() const {
  if (!started) return "could not start: " + error;
  std::string text;
  if (timed_out)
    text = "timed out after " + std::to_string(static_cast<long>(seconds)) + " s; process group killed";
  else if (signal != 0)
    text = "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  else
    text = "exit code " + std::to_string(exit_code);
  return text;
}

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

bool kill_process_group(int process_group) {
  if (process_group <= 1 || !group_alive(process_group)) return false;
  ::kill(-process_group, SIGKILL);
  return true;
}

bool process_alive(int pid) {
  char state = 0;
  if (parent_of(pid, state) < 0) return false;
  return state != 'Z' && state != 'X';
}

ProcessResult run_process(const ProcessOptions& options) {
  ProcessResult result;
  if (options.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  // Everything the child needs is prepared before fork().
  std::vector<std::string> environment_strings =
      merged_environment(options.environment, options.drop_inherited_prefixes);
  std::vector<char*> environment;
  for (auto& entry : environment_strings) environment.push_back(entry.data());
  environment.push_back(nullptr);
  std::vector<std::string> argv_strings = options.argv;
  std::vector<char*> argv;
  for (auto& argument : argv_strings) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const std::string working_dir = options.working_dir.string();

  Descriptor log;
  if (!options.log_path.empty()) {
    log.reset(open_for_append(options.log_path));
    if (log.get() < 0) {
      result.error = "cannot open log " + options.log_path.string() + ": " + std::strerror(errno);
      return result;
    }
  }
  Descriptor out;
  if (options.stdout_path) {
    out.reset(::open(options.stdout_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) {
      result.error = "cannot open " + options.stdout_path->string() + ": " + std::strerror(errno);
      return result;
    }
  }
  Descriptor exec_read, exec_write, lifeline_read, lifeline_write, report_read, report_write;
  if (!make_pipe(exec_read, exec_write) || !make_pipe(lifeline_read, lifeline_write) ||
      !make_pipe(report_read, report_write)) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  ChildPlan plan;
  plan.argv = argv.data();
  plan.environment = environment.data();
  plan.log = log.get();
  plan.out = out.get();
  plan.working_dir = working_dir.empty() ? nullptr : working_dir.c_str();
  plan.exec_status = exec_write.get();

  const auto start = std::chrono::steady_clock::now();
  const int caller = ::getpid();
  // The stage's processes reach the caller only as orphans of a supervisor that was killed (or
  // gave up its sweep): children the caller did not have before the stage. The caller's other
  // children (the workers of `dit-ar work`, say) are neither killed nor reaped by its sweep.
  const std::vector<int> earlier_children = children_of(caller);
  const auto stage_orphan = [&earlier_children](int pid) {
    return std::find(earlier_children.begin(), earlier_children.end(), pid) == earlier_children.end();
  };
  const pid_t supervisor = ::fork();
  if (supervisor < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (supervisor == 0) {
    // The supervisor keeps only the read end of the lifeline: end-of-file there is the caller's death.
    ::close(lifeline_write.get());
    ::close(report_read.get());
    ::close(exec_read.get());
    supervise(plan, caller, lifeline_read.get(), report_write.get());
  }
  ::setpgid(supervisor, supervisor);
  lifeline_read.reset();
  report_write.reset();
  exec_write.reset();
  log.reset();
  out.reset();

  Report started;
  int supervisor_status = 0;
  if (!read_all(report_read.get(), &started, sizeof started) || started.kind != Report::started) {
    while (::waitpid(supervisor, &supervisor_status, 0) < 0 && errno == EINTR) {}
    result.error = started.kind == Report::fork_failed ? std::string("fork: ") + std::strerror(started.value)
                                                       : std::string("the stage's supervisor ended before its child");
    return result;
  }
  const int child = started.value;
  int exec_error = 0;
  if (read_all(exec_read.get(), &exec_error, sizeof exec_error)) {
    Report finished;
    await_supervisor(supervisor, report_read.get(), finished, supervisor_status);
    result.error = argv_strings[0] + ": " + std::strerror(exec_error);
    return result;
  }
  result.started = true;
  if (options.on_start) {
    try {
      options.on_start(child);
    } catch (...) {
      ::kill(-child, SIGKILL);
      Report finished;
      await_supervisor(supervisor, report_read.get(), finished, supervisor_status);
      sweep(child, stage_orphan);
      throw;
    }
  }

  const auto deadline =
      options.timeout.count() > 0 ? start + options.timeout : std::chrono::steady_clock::time_point::max();
  auto kill_at = std::chrono::steady_clock::time_point::max();
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (!result.timed_out && now >= deadline) {
      result.timed_out = true;
      ::kill(-child, SIGTERM);
      kill_at = now + kTerminateGrace;
    }
    if (now >= kill_at) {
      ::kill(-child, SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    const auto next = std::min(result.timed_out ? kill_at : deadline, now + std::chrono::seconds(1));
    const int wait_ms = static_cast<int>(
        std::max<long>(1, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    pollfd report{report_read.get(), POLLIN, 0};
    if (::poll(&report, 1, wait_ms) > 0) break;  // the report, or the supervisor's end
  }
  Report finished;
  if (await_supervisor(supervisor, report_read.get(), finished, supervisor_status)) {
    result.seconds = static_cast<double>(finished.nanoseconds) / 1e9;
    if (WIFEXITED(finished.value)) result.exit_code = WEXITSTATUS(finished.value);
    if (WIFSIGNALED(finished.value)) result.signal = WTERMSIG(finished.value);
  } else {
    // The supervisor itself was killed: its child died with it (PR_SET_PDEATHSIG).
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.signal = WIFSIGNALED(supervisor_status) ? WTERMSIG(supervisor_status) : SIGKILL;
  }
  // What of the stage was re-parented to the caller (the supervisor's orphans, if it was killed).
  sweep(child, stage_orphan);
  return result;
}

std::optional<std::string> process_output(std::vector<std::string> argv, std::chrono::seconds timeout) {
  std::string path = (std::filesystem::temp_directory_path() / "dit-ar-output-XXXXXX").string();
  const int descriptor = ::mkstemp(path.data());
  if (descriptor < 0) return std::nullopt;
  ::close(descriptor);
  ProcessOptions options;
  options.argv = std::move(argv);
  options.log_path = "/dev/null";
  options.stdout_path = path;
  options.timeout = timeout;
  std::optional<std::string> output;
  if (run_process(options).succeeded()) {
    std::ifstream file(path, std::ios::binary);
    output = std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  ::unlink(path.c_str());
  return output;
}

}  // namespace dit::ar
