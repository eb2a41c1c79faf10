// bwrap's command line for a SandboxView, and the one-time probe.
#include "driver/sandbox.h"

#include <cstdlib>

#include "driver/process.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> base_arguments() {
  return {"bwrap",
          "--die-with-parent",
          "--unshare-net",
          "--unshare-pid",
          "--unshare-ipc",
          "--new-session",
          "--ro-bind",
          "/",
          "/",
          "--dev",
          "/dev",
          "--proc",
          "/proc"};
}

// The GPU's device nodes (/dev/nvidia0, nvidiactl, nvidia-uvm, ...), bound into the fresh /dev.
std::vector<std::string> gpu_device_arguments() {
  std::vector<std::string> arguments;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/dev", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("nvidia", 0) != 0 && name != "dri") continue;
    arguments.insert(arguments.end(), {"--dev-bind", entry.path().string(), entry.path().string()});
  }
  return arguments;
}

SandboxStatus probe() {
  SandboxStatus status;
  const char* setting = std::getenv("DIT_AR_SANDBOX");
  if (setting && std::string(setting) == "off") {
    status.description = "off (DIT_AR_SANDBOX=off)";
    return status;
  }
  ProcessOptions options;
  options.argv = base_arguments();
  options.argv.push_back("true");
  options.log_path = "/dev/null";
  options.timeout = std::chrono::seconds(20);
  ProcessResult result = run_process(options);
  if (!result.started) {
    status.description = "none: bwrap is not installed (Debian package bubblewrap)";
  } else if (!result.succeeded()) {
    status.description = "none: bwrap cannot create its namespaces here (" + result.describe() + ")";
  } else {
    status.available = true;
    status.description = "bwrap (read-only file system, private TMPDIR, no network)";
  }
  return status;
}

}  // namespace

const SandboxStatus& sandbox_status() {
  static const SandboxStatus status = probe();
  return status;
}

std::vector<std::string> sandbox_prefix(const SandboxView& view) {
  if (!sandbox_status().available) return {};
  std::vector<std::string> arguments = base_arguments();
  for (auto& argument : gpu_device_arguments()) arguments.push_back(std::move(argument));
  for (const auto& path : view.hidden) {
    if (fs::exists(path)) arguments.insert(arguments.end(), {"--tmpfs", path.string()});
  }
  for (const auto& path : view.writable) {
    fs::create_directories(path);
    arguments.insert(arguments.end(), {"--bind", path.string(), path.string()});
  }
  if (!view.temp_dir.empty()) {
    fs::create_directories(view.temp_dir);
    arguments.insert(arguments.end(), {"--bind", view.temp_dir.string(), view.temp_dir.string(), "--setenv", "TMPDIR",
                                       view.temp_dir.string()});
  }
  arguments.push_back("--");
  return arguments;
}

}  // namespace dit::ar
