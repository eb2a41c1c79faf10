#include "driver/slurm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

// A word the shell of sbatch --wrap reads back as it is.
std::string shell_quoted(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::optional<fs::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (folder.empty()) continue;
    const fs::path candidate = fs::path(folder) / name;
    std::error_code error;
    if (fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> sbatch_command(const fs::path& sbatch, const SlurmJobRequest& job,
                                        const std::vector<std::string>& command) {
  std::vector<std::string> argv{sbatch.string(),
                                "--wait",
                                "--parsable",
                                "--job-name=" + job.name,
                                "--output=" + job.output.string(),
                                "--open-mode=append",
                                "--chdir=" + job.chdir.string(),
                                "--time=" + std::to_string(job.minutes)};
  if (job.gpu) argv.push_back("--gres=gpu:1");
  argv.insert(argv.end(), job.options.begin(), job.options.end());
  std::string wrapped = "exec";
  for (const auto& word : command) wrapped += " " + shell_quoted(word);
  argv.push_back("--wrap=" + wrapped);
  return argv;
}

std::string parsable_job_id(const fs::path& sbatch_stdout) {
  std::ifstream file(sbatch_stdout);
  std::string line;
  if (!std::getline(file, line) || file.eof()) return "";  // no whole first line yet
  const std::string id = line.substr(0, line.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) return "";
  return id;
}

// A plain fork and exec, waited for by its pid: run_process's sweep of the caller's children
// would reap the coordinator's sbatch processes too.
std::optional<std::string> command_output(const std::vector<std::string>& argv, int timeout_seconds) {
  const auto program =
      argv.front().find('/') == std::string::npos ? find_on_path(argv.front()) : std::optional<fs::path>(argv.front());
  if (!program) return std::nullopt;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::nullopt;
  std::vector<std::string> words = argv;
  std::vector<char*> pointers;
  for (auto& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) ::dup2(null, STDIN_FILENO), ::dup2(null, STDERR_FILENO);
    ::execv(program->c_str(), pointers.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  for (;;) {
    char buffer[4096];
    ssize_t got;
    while ((got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(got));
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(pipe_fds[0]);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  char rest[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], rest, sizeof rest)) > 0;)
    text.append(rest, static_cast<std::size_t>(got));
  ::close(pipe_fds[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

std::optional<std::string> cancel_slurm_job(const std::string& job, int wait_seconds) {
  if (!find_on_path("scancel") || !find_on_path("squeue"))
    return "scancel or squeue is not on PATH: cancel Slurm job " + job + " by hand";
  // Its exit code says little: a job that already ended is an error to scancel; squeue decides.
  command_output({"scancel", job}, 30);
  if (wait_seconds <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_seconds);
  for (;;) {
    // squeue lists pending, running and completing jobs; a job it no longer knows is an error.
    const auto listed = command_output({"squeue", "-h", "-j", job, "-o", "%T"}, 30);
    if (!listed || listed->find_first_not_of(" \n") == std::string::npos) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline)
      return "Slurm job " + job + " is still " + listed->substr(0, listed->find('\n')) + " " +
             std::to_string(wait_seconds) + " s after scancel";
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

FilesystemKind filesystem_kind(const fs::path& path) {
  fs::path folder = path;
  std::error_code error;
  while (!folder.empty() && !fs::exists(folder, error) && folder != folder.parent_path()) folder = folder.parent_path();
  struct statfs facts {};
  if (::statfs(folder.c_str(), &facts) != 0) return {"unknown (statfs failed)", false};
  // statfs(2)'s magic numbers: the network and cluster filesystems first, then common local ones.
  static const std::pair<unsigned long, FilesystemKind> kinds[] = {
      {0x6969, {"nfs", true}},          {0x0BD00BD0, {"lustre", true}},     {0x47504653, {"gpfs", true}},
      {0x19830326, {"beegfs", true}},   {0x00C36400, {"cephfs", true}},     {0x01021997, {"9p", true}},
      {0x6a656a63, {"virtiofs", true}}, {0xFE534D42, {"smb2", true}},       {0xFF534D42, {"cifs", true}},
      {0x5346414F, {"afs", true}},      {0x7461636f, {"ocfs2", true}},      {0x01161970, {"gfs2", true}},
      {0xEF53, {"ext4", false}},        {0x58465342, {"xfs", false}},       {0x9123683E, {"btrfs", false}},
      {0x01021994, {"tmpfs", false}},   {0x794c7630, {"overlayfs", false}}, {0x2fc12fc1, {"zfs", false}},
      {0x65735546, {"fuse", false}},
  };
  const auto type = static_cast<unsigned long>(facts.f_type) & 0xFFFFFFFFul;
  for (const auto& [magic, kind] : kinds)
    if (magic == type) return kind;
  std::ostringstream hex;
  hex << "0x" << std::hex << type;
  return {hex.str(), false};
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace dit::ar
