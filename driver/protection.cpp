// Hash lists and byte snapshots for the checks after a run.
#include "driver/protection.h"

#include <sys/stat.h>

#include <functional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "driver/parallel.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

bool skipped(const std::string& relative, const std::set<std::string>& skip) {
  for (const auto& prefix : skip) {
    if (relative == prefix || (relative.size() > prefix.size() && relative.compare(0, prefix.size(), prefix) == 0 &&
                               relative[prefix.size()] == '/'))
      return true;
  }
  return false;
}

std::string hash_entry(const fs::path& path) {
  if (fs::is_symlink(fs::symlink_status(path))) return sha256_hex("link:" + fs::read_symlink(path).string());
  return sha256_file(path.string());
}

}  // namespace

namespace {

// Every file and link under `root` but what `skip` names, as relative path -> describe(path).
FileHashes describe_folder(const fs::path& root, const std::set<std::string>& skip,
                           const std::function<std::string(const fs::path&)>& describe) {
  FileHashes entries;
  std::vector<std::pair<std::string, fs::path>> found;  // relative path, path: the files to describe
  std::error_code error;
  if (!fs::is_directory(root, error)) return entries;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string relative = it->path().lexically_relative(root).generic_string();
    if (skipped(relative, skip)) {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory() && !it->is_symlink()) continue;
    // A pipe or a device is named, never read (reading a pipe could block the driver).
    if (it->is_symlink() || it->is_regular_file())
      found.emplace_back(relative, it->path());
    else
      entries[relative] = "special file";
  }
  // The files described over the cores (a build folder is hundreds of megabytes to hash).
  std::vector<std::string> descriptions(found.size());
  for_each_index(found.size(), [&](std::size_t i) { descriptions[i] = describe(found[i].second); });
  for (std::size_t i = 0; i < found.size(); ++i) entries[found[i].first] = std::move(descriptions[i]);
  return entries;
}

std::string stat_stamp(const fs::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return "absent";
  return std::to_string(info.st_size) + " " + std::to_string(info.st_ino) + " " + std::to_string(info.st_mtim.tv_sec) +
         "." + std::to_string(info.st_mtim.tv_nsec) + " " + std::to_string(info.st_ctim.tv_sec) + "." +
         std::to_string(info.st_ctim.tv_nsec);
}

}  // namespace

FileHashes hash_folder(const fs::path& root, const std::set<std::string>& skip) {
  return describe_folder(root, skip, hash_entry);
}

FileHashes stamp_folder(const fs::path& root, const std::set<std::string>& skip) {
  return describe_folder(root, skip, stat_stamp);
}

const std::set<std::string>& build_bookkeeping() {
  // Rewritten by every configure or build (logs, the generated build.ninja, CTest's logs); none
  // is what the build's outputs are made from on the next build without a configure first.
  static const std::set<std::string> skip{".ninja_log",
                                          ".ninja_deps",
                                          "build.ninja",
                                          "Testing",
                                          ".cmake/api/v1/reply",
                                          "CMakeFiles/CMakeOutput.log",
                                          "CMakeFiles/CMakeError.log",
                                          "CMakeFiles/CMakeConfigureLog.yaml"};
  return skip;
}

FileHashes hash_files(const fs::path& root, const std::vector<std::string>& files) {
  FileHashes hashes;
  for (const auto& file : files) {
    const fs::path path = root / file;
    std::error_code error;
    hashes[file] = fs::exists(fs::symlink_status(path, error)) ? hash_entry(path) : "absent";
  }
  return hashes;
}

std::vector<std::string> describe_changes(const FileHashes& expected, const FileHashes& found,
                                          const std::string& what) {
  std::vector<std::string> changes;
  for (const auto& [path, hash] : expected) {
    auto now = found.find(path);
    if (now == found.end() || now->second == "absent")
      changes.push_back(what + "removed " + path);
    else if (now->second != hash)
      changes.push_back(what + (hash == "absent" ? "added " : "changed ") + path);
  }
  for (const auto& [path, hash] : found) {
    if (!expected.count(path) && hash != "absent") changes.push_back(what + "added " + path);
  }
  return changes;
}

nlohmann::json to_json(const FileHashes& hashes) {
  nlohmann::json document = nlohmann::json::object();
  for (const auto& [path, hash] : hashes) document[path] = hash;
  return document;
}

FileHashes hashes_from_json(const nlohmann::json& document, const std::string& where) {
  if (!document.is_object()) throw Error(ErrorKind::invalid_file, where + ": a file hash list must be an object");
  FileHashes hashes;
  for (const auto& [path, hash] : document.items()) {
    if (!hash.is_string()) throw Error(ErrorKind::invalid_file, where + ": the hash of " + path + " is not a string");
    hashes[path] = hash.get<std::string>();
  }
  return hashes;
}

void Snapshot::add_file(const fs::path& path) {
  std::error_code error;
  files_[path] = fs::exists(path, error) ? std::optional<std::string>(read_text_file(path)) : std::nullopt;
}

void Snapshot::add_references(const GitRepository& repository, const std::vector<std::string>& globs) {
  globs_.insert(globs_.end(), globs.begin(), globs.end());
  for (const auto& glob : globs) {
    for (const auto& name : repository.references_matching(glob)) {
      if (auto target = repository.resolve_reference(name)) references_[name] = *target;
    }
  }
}

std::vector<std::string> Snapshot::changes(const GitRepository& repository) const {
  std::vector<std::string> changes;
  for (const auto& [path, bytes] : files_) {
    std::error_code error;
    const bool exists = fs::exists(path, error);
    if (!bytes && exists)
      changes.push_back("added " + path.string());
    else if (bytes && !exists)
      changes.push_back("removed " + path.string());
    else if (bytes && read_text_file(path) != *bytes)
      changes.push_back("changed " + path.string());
  }
  std::map<std::string, std::string> now;
  for (const auto& glob : globs_) {
    for (const auto& name : repository.references_matching(glob)) {
      if (auto target = repository.resolve_reference(name)) now[name] = *target;
    }
  }
  for (const auto& [name, target] : references_) {
    auto found = now.find(name);
    if (found == now.end())
      changes.push_back("removed ref " + name);
    else if (found->second != target)
      changes.push_back("moved ref " + name);
  }
  for (const auto& [name, target] : now) {
    if (!references_.count(name)) changes.push_back("added ref " + name);
  }
  return changes;
}

void Snapshot::restore(GitRepository& repository) const {
  for (const auto& [path, bytes] : files_) {
    std::error_code error;
    if (bytes)
      write_file_atomic(path, *bytes);
    else
      fs::remove(path, error);
  }
  for (const auto& glob : globs_) {
    for (const auto& name : repository.references_matching(glob)) {
      if (!references_.count(name)) repository.delete_reference(name);
    }
  }
  for (const auto& [name, target] : references_) {
    if (repository.resolve_reference(name) != target) repository.set_reference(name, target, "dit-ar: restored");
  }
}

}  // namespace dit::ar
