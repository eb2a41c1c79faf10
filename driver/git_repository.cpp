// libgit2 behind GitRepository. Every libgit2 call is checked; failures become dit::Error with
// libgit2's own message and the operation that failed.
#include "driver/git_repository.h"

#include <git2.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <vector>

#include "core/files.h"
#include "core/error.h"
#include "driver/libgit2_support.h"
#include "driver/parallel.h"

namespace dit::ar {

namespace {

using libgit2::check;
using libgit2::ensure_initialised;
using libgit2::Owned;

using Commit = Owned<git_commit, git_commit_free>;
using Tree = Owned<git_tree, git_tree_free>;
using TreeEntry = Owned<git_tree_entry, git_tree_entry_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Object = Owned<git_object, git_object_free>;
using Blob = Owned<git_blob, git_blob_free>;
using Diff = Owned<git_diff, git_diff_free>;
using StatusList = Owned<git_status_list, git_status_list_free>;
using Signature = Owned<git_signature, git_signature_free>;
using Note = Owned<git_note, git_note_free>;

std::string to_hex(const git_oid* id) {
  char text[GIT_OID_HEXSZ + 1] = {};
  git_oid_tostr(text, sizeof text, id);
  return text;
}

git_oid parse_id(const std::string& hex) {
  git_oid id;
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, hex.c_str()) != 0) {
    throw Error(ErrorKind::invalid_argument, "not a full commit id: '" + hex + "'");
  }
  return id;
}

Commit lookup_commit(git_repository* repository, const std::string& hex) {
  git_oid id = parse_id(hex);
  git_commit* commit = nullptr;
  check(git_commit_lookup(&commit, repository, &id), "look up commit " + hex);
  return Commit(commit);
}

Tree commit_tree(git_commit* commit) {
  git_tree* tree = nullptr;
  check(git_commit_tree(&tree, commit), "read the tree of a commit");
  return Tree(tree);
}

Signature driver_signature(git_repository* repository) {
  git_signature* signature = nullptr;
  if (git_signature_default(&signature, repository) < 0) {
    check(git_signature_now(&signature, "dit-ar", "dit-ar@localhost"), "make a signature");
  }
  return Signature(signature);
}

}  // namespace

GitRepository::GitRepository(const std::filesystem::path& workdir) {
  ensure_initialised();
  check(git_repository_open_ext(&repository_, workdir.c_str(), 0, nullptr),
        "open the repository at " + workdir.string());
  if (git_repository_is_bare(repository_)) {
    git_repository_free(repository_);
    throw Error(ErrorKind::invalid_argument, workdir.string() + " is a bare repository (a working tree is needed)");
  }
}

GitRepository::~GitRepository() { git_repository_free(repository_); }

std::filesystem::path GitRepository::discover_workdir(const std::filesystem::path& start) {
  ensure_initialised();
  git_repository* repository = nullptr;
  if (git_repository_open_ext(&repository, start.c_str(), 0, nullptr) < 0) {
    throw Error(ErrorKind::invalid_argument, "not inside a git repository: " + start.string() +
                                                 " (run dit-ar from the project's checkout or pass --repo)");
  }
  const char* workdir = git_repository_workdir(repository);
  std::string result = workdir ? workdir : "";
  git_repository_free(repository);
  if (result.empty()) throw Error(ErrorKind::invalid_argument, start.string() + " is a bare repository");
  while (result.size() > 1 && result.back() == '/') result.pop_back();
  return result;
}

std::filesystem::path GitRepository::workdir() const {
  std::string text = git_repository_workdir(repository_);
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

std::optional<std::string> GitRepository::current_branch() const {
  if (git_repository_head_detached(repository_) == 1) return std::nullopt;
  git_reference* head = nullptr;
  int code = git_repository_head(&head, repository_);
  if (code == GIT_EUNBORNBRANCH || code == GIT_ENOTFOUND) return std::nullopt;
  check(code, "read HEAD");
  Reference owned(head);
  if (!git_reference_is_branch(head)) return std::nullopt;
  return std::string(git_reference_shorthand(head));
}

std::string GitRepository::head_commit() const {
  git_oid id;
  check(git_reference_name_to_id(&id, repository_, "HEAD"), "resolve HEAD");
  return to_hex(&id);
}

std::vector<std::string> GitRepository::dirty_paths() const {
  git_status_options options = GIT_STATUS_OPTIONS_INIT;
  options.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  options.flags =
      GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  git_status_list* list = nullptr;
  check(git_status_list_new(&list, repository_, &options), "read the working tree status");
  StatusList owned(list);
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < git_status_list_entrycount(list); ++i) {
    const git_status_entry* entry = git_status_byindex(list, i);
    if (entry->status == GIT_STATUS_CURRENT || (entry->status & GIT_STATUS_IGNORED)) continue;
    const git_diff_delta* delta = entry->head_to_index ? entry->head_to_index : entry->index_to_workdir;
    if (delta) paths.push_back(delta->new_file.path ? delta->new_file.path : delta->old_file.path);
  }
  return paths;
}

