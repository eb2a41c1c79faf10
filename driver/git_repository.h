// GitRepository: the git operations dit-ar needs, through libgit2 (never a `git` child
// process). Commits are named by their full 40-digit hex id.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

struct git_repository;

namespace dit::ar {

class GitRepository {
 public:
  // Opens the repository whose working tree holds `workdir` (exactly, or a parent of it).
  explicit GitRepository(const std::filesystem::path& workdir);
  ~GitRepository();
  GitRepository(const GitRepository&) = delete;
  GitRepository& operator=(const GitRepository&) = delete;

  // The working-tree root of the repository containing `start`; throws dit::Error
  // (invalid_argument) when there is none.
  static std::filesystem::path discover_workdir(const std::filesystem::path& start);

  std::filesystem::path workdir() const;

  // The checked-out branch's short name ("autoresearch/x"), or nothing when HEAD is detached.
  std::optional<std::string> current_branch() const;
  std::string head_commit() const;

  // Paths with uncommitted changes, untracked files included, ignored files excluded.
  std::vector<std::string> dirty_paths() const;
  bool is_ignored(const std::string& repository_path) const;

  std::vector<std::string> parents(const std::string& commit) const;
  std::string summary(const std::string& commit) const;  // first line of the message
  // The message's trailers ("Key: value" lines of its last paragraph, as git interpret-trailers
  // reads them), in order.
  std::vector<std::pair<std::string, std::string>> trailers(const std::string& commit) const;
  // The commits reachable from `tip` and not from `base`, parents before children.
  std::vector<std::string> commits_between(const std::string& base, const std::string& tip) const;
  // True when `commit` has `ancestor` in its history (a commit is not its own descendant).
  bool is_descendant_of(const std::string& commit, const std::string& ancestor) const;
  // Repository-relative paths that differ between the two commits' trees (both sides of a rename).
  std::vector<std::string> changed_paths(const std::string& from_commit, const std::string& to_commit) const;
  // The tree or blob id at `repository_path` in the commit, or nothing when it is absent.
  std::optional<std::string> entry_id(const std::string& commit, const std::string& repository_path) const;

  std::optional<std::string> resolve_reference(const std::string& name) const;  // a ref's commit
  std::optional<std::string> resolve_revision(const std::string& revision) const;
  void set_reference(const std::string& name, const std::string& commit, const std::string& log_message);
  void delete_reference(const std::string& name);  // nothing when it does not exist
  std::vector<std::string> references_matching(const std::string& glob) const;

  // Makes the listed repository paths of the working tree and index match `commit` (a path the
  // commit does not hold is removed).
  void restore_paths(const std::string& commit, const std::vector<std::string>& paths);

  // Moves the checked-out branch to `commit` and makes index and working tree match it.
  void reset_hard(const std::string& commit);

  // Notes under `notes_ref` (e.g. refs/notes/autoresearch); writing replaces an older note.
  void write_note(const std::string& notes_ref, const std::string& commit, const std::string& text);
  std::optional<std::string> read_note(const std::string& notes_ref, const std::string& commit) const;

  // Writes the commit's tree into `folder` (created if needed), only rewriting files whose
  // content or mode differs (so incremental builds stay incremental) and deleting files not in
  // the tree, except top-level entries named in `keep` (e.g. "build").
  void export_tree(const std::string& commit, const std::filesystem::path& folder,
                   const std::set<std::string>& keep) const;
  // The repository paths where `folder` differs from the commit's tree (content, mode, missing,
  // or a file the tree does not hold), the top-level entries in `keep` aside; sorted.
  std::vector<std::string> compare_tree(const std::string& commit, const std::filesystem::path& folder,
                                        const std::set<std::string>& keep) const;

 private:
  git_repository* repository_ = nullptr;
};

std::string short_id(const std::string& commit);  // the first 8 hex digits

}  // namespace dit::ar
