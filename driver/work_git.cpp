// libgit2 behind the helpers of work_git.h; every call is checked, a failure is a dit::Error.
#include "driver/work_git.h"

#include <git2.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>
#include <system_error>

#include "core/error.h"
#include "core/files.h"
#include "driver/libgit2_support.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

using libgit2::check;
using libgit2::Owned;

using Repository = Owned<git_repository, git_repository_free>;
using Commit = Owned<git_commit, git_commit_free>;
using Tree = Owned<git_tree, git_tree_free>;
using Index = Owned<git_index, git_index_free>;
using Diff = Owned<git_diff, git_diff_free>;
using Signature = Owned<git_signature, git_signature_free>;
using Worktree = Owned<git_worktree, git_worktree_free>;

Repository open(const fs::path& path) {
  libgit2::ensure_initialised();
  git_repository* repository = nullptr;
  check(git_repository_open_ext(&repository, path.c_str(), 0, nullptr), "open the repository at " + path.string());
  return Repository(repository);
}

std::string to_hex(const git_oid* id) {
  char text[GIT_OID_HEXSZ + 1] = {};
  git_oid_tostr(text, sizeof text, id);
  return text;
}

Commit lookup(git_repository* repository, const std::string& hex) {
  git_oid id;
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, hex.c_str()) != 0)
    throw Error(ErrorKind::invalid_argument, "not a full commit id: '" + hex + "'");
  git_commit* commit = nullptr;
  check(git_commit_lookup(&commit, repository, &id), "look up commit " + hex.substr(0, 8));
  return Commit(commit);
}

Tree tree_of(const git_commit* commit) {
  git_tree* tree = nullptr;
  check(git_commit_tree(&tree, commit), "read a commit's tree");
  return Tree(tree);
}

// The commit of `tree` on `parent`, with the given signatures and message (not on any ref).
std::string write_commit(git_repository* repository, git_index* index, const git_commit* parent,
                         const git_signature* author, const git_signature* committer, const std::string& message) {
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index, repository), "write the tree");
  git_tree* tree = nullptr;
  check(git_tree_lookup(&tree, repository, &tree_id), "look up the written tree");
  Tree owned(tree);
  const git_commit* parents[] = {parent};
  git_oid id;
  check(git_commit_create(&id, repository, nullptr, author, committer, nullptr, message.c_str(), tree, 1, parents),
        "write the commit");
  return to_hex(&id);
}

}  // namespace

Rebased rebase_onto(const fs::path& path, const std::string& commit, const std::string& onto) {
  Repository repository = open(path);
  Commit candidate = lookup(repository.get(), commit);
  Commit base = lookup(repository.get(), onto);
  if (git_commit_parentcount(candidate.get()) != 1)
    throw Error(ErrorKind::invalid_argument, "commit " + commit.substr(0, 8) + " is not one ordinary commit");
  if (git_oid_equal(git_commit_parent_id(candidate.get(), 0), git_commit_id(base.get()))) return {commit, {}};
  git_index* merged = nullptr;
  git_merge_options options = GIT_MERGE_OPTIONS_INIT;
  check(git_cherrypick_commit(&merged, repository.get(), candidate.get(), base.get(), 0, &options),
        "replay " + commit.substr(0, 8) + " onto " + onto.substr(0, 8));
  Index index(merged);
  Rebased result;
  if (git_index_has_conflicts(index.get())) {
    git_index_conflict_iterator* iterator = nullptr;
    check(git_index_conflict_iterator_new(&iterator, index.get()), "list the conflicts");
    const git_index_entry *ancestor = nullptr, *ours = nullptr, *theirs = nullptr;
    while (git_index_conflict_next(&ancestor, &ours, &theirs, iterator) == 0) {
      const git_index_entry* any = ours ? ours : theirs ? theirs : ancestor;
      if (any) result.conflicts.push_back(any->path);
    }
    git_index_conflict_iterator_free(iterator);
    if (result.conflicts.empty()) result.conflicts.push_back("(unnamed)");
    return result;
  }
  result.commit = write_commit(repository.get(), index.get(), base.get(), git_commit_author(candidate.get()),
                               git_commit_committer(candidate.get()), git_commit_message(candidate.get()));
  return result;
}