bool GitRepository::is_ignored(const std::string& repository_path) const {
  int ignored = 0;
  check(git_ignore_path_is_ignored(&ignored, repository_, repository_path.c_str()), "check .gitignore");
  return ignored == 1;
}

std::vector<std::string> GitRepository::parents(const std::string& commit) const {
  Commit owned = lookup_commit(repository_, commit);
  std::vector<std::string> ids;
  for (unsigned i = 0; i < git_commit_parentcount(owned.get()); ++i) {
    ids.push_back(to_hex(git_commit_parent_id(owned.get(), i)));
  }
  return ids;
}

std::string GitRepository::summary(const std::string& commit) const {
  Commit owned = lookup_commit(repository_, commit);
  const char* text = git_commit_summary(owned.get());
  return text ? text : "";
}

std::vector<std::pair<std::string, std::string>> GitRepository::trailers(const std::string& commit) const {
  Commit owned = lookup_commit(repository_, commit);
  git_message_trailer_array found{};
  check(git_message_trailers(&found, git_commit_message(owned.get())), "read the trailers of " + short_id(commit));
  std::vector<std::pair<std::string, std::string>> result;
  for (size_t i = 0; i < found.count; ++i) result.emplace_back(found.trailers[i].key, found.trailers[i].value);
  git_message_trailer_array_free(&found);
  return result;
}

std::vector<std::string> GitRepository::commits_between(const std::string& base, const std::string& tip) const {
  git_revwalk* raw = nullptr;
  check(git_revwalk_new(&raw, repository_), "start a walk of the history");
  Owned<git_revwalk, git_revwalk_free> walk(raw);
  check(git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE), "sort the walk");
  git_oid tip_id = parse_id(tip), base_id = parse_id(base);
  check(git_revwalk_push(walk.get(), &tip_id), "walk from " + short_id(tip));
  check(git_revwalk_hide(walk.get(), &base_id), "stop the walk at " + short_id(base));
  std::vector<std::string> commits;
  git_oid id;
  int code = 0;
  while ((code = git_revwalk_next(&id, walk.get())) == 0) commits.push_back(to_hex(&id));
  if (code != GIT_ITEROVER) check(code, "walk " + short_id(base) + ".." + short_id(tip));
  return commits;
}

bool GitRepository::is_descendant_of(const std::string& commit, const std::string& ancestor) const {
  git_oid commit_id = parse_id(commit);
  git_oid ancestor_id = parse_id(ancestor);
  int result = git_graph_descendant_of(repository_, &commit_id, &ancestor_id);
  check(result, "compare the histories of " + short_id(commit) + " and " + short_id(ancestor));
  return result == 1;
}

std::vector<std::string> GitRepository::changed_paths(const std::string& from_commit,
                                                      const std::string& to_commit) const {
  Commit from = lookup_commit(repository_, from_commit);
  Commit to = lookup_commit(repository_, to_commit);
  Tree from_tree = commit_tree(from.get());
  Tree to_tree = commit_tree(to.get());
  git_diff* diff = nullptr;
  check(git_diff_tree_to_tree(&diff, repository_, from_tree.get(), to_tree.get(), nullptr), "diff two commits");
  Diff owned(diff);
  std::set<std::string> paths;
  for (std::size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    if (delta->old_file.path) paths.insert(delta->old_file.path);
    if (delta->new_file.path) paths.insert(delta->new_file.path);
  }
  return {paths.begin(), paths.end()};
}

std::optional<std::string> GitRepository::entry_id(const std::string& commit,
                                                   const std::string& repository_path) const {
  Commit owned = lookup_commit(repository_, commit);
  Tree tree = commit_tree(owned.get());
  std::string path = repository_path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.empty()) return to_hex(git_tree_id(tree.get()));
  git_tree_entry* entry = nullptr;
  int code = git_tree_entry_bypath(&entry, tree.get(), path.c_str());
  if (code == GIT_ENOTFOUND) return std::nullopt;
  check(code, "look up " + path + " in " + short_id(commit));
  TreeEntry owned_entry(entry);
  return to_hex(git_tree_entry_id(entry));
}

std::optional<std::string> GitRepository::resolve_reference(const std::string& name) const {
  git_oid id;
  int code = git_reference_name_to_id(&id, repository_, name.c_str());
  if (code == GIT_ENOTFOUND) return std::nullopt;
  check(code, "resolve " + name);
  return to_hex(&id);
}

