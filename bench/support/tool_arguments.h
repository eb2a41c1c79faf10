// Command-line parsing of the bench tools (dit_profile, gemm_candidates, conv_candidates): CLI11
// prints its own message; --help exits 0 and a bad argument 2, the project's setup-error code.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>

namespace dit::bench {

// Nothing when argv parsed; otherwise the exit code the tool should return now.
inline std::optional<int> parse_tool_arguments(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace dit::bench
