// Slurm as `dit-ar work --slurm` and `dit-ar doctor --slurm` use it: the sbatch command line of a
// worker's job, its job id (sbatch --parsable), scancel, and whether a folder is on a filesystem
// every node of the cluster shares.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dit::ar {

// The first executable file `name` in PATH.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

// What one worker's job asks of Slurm.
struct SlurmJobRequest {
  std::string name;                  // --job-name
  std::filesystem::path output;      // --output (appended to: sbatch's own errors land there too)
  std::filesystem::path chdir;       // --chdir
  int minutes = 1;                   // --time
  bool gpu = false;                  // --gres=gpu:1
  std::vector<std::string> options;  // passed through, before --wrap
};

// `sbatch --wait --parsable ... --wrap '<command>'`: sbatch prints the job id at submission,
// then waits for the job and exits with its exit code.
std::vector<std::string> sbatch_command(const std::filesystem::path& sbatch, const SlurmJobRequest& job,
                                        const std::vector<std::string>& command);

// The job id of sbatch --parsable's first line ("jobid" or "jobid;cluster"); empty when the
// file does not hold one yet.
std::string parsable_job_id(const std::filesystem::path& sbatch_stdout);

// Cancels the job and, for `wait_seconds` > 0, waits at most that long until squeue no longer
// lists it. Nothing on success, else what went wrong.
std::optional<std::string> cancel_slurm_job(const std::string& job, int wait_seconds);

// The filesystem a path is on (statfs f_type): its name ("nfs", "ext4", "0x1234abcd" when
// unknown) and whether it is a network or cluster filesystem that other nodes can mount too.
struct FilesystemKind {
  std::string name;
  bool shared = false;
};
FilesystemKind filesystem_kind(const std::filesystem::path& path);  // the nearest existing folder

// This host's name (gethostname).
std::string host_name();

}  // namespace dit::ar
