// Fixed ground (core/). dit::Error: every failure a part of the project reports to its caller
// (a bad file, shape or option, an I/O or CUDA fault). Library code throws it; only the
// command-line programs turn it into an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace dit {

enum class ErrorKind {
  invalid_argument,  // a caller passed something malformed (shape, config, option)
  invalid_file,      // a file exists but its content is malformed (checkpoint, corpus, JSON)
  io,                // a file could not be opened, mapped, read or written
  device,            // a CUDA, cuBLAS or cuDNN call failed, or no usable GPU
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace dit
