// The campaign audit (`dit-ar audit BASE [TIP]`): over a range of history, every commit that
// changes a mutable path (model/, kernels/) must be an experiment the loop kept: one parent,
// nothing outside the mutable paths, and the driver's KEEP record on refs/notes/autoresearch
// naming that commit on top of that parent. A commit outside the loop that still has to change a
// mutable path (a bug fix, a rename) says so in its message with the trailer
// `Loop-exempt: <why>`, and is listed as such. With the session's state directory, each record
// must also be the run's own run.json and a KEEP row of results.tsv; with required trailers,
// each kept commit's message must carry them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/git_repository.h"

namespace dit::ar {

inline constexpr const char* kLoopExemptTrailer = "Loop-exempt";

struct AuditOptions {
  std::vector<std::string> mutable_paths;          // as in the config
  std::vector<std::string> lanes;                  // the lanes a KEEP may come from; empty: any
  std::optional<std::filesystem::path> state_dir;  // cross-check run.json and results.tsv there
  // Trailers every kept commit's message must carry with some text (e.g. "A5500-effect": what
  // the change is expected to do on the target GPU).
  std::vector<std::string> required_trailers;
};

enum class AuditVerdict { kept, exempt, fixed_only, failed };

struct AuditEntry {
  std::string commit;
  std::string summary;
  AuditVerdict verdict = AuditVerdict::fixed_only;
  std::string lane;                   // kept: the record's lane
  std::string run_dir;                // kept: the record's run folder
  std::string exempt_why;             // exempt: the trailer's text
  std::vector<std::string> problems;  // failed: why
};

// Every commit of base..tip (parents first) with its verdict. Throws dit::Error for a revision
// that does not name a commit.
std::vector<AuditEntry> audit_range(const GitRepository& repository, const std::string& base, const std::string& tip,
                                    const AuditOptions& options);

std::string to_string(AuditVerdict verdict);
nlohmann::json to_json(const AuditEntry& entry);

}  // namespace dit::ar
