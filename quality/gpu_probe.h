// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Whether a CUDA GPU is usable (always false in a build without the CUDA backend).
#pragma once

#include <string>

namespace dit::quality {

// On false, `why` says what is missing.
bool gpu_available(std::string& why);

}  // namespace dit::quality
