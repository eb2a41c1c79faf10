// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Whole-file reads and atomic writes (temporary file, fsync, rename) for the evaluator's JSON.
#pragma once

#include <string>

namespace dit::quality {

// Throws dit::Error (io) naming the path.
std::string read_text_file(const std::string& path);
// Creates the parent directory; a reader never sees a half-written file. Throws dit::Error (io).
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace dit::quality
