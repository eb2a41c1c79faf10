// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Whole-file reads and atomic writes for the evaluator's JSON: the engine's (model/files.h), with
// the parent folder created first.
#pragma once

#include <string>

#include "model/files.h"

namespace dit::quality {

// Creates the parent directory, then dit::write_file_atomic: a reader never sees a half-written
// file. Throws dit::Error (io) naming the path.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace dit::quality
