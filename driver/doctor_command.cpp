// dit-ar doctor: captures the GPU, libraries, toolchain and repository state into
// environment.json, warning when the GPU is not an RTX A5500. Works without a GPU.
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/sandbox.h"

#include "driver/environment_capture.h"
#include "core/error.h"
#include "core/files.h"
#include "driver/session.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

std::string describe_tool(const nlohmann::json& tool) {
  if (!tool.value("found", false)) return "not found";
  return tool.value("version", "") + " (" + tool.value("path", "") + ")";
}

std::string describe_version(const nlohmann::json& version) { return version.is_null() ? "not found" : version.dump(); }

// The gate set a lane's baseline records (the value after --set in its record_baseline_commands),
// or empty when it records every set of the build.
std::string lane_gate_set(const Lane& lane) {
  for (const auto& command : lane.record_baseline_commands) {
    for (std::size_t i = 0; i + 1 < command.size(); ++i) {
      if (command[i] == "--set") return command[i + 1];
    }
  }
  return "";
}

// Whether the quality contract holds floors for each lane's gate set on this machine's device
// ("cpu" for the CPU lanes, the first GPU's name for the others): a gate set without them
// refuses, naming the calibration (quality/README.md, "Calibration").
void report_floors(const Config& config, const nlohmann::json& document, std::vector<std::string>& warnings) {
  nlohmann::json contract;
  try {
    contract = read_json_file(config.source_dir / config.contract);
  } catch (const dit::Error& error) {
    warnings.push_back(std::string("cannot read the quality contract: ") + error.what());
    return;
  }
  const nlohmann::json floors = contract.value("floors", nlohmann::json::object());
  std::string gpu;
  for (const auto& device : document["cuda_runtime"].value("devices", nlohmann::json::array())) {
    gpu = device.value("name", "");
    break;
  }
  for (const auto& [name, lane] : config.lanes) {
    const std::string set = lane_gate_set(lane);
    if (set.empty()) continue;
    const bool on_cpu = name.rfind("cpu", 0) == 0;
    const std::string device = on_cpu ? "cpu" : gpu;
    const bool calibrated =
        !device.empty() && floors.contains(device) && floors[device].is_object() && floors[device].contains(set);
    std::cout << "  floors     lane " << name << ", gate set " << set << " on " << (device.empty() ? "no GPU" : device)
              << ": "
              << (calibrated ? "calibrated (" + floors[device][set].value("calibration", "?") + ")"
                             : std::string("not calibrated"))
              << "\n";
    if (!calibrated && !device.empty())
      warnings.push_back("lane " + name + ": the contract has no floors for gate set " + set + " on " + device +
                         ", so its gates refuse; calibrate once: dit-quality-render calibrate --gate-sets " +
                         (config.source_dir / lane.build_dir / "quality/gate-sets.json").string() + " --set " + set +
                         " --out quality/calibration/<gpu>-" + set + ".json --write-contract " + config.contract);
  }
}

int run_doctor(const CommonOptions& options, const std::string& output) {
  Config config = load_session_config(options);
  EnvironmentCapture capture = capture_environment(config.source_dir);
  fs::path path = output.empty() ? config.state_dir / "environment.json" : fs::path(output);
  fs::create_directories(path.parent_path());
  capture.document["captured_at"] = utc_timestamp();
  write_json_atomic(path, capture.document);
  if (options.json) {
    std::cout << capture.document.dump(2) << "\n";
    return kExitKeep;
  }
  const auto& document = capture.document;
  std::cout << "dit-ar doctor\n";
  std::cout << "  host       " << document["host"].value("name", "") << ", " << document["host"].value("kernel", "")
            << "\n";
  const auto& nvml = document["nvml"];
  if (nvml.value("available", false)) {
    std::cout << "  driver     " << nvml.value("driver_version", "?") << " (NVML)\n";
    for (const auto& gpu : nvml["gpus"]) {
      std::cout << "  gpu " << gpu.value("index", 0) << "      " << gpu.value("name", "?") << ", SM clock "
                << gpu.value("sm_clock_mhz", 0) << "/" << gpu.value("max_sm_clock_mhz", 0) << " MHz, memory clock "
                << gpu.value("memory_clock_mhz", 0) << " MHz\n";
    }
    for (const auto& link : nvml["topology"])
      std::cout << "  topology   " << link["gpus"].dump() << ": " << link.value("link", "") << "\n";
  } else {
    std::cout << "  nvml       " << nvml.value("reason", "unavailable") << "\n";
  }
  const auto& cuda = document["cuda_runtime"];
  if (cuda.value("built_with_cuda", false)) {
    std::cout << "  cuda       runtime " << cuda.value("runtime_version", 0) << ", driver API "
              << cuda.value("driver_api_version", 0) << ", " << cuda.value("device_count", 0) << " device(s)"
              << (cuda.contains("error") ? " (" + cuda["error"].get<std::string>() + ")" : "") << "\n";
    for (const auto& device : cuda.value("devices", nlohmann::json::array())) {
      std::cout << "  device " << device.value("index", 0) << "   " << device.value("name", "") << ", sm_"
                << device.value("compute_capability", "") << ", " << device.value("sm_count", 0) << " SMs, "
                << device.value("memory_bytes", std::size_t{0}) / (1 << 20) << " MiB\n";
    }
  } else {
    std::cout << "  cuda       " << cuda.value("note", "") << "\n";
  }
  for (const auto& [name, version] : document["libraries"].items()) {
    std::cout << "  " << name << std::string(11 - std::min<std::size_t>(10, name.size()), ' ')
              << describe_version(version) << "\n";
  }
  for (const auto& [name, tool] : document["toolchain"].items()) {
    if (!tool.is_object()) continue;
    std::cout << "  " << name << std::string(11 - std::min<std::size_t>(10, name.size()), ' ') << describe_tool(tool)
              << "\n";
  }
  const auto& repository = document["repository"];
  if (repository.contains("branch")) {
    std::cout << "  repository " << repository.value("branch", "") << " at "
              << repository.value("head", "").substr(0, 8) << ", " << repository.value("dirty_paths", 0)
              << " uncommitted path(s)\n";
  }
  const SandboxStatus& sandbox = sandbox_status();
  std::cout << "  sandbox    " << sandbox.description << "\n";
  report_floors(config, document, capture.warnings);
  if (!sandbox.available)
    capture.warnings.push_back("no sandbox for the candidate's stages (" + sandbox.description +
                               "): experiments run unsandboxed, and their records say so");
  for (const auto& warning : capture.warnings) std::cout << "warning: " << warning << "\n";
  print_result_block(std::cout,
                     {{"status", "OK"},
                      {"gpu", document.value("gpu", "none")},
                      {"sandbox", sandbox.available ? "bwrap" : sandbox.description},
                      {"warnings", std::to_string(capture.warnings.size())},
                      {"environment", path.string()}},
                     false);
  return kExitKeep;
}

}  // namespace

void add_doctor_command(CLI::App& app, CommonOptions& options) {
  auto output = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "doctor",
      "Capture the machine: GPU name, compute capability, SMs, memory, clocks, driver, CUDA, cuBLAS, cuDNN and NCCL "
      "versions, GPU topology, toolchain, nsys/ncu presence and repository state; warn when the GPU is not an RTX "
      "A5500. Writes environment.json (default: in the state directory). Works without a GPU.");
  command->add_option("--output", *output, "Where to write environment.json");
  add_common_options(*command, options, true);
  command->callback([&options, output] { finish_with(run_doctor(options, *output)); });
}

}  // namespace dit::ar