std::optional<std::string> format_patch_message(const std::string& patch) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < patch.size();) {
    std::size_t end = patch.find('\n', start);
    if (end == std::string::npos) end = patch.size();
    std::string line = patch.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  // git format-patch's first line: "From <commit id> Mon Sep 17 00:00:00 2001".
  if (lines.empty() || lines.front().rfind("From ", 0) != 0) return std::nullopt;
  std::size_t at = 1;
  std::string subject, encoding;
  bool has_subject = false;
  for (; at < lines.size() && !lines[at].empty(); ++at) {
    std::string header = lines[at];
    // A folded header goes on on lines that begin with whitespace; unfolded, they join with a space.
    while (at + 1 < lines.size() && !lines[at + 1].empty() && (lines[at + 1][0] == ' ' || lines[at + 1][0] == '\t')) {
      const auto text = lines[++at].find_first_not_of(" \t");
      if (text != std::string::npos) header += " " + lines[at].substr(text);
    }
    const auto colon = header.find(':');
    if (colon == std::string::npos) return std::nullopt;  // not a mail header: a diff that starts with "From "
    std::string name = header.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto value_start = header.find_first_not_of(" \t", colon + 1);
    const std::string value = value_start == std::string::npos ? "" : header.substr(value_start);
    if (name == "subject") subject = value, has_subject = true;
    if (name == "content-transfer-encoding") encoding = value;
  }
  if (!has_subject || at >= lines.size()) return std::nullopt;
  if (subject.find("=?") != std::string::npos && subject.find("?=") != std::string::npos)
    throw Error(
        ErrorKind::invalid_argument,
        "the patch's subject is MIME-encoded (=?...?=), which dit-ar does not decode: queue the commit "
        "itself (dit-ar queue add <commit>) or write the patch with git format-patch --no-encode-email-headers");
  std::string lowered = encoding;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lowered == "quoted-printable" || lowered == "base64")
    throw Error(ErrorKind::invalid_argument, "the patch's body is " + encoding +
                                                 "-encoded, which dit-ar does not decode: queue the commit itself "
                                                 "(dit-ar queue add <commit>)");
  // "[PATCH]", "[PATCH v2 1/3]" and the like before the subject itself, as git mailinfo drops them.
  while (!subject.empty() && subject.front() == '[') {
    const auto close = subject.find(']');
    if (close == std::string::npos) break;
    const auto rest = subject.find_first_not_of(" \t", close + 1);
    subject = rest == std::string::npos ? "" : subject.substr(rest);
  }
  if (subject.empty()) return std::nullopt;
  std::vector<std::string> body;
  for (++at; at < lines.size() && lines[at] != "---" && lines[at].rfind("diff --git ", 0) != 0; ++at)
    body.push_back(lines[at]);
  while (!body.empty() && body.front().empty()) body.erase(body.begin());
  while (!body.empty() && body.back().empty()) body.pop_back();
  std::string message = subject + "\n";
  if (!body.empty()) message += "\n";
  for (const auto& line : body) message += line + "\n";
  return message;
}

