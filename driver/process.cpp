// fork/exec with setpgid, polling waitpid against a deadline, SIGTERM then SIGKILL to the
// group, and a /proc sweep of adopted orphans (the driver is a child subreaper).
#include "driver/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace dit::ar {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(20);
constexpr auto kTerminateGrace = std::chrono::seconds(2);  // SIGTERM first, so tools can clean up
constexpr auto kSweepLimit = std::chrono::seconds(10);

// The parent pid of `pid` from /proc/<pid>/stat, or -1; `state` receives the state letter.
int parent_of(int pid, char& state) {
  std::ifstream stream("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stream, text)) return -1;
  auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 1));
  int parent = -1;
  rest >> state >> parent;
  return parent;
}

std::vector<int> children_of_this_process() {
  std::vector<int> children;
  DIR* proc = ::opendir("/proc");
  if (!proc) return children;
  int self = ::getpid();
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    char state = 0;
    if (parent_of(static_cast<int>(pid), state) == self) children.push_back(static_cast<int>(pid));
  }
  ::closedir(proc);
  return children;
}

bool group_alive(int process_group) { return ::kill(-process_group, 0) == 0 || errno == EPERM; }

void reap_without_blocking() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
}

// Ends the group and every adopted orphan, and waits until none is left (or the sweep limit).
void sweep(int process_group) {
  auto deadline = std::chrono::steady_clock::now() + kSweepLimit;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    if (group_alive(process_group)) {
      ::kill(-process_group, SIGKILL);
      any = true;
    }
    for (int child : children_of_this_process()) {
      ::kill(child, SIGKILL);
      any = true;
    }
    reap_without_blocking();
    if (!any) return;
    std::this_thread::sleep_for(kPollInterval);
  }
}

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

  int log = -1;
  if (!options.log_path.empty()) {
    log = open_for_append(options.log_path);
    if (log < 0) {
      result.error = "cannot open log " + options.log_path.string() + ": " + std::strerror(errno);
      return result;
    }
  }
  int out = -1;
  if (options.stdout_path) {
    out = ::open(options.stdout_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
      result.error = "cannot open " + options.stdout_path->string() + ": " + std::strerror(errno);
      if (log >= 0) ::close(log);
      return result;
    }
  }
  int exec_status[2];
  if (::pipe2(exec_status, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }

  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    if (out >= 0) ::dup2(out, STDOUT_FILENO);
    if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) {
      int error = errno;
      (void)!::write(exec_status[1], &error, sizeof error);
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), environment.data());
    int error = errno;
    (void)!::write(exec_status[1], &error, sizeof error);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(exec_status[1]);
  if (log >= 0) ::close(log);
  if (out >= 0) ::close(out);
  int exec_error = 0;
  ssize_t got = ::read(exec_status[0], &exec_error, sizeof exec_error);
  ::close(exec_status[0]);
  if (got == sizeof exec_error) {
    ::waitpid(pid, nullptr, 0);
    result.error = argv_strings[0] + ": " + std::strerror(exec_error);
    return result;
  }
  result.started = true;
  if (options.on_start) options.on_start(pid);

  auto deadline = options.timeout.count() > 0 ? start + options.timeout : std::chrono::steady_clock::time_point::max();
  auto kill_at = std::chrono::steady_clock::time_point::max();
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    auto now = std::chrono::steady_clock::now();
    if (!result.timed_out && now >= deadline) {
      result.timed_out = true;
      ::kill(-pid, SIGTERM);
      kill_at = now + kTerminateGrace;
    }
    if (now >= kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  sweep(pid);
  return result;
}

}  // namespace dit::ar