std::optional<std::string> GitRepository::resolve_revision(const std::string& revision) const {
  git_object* object = nullptr;
  if (git_revparse_single(&object, repository_, revision.c_str()) < 0) return std::nullopt;
  Object owned(object);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, object, GIT_OBJECT_COMMIT) < 0) return std::nullopt;
  Object owned_peeled(peeled);
  return to_hex(git_object_id(peeled));
}

void GitRepository::set_reference(const std::string& name, const std::string& commit, const std::string& log_message) {
  git_oid id = parse_id(commit);
  git_reference* reference = nullptr;
  check(git_reference_create(&reference, repository_, name.c_str(), &id, 1, log_message.c_str()),
        "point " + name + " at " + short_id(commit));
  git_reference_free(reference);
}

std::vector<std::string> GitRepository::references_matching(const std::string& glob) const {
  std::vector<std::string> names;
  auto collect = [](const char* name, void* payload) -> int {
    static_cast<std::vector<std::string>*>(payload)->push_back(name);
    return 0;
  };
  check(git_reference_foreach_glob(repository_, glob.c_str(), collect, &names), "list references " + glob);
  return names;
}

void GitRepository::reset_hard(const std::string& commit) {
  Commit owned = lookup_commit(repository_, commit);
  git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
  checkout.checkout_strategy = GIT_CHECKOUT_FORCE;
  check(git_reset(repository_, reinterpret_cast<git_object*>(owned.get()), GIT_RESET_HARD, &checkout),
        "reset the branch to " + short_id(commit));
}

void GitRepository::write_note(const std::string& notes_ref, const std::string& commit, const std::string& text) {
  git_oid target = parse_id(commit);
  Signature signature = driver_signature(repository_);
  git_oid note_id;
  check(git_note_create(&note_id, repository_, notes_ref.c_str(), signature.get(), signature.get(), &target,
                        text.c_str(), 1),
        "write the note on " + short_id(commit));
}

std::optional<std::string> GitRepository::read_note(const std::string& notes_ref, const std::string& commit) const {
  git_oid target = parse_id(commit);
  git_note* note = nullptr;
  int code = git_note_read(&note, repository_, notes_ref.c_str(), &target);
  if (code == GIT_ENOTFOUND) return std::nullopt;
  check(code, "read the note on " + short_id(commit));
  Note owned(note);
  return std::string(git_note_message(note));
}

namespace {

// Every blob and link of the commit's tree: repository path -> (id, mode).
using TreeFiles = std::map<std::string, std::pair<git_oid, git_filemode_t>>;

TreeFiles tree_files(git_repository* repository, const std::string& commit) {
  Commit owned = lookup_commit(repository, commit);
  Tree tree = commit_tree(owned.get());
  TreeFiles files;
  auto visit = [](const char* root, const git_tree_entry* entry, void* payload) -> int {
    git_filemode_t mode = git_tree_entry_filemode(entry);
    if (mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE || mode == GIT_FILEMODE_LINK) {
      (*static_cast<TreeFiles*>(payload))[std::string(root) + git_tree_entry_name(entry)] = {*git_tree_entry_id(entry),
                                                                                             mode};
    }
    return 0;
  };
  check(git_tree_walk(tree.get(), GIT_TREEWALK_PRE, visit, &files), "walk the tree of " + short_id(commit));
  return files;
}

std::vector<const TreeFiles::value_type*> tree_entries(const TreeFiles& files) {
  std::vector<const TreeFiles::value_type*> entries;
  entries.reserve(files.size());
  for (const auto& entry : files) entries.push_back(&entry);
  return entries;
}

// Whether `target` is a regular file (not a link) with blob `id`'s bytes and `mode`'s executable
// bit. Reads only the file, never the repository: safe on several threads at once.
bool regular_file_holds(const std::filesystem::path& target, const git_oid& id, git_filemode_t mode) {
  namespace fs = std::filesystem;
  std::error_code error;
  const auto status = fs::symlink_status(target, error);
  if (!fs::is_regular_file(status)) return false;
  const bool executable = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
  if (executable != (mode == GIT_FILEMODE_BLOB_EXECUTABLE)) return false;
  git_oid on_disk;
  return git_odb_hashfile(&on_disk, target.c_str(), GIT_OBJECT_BLOB) == 0 && git_oid_cmp(&on_disk, &id) == 0;
}

}  // namespace

