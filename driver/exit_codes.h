// The exit codes of dit-ar, one table for every command; README.md, program.md and SKILL.md
// state it in the same words: 0 KEEP (or success), 3 DISCARD-QUALITY or DISCARD-PERFORMANCE,
// 4 CRASH, 5 REJECTED, 2 setup or input error, 1 internal error.
#pragma once

#include "driver/decision.h"

namespace dit::ar {

inline constexpr int kExitKeep = 0;           // success; for a decision: KEEP
inline constexpr int kExitInternalError = 1;  // a bug of dit-ar: an exception it did not expect
inline constexpr int kExitSetupError = 2;     // bad input, bad config, wrong repository state
inline constexpr int kExitDiscard = 3;        // DISCARD-QUALITY, DISCARD-PERFORMANCE
inline constexpr int kExitCrash = 4;          // CRASH: the commit could not be judged in full
inline constexpr int kExitRejected = 5;       // REJECTED: the commit touched what judges it

// The exit code of a command whose result is the decision `status`.
constexpr int exit_code(Status status) {
  switch (status) {
    case Status::keep: return kExitKeep;
    case Status::discard_quality:
    case Status::discard_performance: return kExitDiscard;
    case Status::crash: return kExitCrash;
    case Status::rejected: return kExitRejected;
  }
  return kExitInternalError;
}

}  // namespace dit::ar
