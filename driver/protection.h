// What a candidate must not change, and how the driver notices that it did: sha256 lists of
// folders and files (the goldens, the judge's build, the best build's binary), and byte copies
// of the state directory's records and the session's refs, taken before a run and compared (and
// restored) after it. ARCHITECTURE.md, "What the driver verifies".
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/git_repository.h"

namespace dit::ar {

// Repository-relative ("/"-separated) path -> sha256 of the file's bytes (a symbolic link: of
// "link:" and its target).
using FileHashes = std::map<std::string, std::string>;

// Every file under `root`, except under the top-level or nested folders named in `skip` (relative
// paths, e.g. "Testing" or ".ninja_log"). An absent root gives an empty list.
FileHashes hash_folder(const std::filesystem::path& root, const std::set<std::string>& skip = {});
// Like hash_folder, but each entry is the file's stat stamp (size, inode, modification and change
// times) instead of its sha256: cheap for a large build folder, and still changed by any write,
// rename or replacement (the change time cannot be set back from user space).
FileHashes stamp_folder(const std::filesystem::path& root, const std::set<std::string>& skip = {});
// What a build folder's checks skip: the build tool's logs, the generated build.ninja (every
// build that follows configures first) and CTest's Testing/ folder.
const std::set<std::string>& build_bookkeeping();
// The listed files under `root`; an absent one hashes as "absent".
FileHashes hash_files(const std::filesystem::path& root, const std::vector<std::string>& files);

// "changed x", "removed y", "added z" for each difference, prefixed with `what` ("goldens: ").
std::vector<std::string> describe_changes(const FileHashes& expected, const FileHashes& found, const std::string& what);

nlohmann::json to_json(const FileHashes& hashes);
FileHashes hashes_from_json(const nlohmann::json& document, const std::string& where);

// Byte copies of files (absent ones remembered as absent) and ref values, to compare and put
// back after a run.
class Snapshot {
 public:
  void add_file(const std::filesystem::path& path);
  void add_references(const GitRepository& repository, const std::vector<std::string>& globs);
  // What differs now from the copy ("results.tsv changed", "ref refs/autoresearch/best moved").
  std::vector<std::string> changes(const GitRepository& repository) const;
  // Writes every file and ref back as it was (removing files and refs that were absent).
  void restore(GitRepository& repository) const;

 private:
  std::map<std::filesystem::path, std::optional<std::string>> files_;
  std::vector<std::string> globs_;
  std::map<std::string, std::string> references_;
};

}  // namespace dit::ar
