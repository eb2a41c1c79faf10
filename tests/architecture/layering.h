// The project's layering rules, read off a build: which part may link or compile which. The
// same table as ARCHITECTURE.md's "who may use whom". A judging part (core/, the quality judge,
// bench/support/, driver/) never links a target of model/ or kernels/, never compiles a file
// under them, and never includes their headers; kernels/ includes nothing from model/.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dit::architecture {

// One CMake target as the file API's codemodel-v2 describes it.
struct Target {
  std::string id, name, type;               // type: EXECUTABLE, STATIC_LIBRARY, UTILITY, ...
  std::string folder;                       // where it is defined, relative to the source tree ("quality")
  std::vector<std::string> sources;         // relative to the source tree when inside it
  std::vector<std::string> artifacts;       // relative to the build tree when inside it
  std::vector<std::string> link_libraries;  // the link line's library fragments, as written
  std::vector<std::string> dependency_ids;  // direct build dependencies (linked or ordered)
};

struct TargetGraph {
  std::filesystem::path source_dir, build_dir;
  std::vector<Target> targets;
};

// The newest codemodel-v2 reply under <build_dir>/.cmake/api/v1/reply. Throws std::runtime_error
// naming the file when there is none or it is malformed.
TargetGraph load_target_graph(const std::filesystem::path& build_dir);

// Which part a target belongs to: "core", "kernels", "model", "quality-judge", "quality-renderer",
// "bench-support", "bench-engine", "driver", "tests", "fuzz", or "other".
std::string part_of(const Target& target);
// Whether targets of `part` may link or compile code of model/ and kernels/.
bool may_use_engine(const std::string& part);

// Every broken rule, one line each, naming the target and what it reaches; empty when the graph
// obeys the table. `expect_driver`: dit-ar and dit-perf-gate must exist.
std::vector<std::string> layering_violations(const TargetGraph& graph, bool expect_driver);

// Which includes a folder's files may not make: any that starts with one of `forbidden`
// ("model/"), a parent-relative one ("../") or a computed one (#include MACRO); `skip` holds
// subfolders left out (the renderer in quality/).
struct IncludeRule {
  std::string folder;
  std::vector<std::string> forbidden;
  std::vector<std::string> skip;
};
// The rules of ARCHITECTURE.md: core/, driver/, quality/ (renderer aside) and bench/support/ reach
// neither model/ nor kernels/; kernels/ does not reach model/.
std::vector<IncludeRule> project_include_rules();

// Every include that breaks one of `rules`, as "<file>:<line>: <include>"; empty when none does.
std::vector<std::string> include_violations(const std::filesystem::path& source_dir,
                                            const std::vector<IncludeRule>& rules);

// Every place a file under `folders` reads or changes the process environment (getenv,
// secure_getenv, setenv, putenv, unsetenv, environ), as "<file>:<line>: <line text>": the engine
// takes its switches as options (model/engine_options.h); only programs read the environment.
std::vector<std::string> environment_uses(const std::filesystem::path& source_dir,
                                          const std::vector<std::string>& folders);

}  // namespace dit::architecture
