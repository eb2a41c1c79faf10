// The git operations of `dit-ar work` (driver/work_command.cpp), through libgit2 like
// GitRepository: a queued candidate put onto the current best (a cherry-pick that keeps the
// candidate's author, committer and message, so the same candidate on the same best is always
// the same commit), a patch turned into a commit, and the workers' linked worktrees (detached,
// named dit-ar-worker-<k>), added, moved to a commit and removed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dit::ar {

// `commit` (one ordinary commit) replayed onto `onto`: the new commit, or the paths that
// conflict (then `commit` is empty). A commit whose parent is `onto` is returned as it is.
struct Rebased {
  std::string commit;
  std::vector<std::string> conflicts;
};
Rebased rebase_onto(const std::filesystem::path& repository, const std::string& commit, const std::string& onto);

// A commit on `onto` holding `patch` (a unified diff, as `git diff` or `git format-patch`
// writes it) with `message`; throws dit::Error(invalid_argument) when the patch does not parse or
// does not apply there.
std::string commit_from_patch(const std::filesystem::path& repository, const std::string& patch,
                              const std::string& onto, const std::string& message);

// The commit message a `git format-patch` file carries (its Subject header unfolded, leading
// "[PATCH ...]" tags removed, then a blank line and the body up to the "---" line before the
// diff), as `git am` would commit it, so that the message's trailers (A5500-effect: ...) travel
// with a queued patch; nullopt for a plain diff, which has no mail header. Throws
// dit::Error(invalid_argument) for a mail header this cannot read faithfully: a MIME-encoded
// subject or a body in quoted-printable or base64.
std::optional<std::string> format_patch_message(const std::string& patch);

// The prefix of the workers' worktree names (under .git/worktrees/).
inline constexpr const char* kWorkerWorktreePrefix = "dit-ar-worker-";

// A linked worktree `name` at `path` with a detached HEAD at `commit`, checked out. An older
// worktree of that name (or a folder at `path`) is removed first.
void add_worktree(const std::filesystem::path& repository, const std::string& name, const std::filesystem::path& path,
                  const std::string& commit);

// Removes every linked worktree whose name starts with kWorkerWorktreePrefix (its folder and its
// administrative files), then prunes the records of worktrees whose folder is gone, as `git
// worktree prune` does. Returns the names removed.
std::vector<std::string> remove_worker_worktrees(const std::filesystem::path& repository);

// The names of the repository's linked worktrees.
std::vector<std::string> worktree_names(const std::filesystem::path& repository);

}  // namespace dit::ar