std::string commit_from_patch(const fs::path& path, const std::string& patch, const std::string& onto,
                              const std::string& message) {
  Repository repository = open(path);
  Commit base = lookup(repository.get(), onto);
  git_diff* parsed = nullptr;
  if (git_diff_from_buffer(&parsed, patch.data(), patch.size()) < 0) {
    const git_error* error = git_error_last();
    throw Error(ErrorKind::invalid_argument,
                std::string("the patch does not parse: ") + (error && error->message ? error->message : "unknown"));
  }
  Diff diff(parsed);
  Tree tree = tree_of(base.get());
  git_index* applied = nullptr;
  if (git_apply_to_tree(&applied, repository.get(), tree.get(), diff.get(), nullptr) < 0) {
    const git_error* error = git_error_last();
    throw Error(ErrorKind::invalid_argument, "the patch does not apply onto the best " + onto.substr(0, 8) + ": " +
                                                 (error && error->message ? error->message : "unknown") +
                                                 " (a hunk applies only at the lines it names, with no offset: "
                                                 "make the patch on the best itself, for example `git diff` after "
                                                 "`git apply` there)");
  }
  Index index(applied);
  git_signature* signature = nullptr;
  if (git_signature_default(&signature, repository.get()) < 0)
    check(git_signature_now(&signature, "dit-ar", "dit-ar@localhost"), "make a signature");
  Signature owned(signature);
  return write_commit(repository.get(), index.get(), base.get(), signature, signature, message);
}

std::vector<std::string> worktree_names(const fs::path& path) {
  Repository repository = open(path);
  git_strarray names{};
  check(git_worktree_list(&names, repository.get()), "list the worktrees");
  std::vector<std::string> result(names.strings, names.strings + names.count);
  git_strarray_dispose(&names);
  return result;
}

std::vector<std::string> remove_worker_worktrees(const fs::path& path) {
  std::vector<std::string> removed;
  Repository repository = open(path);
  git_strarray names{};
  check(git_worktree_list(&names, repository.get()), "list the worktrees");
  std::vector<std::string> all(names.strings, names.strings + names.count);
  git_strarray_dispose(&names);
  const fs::path common = git_repository_commondir(repository.get());
  for (const auto& name : all) {
    git_worktree* found = nullptr;
    if (git_worktree_lookup(&found, repository.get(), name.c_str()) < 0) continue;
    Worktree worktree(found);
    const bool ours = name.rfind(kWorkerWorktreePrefix, 0) == 0;
    const bool gone = git_worktree_validate(worktree.get()) < 0;
    if (!ours && !gone) continue;
    if (ours) {
      std::error_code ignored;
      fs::remove_all(git_worktree_path(worktree.get()), ignored);
    }
    git_worktree_prune_options options = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    options.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_LOCKED;
    if (git_worktree_prune(worktree.get(), &options) < 0) {
      std::error_code ignored;
      fs::remove_all(common / "worktrees" / name, ignored);
    }
    if (ours) removed.push_back(name);
  }
  return removed;
}

void add_worktree(const fs::path& path, const std::string& name, const fs::path& folder, const std::string& commit) {
  const fs::path common = [&] {
    Repository repository = open(path);
    return fs::path(git_repository_commondir(repository.get()));
  }();
  // What `git worktree add --detach` writes: the administrative folder (gitdir, commondir, a
  // detached HEAD) and the worktree's .git file; then the checkout through libgit2.
  const fs::path admin = common / "worktrees" / name;
  std::error_code ignored;
  fs::remove_all(admin, ignored);
  fs::remove_all(folder, ignored);
  fs::create_directories(admin);
  fs::create_directories(folder);
  const fs::path absolute = fs::absolute(folder);
  write_file_atomic(admin / "gitdir", (absolute / ".git").string() + "\n");
  write_file_atomic(admin / "commondir", "../..\n");
  write_file_atomic(admin / "HEAD", commit + "\n");
  write_file_atomic(folder / ".git", "gitdir: " + fs::absolute(admin).string() + "\n");
  Repository worktree = open(folder);
  Commit target = lookup(worktree.get(), commit);
  git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
  checkout.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED;
  check(git_reset(worktree.get(), reinterpret_cast<git_object*>(target.get()), GIT_RESET_HARD, &checkout),
        "check out " + commit.substr(0, 8) + " in the worktree " + name);
}

}  // namespace dit::ar
