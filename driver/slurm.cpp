#include "driver/slurm.h"

#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "driver/process.h"

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

std::optional<std::string> cancel_slurm_job(const std::string& job, int wait_seconds) {
  if (!find_on_path("scancel") || !find_on_path("squeue"))
    return "scancel or squeue is not on PATH: cancel Slurm job " + job + " by hand";
  // Its exit code says little: a job that already ended is an error to scancel; squeue decides.
  process_output({"scancel", job}, std::chrono::seconds(30));
  if (wait_seconds <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_seconds);
  for (;;) {
    // squeue lists pending, running and completing jobs; a job it no longer knows is an error.
    const auto listed = process_output({"squeue", "-h", "-j", job, "-o", "%T"}, std::chrono::seconds(30));
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
