// Resolution of the shared options: repository root and config file.
#include "driver/common_options.h"

#include "driver/git_repository.h"

namespace dit::ar {

std::filesystem::path resolve_repository_root(const CommonOptions& options) {
  std::filesystem::path start = options.repository.empty() ? std::filesystem::current_path()
                                                           : std::filesystem::path(options.repository);
  return GitRepository::discover_workdir(start);
}

Config load_session_config(const CommonOptions& options) {
  std::filesystem::path root = resolve_repository_root(options);
  std::filesystem::path path = options.config_path;
  if (path.is_relative()) path = root / path;
  return load_config(path, root);
}

}  // namespace dit::ar
