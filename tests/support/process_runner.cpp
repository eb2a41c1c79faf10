#include "tests/support/process_runner.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace dit::test {

ProcessResult run_program(const std::string& program, const std::string& arguments) {
  const std::string command = program + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace dit::test
