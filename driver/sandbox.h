// The sandbox the candidate's stages run in where the host allows one: bubblewrap (`bwrap`,
// Debian's package) with the whole file system read-only, only the stage's own build and output
// folders writable, the goldens and the judge hidden, a private temporary folder (TMPDIR; /tmp
// itself is read-only like the rest), a fresh /dev with only the GPU's device nodes added, and
// no network. Where bwrap is missing or cannot create namespaces,
// the stages run without it and the decision record says so (ExperimentRecord::sandbox).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dit::ar {

struct SandboxStatus {
  bool available = false;
  std::string description;  // "bwrap (...)" or "none: <why>"
};

// Probes once per process: PATH's bwrap running `true` in the namespaces the sandbox uses.
// DIT_AR_SANDBOX=off turns it off (the status says so).
const SandboxStatus& sandbox_status();

struct SandboxView {
  std::vector<std::filesystem::path> writable;  // created if missing, bound read-write
  std::vector<std::filesystem::path> hidden;    // an empty tmpfs mounted over each (if it exists)
  std::filesystem::path temp_dir;               // if set: created, writable, and TMPDIR inside
};

// The argv prefix that runs a command inside the view ("bwrap ... --"), or nothing when no
// sandbox is available.
std::vector<std::string> sandbox_prefix(const SandboxView& view);

}  // namespace dit::ar
