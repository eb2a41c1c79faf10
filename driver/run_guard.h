// The checks around a run (ARCHITECTURE.md, "What the driver verifies"): before it, copies of
// the state directory's records and refs; after it, whether the run changed anything it must
// not: the records, the goldens, the best's tree and build, the judge's tree and build, the
// fixed paths of the candidate's tree or of the user's checkout. Each change becomes a reason
// to REJECT the commit; repair() puts back what the driver can (records and refs from the copy,
// goldens from pristine/, the user's fixed paths from the commit, saved first; the best and the
// judge are rebuilt by the next prepare).
#pragma once

#include <string>
#include <vector>

#include "driver/protection.h"
#include "driver/session.h"

namespace dit::ar {

struct GuardFindings {
  std::vector<std::string> rejections;            // reasons for REJECTED
  std::vector<std::string> checkout_changes;      // the user's edits outside fixed paths: kept, no reset
  std::vector<std::string> fixed_checkout_paths;  // fixed paths changed in the user's checkout
  bool best_changed = false;
  bool judge_changed = false;
};

class RunGuard {
 public:
  // Takes the copies; `commit` is the one checked out in the user's checkout and the
  // candidate's tree, `best` the best commit.
  RunGuard(SessionContext& context, const nlohmann::json& session, const Lane& lane, std::string commit,
           std::string best);

  GuardFindings check() const;
  // Puts back what `findings` name; the user's changed fixed paths are first copied into
  // `save_dir`. Rebuilds of the best and the judge happen in prepare_best_build and
  // ensure_judge_build.
  void repair(const GuardFindings& findings, const std::filesystem::path& save_dir) const;

 private:
  SessionContext& context_;
  const nlohmann::json& session_;
  const Lane& lane_;
  std::string commit_;
  std::string best_;
  Snapshot records_;
};

}  // namespace dit::ar
