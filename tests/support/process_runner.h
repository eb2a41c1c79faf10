// Runs a command-line program from a test and captures what it prints.
#pragma once

#include <string>

namespace dit::test {

struct ProcessResult {
  int exit_code;       // -1 when the program could not be started or did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `program arguments` through the shell (`arguments` is passed as written, so it may quote).
ProcessResult run_program(const std::string& program, const std::string& arguments);

}  // namespace dit::test