void GitRepository::export_tree(const std::string& commit, const std::filesystem::path& folder,
                                const std::set<std::string>& keep) const {
  namespace fs = std::filesystem;
  const TreeFiles files = tree_files(repository_, commit);
  fs::create_directories(folder);
  // Which files already hold their blob, hashed over the cores; only the others are read out of
  // the repository and written.
  const std::vector<const TreeFiles::value_type*> entries = tree_entries(files);
  std::vector<char> current(entries.size(), 0);
  for_each_index(entries.size(), [&](std::size_t i) {
    const auto& [path, entry] = *entries[i];
    current[i] = entry.second != GIT_FILEMODE_LINK && regular_file_holds(folder / path, entry.first, entry.second);
  });
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (current[i]) continue;
    const auto& [path, entry] = *entries[i];
    const auto& [id, mode] = entry;
    git_blob* blob = nullptr;
    check(git_blob_lookup(&blob, repository_, &id), "read " + path);
    Blob owned_blob(blob);
    std::string content(static_cast<const char*>(git_blob_rawcontent(blob)),
                        static_cast<std::size_t>(git_blob_rawsize(blob)));
    fs::path target = folder / path;
    fs::create_directories(target.parent_path());
    if (mode == GIT_FILEMODE_LINK) {
      std::error_code ignored;
      if (fs::is_symlink(fs::symlink_status(target)) && fs::read_symlink(target) == content) continue;
      fs::remove_all(target, ignored);
      fs::create_symlink(content, target);
      continue;
    }
    std::error_code status_error;
    const auto status = fs::symlink_status(target, status_error);
    if (fs::exists(status) && !fs::is_regular_file(status)) fs::remove_all(target);
    write_file_atomic(target, content);
    fs::permissions(target, mode == GIT_FILEMODE_BLOB_EXECUTABLE ? fs::perms(0755) : fs::perms(0644));
  }

  // Remove what the tree no longer holds (the kept top-level folders aside).
  std::vector<fs::path> stale;
  for (auto it = fs::recursive_directory_iterator(folder); it != fs::recursive_directory_iterator(); ++it) {
    std::string relative = it->path().lexically_relative(folder).generic_string();
    std::string top = relative.substr(0, relative.find('/'));
    if (keep.count(top)) {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory() && !it->is_symlink()) continue;
    if (!files.count(relative)) stale.push_back(it->path());
  }
  for (const auto& path : stale) fs::remove(path);
}

std::string short_id(const std::string& commit) { return commit.substr(0, 8); }

}  // namespace dit::ar

namespace dit::ar {

std::vector<std::string> GitRepository::compare_tree(const std::string& commit, const std::filesystem::path& folder,
                                                     const std::set<std::string>& keep) const {
  namespace fs = std::filesystem;
  const TreeFiles files = tree_files(repository_, commit);
  const std::vector<const TreeFiles::value_type*> entries = tree_entries(files);
  // 1: the file holds its blob; 0: it differs; -1: a link, compared below (it needs the repository).
  std::vector<signed char> same(entries.size(), 0);
  for_each_index(entries.size(), [&](std::size_t i) {
    const auto& [path, entry] = *entries[i];
    same[i] = entry.second == GIT_FILEMODE_LINK ? -1 : regular_file_holds(folder / path, entry.first, entry.second);
  });
  std::vector<std::string> differences;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [path, entry] = *entries[i];
    if (same[i] == 0) differences.push_back(path);
    if (same[i] >= 0) continue;
    const fs::path target = folder / path;
    std::error_code error;
    if (!fs::is_symlink(fs::symlink_status(target, error))) {
      differences.push_back(path);
      continue;
    }
    git_blob* blob = nullptr;
    check(git_blob_lookup(&blob, repository_, &entry.first), "read " + path);
    Blob owned_blob(blob);
    std::string content(static_cast<const char*>(git_blob_rawcontent(blob)),
                        static_cast<std::size_t>(git_blob_rawsize(blob)));
    if (fs::read_symlink(target).string() != content) differences.push_back(path);
  }
  std::error_code error;
  if (!fs::is_directory(folder, error)) return differences;
  for (auto it = fs::recursive_directory_iterator(folder); it != fs::recursive_directory_iterator(); ++it) {
    const std::string relative = it->path().lexically_relative(folder).generic_string();
    const std::string top = relative.substr(0, relative.find('/'));
    if (keep.count(top)) {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory() && !it->is_symlink()) continue;
    if (!files.count(relative)) differences.push_back(relative);
  }
  std::sort(differences.begin(), differences.end());
  return differences;
}

void GitRepository::delete_reference(const std::string& name) {
  git_reference* reference = nullptr;
  if (git_reference_lookup(&reference, repository_, name.c_str()) != 0) return;
  check(git_reference_delete(reference), "delete " + name);
  git_reference_free(reference);
}

void GitRepository::restore_paths(const std::string& commit, const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  Commit owned = lookup_commit(repository_, commit);
  std::vector<std::string> copies = paths;
  std::vector<char*> pointers;
  for (auto& path : copies) pointers.push_back(path.data());
  git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
  checkout.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED | GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
  checkout.paths.strings = pointers.data();
  checkout.paths.count = pointers.size();
  check(git_checkout_tree(repository_, reinterpret_cast<git_object*>(owned.get()), &checkout),
        "restore " + std::to_string(paths.size()) + " path(s) from " + short_id(commit));
}

}  // namespace dit::ar
