// dit-ar doctor: captures the GPU, libraries, toolchain and repository state into
// environment.json, warning when the GPU is not an RTX A5500; reports each lane's quality floors,
// the DiT weights its gate sets render and the GPUs its build hands CTest (writing the host's own
// CTest resource specification into the state directory); with --slurm, whether `dit-ar work
// --slurm` can run from here. Works without a GPU.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "driver/sandbox.h"

#include "driver/environment_capture.h"
#include "core/ctest_gpu.h"
#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "driver/process.h"
#include "driver/session.h"
#include "driver/slurm.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

std::string describe_tool(const nlohmann::json& tool) {
  if (!tool.value("found", false)) return "not found";
  return tool.value("version", "") + " (" + tool.value("path", "") + ")";
}

std::string describe_version(const nlohmann::json& version) { return version.is_null() ? "not found" : version.dump(); }

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
  for (const auto& [name, lane] : config.lanes) {
    const std::string set = lane_gate_set(lane);
    if (set.empty()) continue;
    const std::string device = lane_floors_device(lane, document);
    const bool calibrated = has_floors(contract, device, set);
    std::cout << "  floors     lane " << name << ", gate set " << set << " on " << (device.empty() ? "no GPU" : device)
              << ": "
              << (calibrated ? "calibrated (" + contract["floors"][device][set].value("calibration", "?") + ")"
                             : std::string("not calibrated"))
              << "\n";
    if (!calibrated && !device.empty())
      warnings.push_back("lane " + name + ": the contract has no floors for gate set " + set + " on " + device +
                         ", so its gates refuse; calibrate once: " + calibrate_command(config, lane, set));
  }
}

// CTest's view of the GPUs: doctor writes the host's own resource specification (kCtestGpuSlots
// slots per CUDA device, indices in nvidia-smi's PCI order, the format cmake/DitGpuResources.cmake writes)
// into the state directory, and compares each GPU lane's build's specification with it: a build
// configured elsewhere, or before a GPU was added, hands out fewer GPUs than the host has.
void report_ctest_gpus(const Config& config, const nlohmann::json& document, std::vector<std::string>& warnings) {
  const int devices = document["cuda_runtime"].value("device_count", 0);
  nlohmann::json gpus = nlohmann::json::array();
  for (int index = 0; index < devices; ++index)
    gpus.push_back({{"id", std::to_string(index)}, {"slots", kCtestGpuSlots}});
  const fs::path host_spec = config.state_dir / "ctest-resources.json";
  write_json_atomic(host_spec, {{"version", {{"major", 1}, {"minor", 0}}}, {"local", {{{"gpus", gpus}}}}},
                    ParentFolders::create);
  std::cout << "  ctest gpus " << devices << " GPU(s) in " << host_spec.string() << "\n";
  std::set<std::string> seen;
  for (const auto& [name, lane] : config.lanes) {
    if (!lane.gpu || !seen.insert(lane.build_dir).second) continue;
    const fs::path spec = config.source_dir / lane.build_dir / "ctest-resources.json";
    std::error_code error;
    if (!fs::is_regular_file(spec, error)) continue;  // not configured yet: its configure writes one
    int listed = -1;
    try {
      listed = static_cast<int>(read_json_file(spec).at("local").at(0).at("gpus").size());
    } catch (const std::exception& failure) {  // dit::Error, or nlohmann's for a malformed file
      warnings.push_back(spec.string() + " is not a CTest resource specification (" + failure.what() +
                         "); configure the build again");
      continue;
    }
    std::cout << "  ctest gpus " << lane.build_dir << ": " << listed << " GPU(s)\n";
    if (listed != devices)
      warnings.push_back(lane.build_dir + " hands CTest " + std::to_string(listed) + " GPU(s) and this host has " +
                         std::to_string(devices) + ": configure it again here (DIT_CTEST_GPUS=auto), or run ctest " +
                         "--resource-spec-file " + host_spec.string());
  }
}

// A weights path as the quality readers resolve it: a relative one from the folder of the file
// that names it (quality/README.md, "Weights").
std::string resolved_path(const fs::path& folder, const std::string& path) {
  const fs::path given(path);
  return (given.is_absolute() ? given : folder / given).lexically_normal().string();
}

// The sha256 of checkpoint files, each file hashed once however many lanes and cases name it.
class CheckpointHashes {
 public:
  // The file's sha256, or empty when it is missing or unreadable.
  const std::string& of(const std::string& path) {
    auto found = hashes_.find(path);
    if (found == hashes_.end()) {
      std::string hash;
      std::error_code error;
      if (fs::is_regular_file(path, error)) {
        try {
          hash = sha256_file(path);
        } catch (const dit::Error&) {}
      }
      found = hashes_.emplace(path, hash).first;
    }
    return found->second;
  }

 private:
  std::map<std::string, std::string> hashes_;
};

// The weights of one gate set (an entry of gate-sets.json, whose file is in `folder`): one entry
// per kind of weights its corpus renders from, with the number of cases; checkpoints that are
// missing or mismatched become warnings naming the lane.
std::string describe_set_weights(const nlohmann::json& set, const fs::path& folder, const std::string& lane,
                                 CheckpointHashes& hashes, std::vector<std::string>& warnings) {
  const std::string set_name = set.at("name").get<std::string>();
  std::optional<std::pair<std::string, std::string>> set_checkpoint;  // path, sha256
  if (set.contains("weights"))
    set_checkpoint = {resolved_path(folder, set.at("weights").at("path").get<std::string>()),
                      set.at("weights").at("sha256").get<std::string>()};
  const std::string corpus_path = set.at("corpus").get<std::string>();
  const std::string text = read_text_file(corpus_path, "corpus ");
  std::vector<std::pair<std::string, int>> kinds;  // description, cases, in order of appearance
  std::size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    nlohmann::json entry;
    try {
      entry = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw dit::Error(dit::ErrorKind::invalid_file, corpus_path + ":" + std::to_string(line_number) + ": not JSON");
    }
    std::string description;
    std::optional<std::pair<std::string, std::string>> checkpoint = set_checkpoint;
    if (entry.contains("weights"))
      checkpoint = {
          resolved_path(fs::path(corpus_path).parent_path(), entry.at("weights").at("path").get<std::string>()),
          entry.at("weights").at("sha256").get<std::string>()};
    if (checkpoint) {
      const auto& [path, expected_text] = *checkpoint;
      std::string expected = expected_text;
      for (char& c : expected) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::string& actual = hashes.of(path);
      const std::string status = actual.empty() ? "MISSING" : actual != expected ? "SHA256 DIFFERS" : "checked";
      description = "checkpoint " + path + " (sha256 " + expected + ", " + status + ")";
      if (actual != expected) {
        const std::string warning = "lane " + lane + ", gate set " + set_name + ": checkpoint " + path +
                                    (actual.empty() ? " is missing or unreadable" : " has sha256 " + actual) +
                                    ", expected " + expected + "; the set's renders refuse it (exit 2)";
        if (std::find(warnings.begin(), warnings.end(), warning) == warnings.end()) warnings.push_back(warning);
      }
    } else {
      const std::string model = entry.value("model", "");
      description = model == "tiny_a" || model == "tiny_b"
                        ? "tests/data's " + model + " weights"
                        : "seeded random weights, seed " + std::to_string(entry.value("weights_seed", uint64_t{0}));
    }
    auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == description; });
    if (kind == kinds.end()) {
      kinds.emplace_back(description, 1);
    } else {
      ++kind->second;
    }
  }
  std::string out;
  for (const auto& [description, cases] : kinds)
    out += (out.empty() ? "" : "; ") + description + " (" + std::to_string(cases) + (cases == 1 ? " case)" : " cases)");
  return out;
}

// Which DiT weights each lane's gate sets render (quality/README.md, "Weights"), from the
// gate-sets.json of the lane's build and the corpora it names: a case's own checkpoint, the gate
// set's, or the embedded default (seeded random weights; tests/data's for tiny_*). A checkpoint
// that is missing or of another sha256 is a warning: the set's renders refuse it.
void report_weights(const Config& config, std::vector<std::string>& warnings) {
  CheckpointHashes hashes;
  for (const auto& [name, lane] : config.lanes) {
    const fs::path file = config.source_dir / lane.build_dir / "quality/gate-sets.json";
    if (!fs::is_regular_file(file)) {
      std::cout << "  weights    lane " << name << ": not known before preset " << lane.configure_preset
                << " is configured (no " << file.string() << ")\n";
      continue;
    }
    const std::string only = lane_gate_set(lane);
    try {
      const nlohmann::json sets = read_json_file(file).at("sets");
      for (const auto& set : sets) {
        if (!only.empty() && set.at("name").get<std::string>() != only) continue;
        std::cout << "  weights    lane " << name << ", gate set " << set.at("name").get<std::string>() << ": "
                  << describe_set_weights(set, file.parent_path(), name, hashes, warnings) << "\n";
      }
    } catch (const std::exception& error) {  // dit::Error, or nlohmann's for a malformed entry
      warnings.push_back("lane " + name + ": cannot tell the weights of its gate sets from " + file.string() + ": " +
                         error.what());
    }
  }
}

// --slurm: what `dit-ar work --slurm` needs: Slurm's commands on PATH, a controller that lists
// the nodes, and the repository and state directory (the workers' worktrees and run folders) on
// a filesystem every node shares: a network or cluster one, or any when the cluster's only node
// is this host. Each problem is a finding (a warning); "ready" when there is none.
nlohmann::json check_slurm(const Config& config) {
  nlohmann::json findings = nlohmann::json::array();
  nlohmann::json tools = nlohmann::json::object();
  for (const char* tool : {"sbatch", "sinfo", "squeue", "scancel"}) {
    const auto path = find_on_path(tool);
    tools[tool] = path ? path->string() : "";
    if (!path) findings.push_back(std::string(tool) + " is not on PATH: dit-ar work --slurm needs Slurm's commands");
  }
  std::vector<std::string> nodes;
  if (!tools["sinfo"].get<std::string>().empty()) {
    if (auto listed = process_output({"sinfo", "-h", "-N", "-o", "%N"}, std::chrono::seconds(30))) {
      std::istringstream lines(*listed);
      for (std::string node; std::getline(lines, node);)
        if (!node.empty() && std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
      if (nodes.empty()) findings.push_back("sinfo lists no node");
    } else {
      findings.push_back("sinfo -h -N -o %N failed: is slurmctld reachable (scontrol ping)?");
    }
  }
  const std::string host = host_name();
  const bool only_this_host = nodes.size() == 1 && (nodes[0] == host || nodes[0] == host.substr(0, host.find('.')));
  nlohmann::json filesystems = nlohmann::json::array();
  for (const fs::path& folder : {config.source_dir, config.state_dir}) {
    const FilesystemKind kind = filesystem_kind(folder);
    filesystems.push_back({{"path", folder.string()}, {"type", kind.name}, {"shared", kind.shared}});
    if (!kind.shared && !only_this_host)
      findings.push_back(folder.string() + " is on " + kind.name +
                         ", not a filesystem the Slurm nodes share (NFS, Lustre, GPFS, BeeGFS, CephFS, ...): "
                         "jobs on other nodes would not find the worktrees and run folders; put the repository "
                         "and its state directory on a shared filesystem");
  }
  return {{"ready", findings.empty()},
          {"tools", tools},
          {"nodes", nodes},
          {"host", host},
          {"only_node_is_this_host", only_this_host},
          {"filesystems", filesystems},
          {"findings", findings}};
}

void print_slurm(const nlohmann::json& slurm) {
  std::string tools;
  for (const auto& [name, path] : slurm["tools"].items())
    tools += (tools.empty() ? "" : ", ") + name + " " +
             (path.get<std::string>().empty() ? "not found" : path.get<std::string>());
  std::cout << "  slurm      " << tools << "\n";
  std::string nodes;
  for (const auto& node : slurm["nodes"]) nodes += (nodes.empty() ? "" : ", ") + node.get<std::string>();
  std::cout << "  slurm      nodes: " << (nodes.empty() ? "none listed" : nodes)
            << (slurm["only_node_is_this_host"].get<bool>() ? " (this host only)" : "") << "\n";
  for (const auto& folder : slurm["filesystems"])
    std::cout << "  slurm      " << folder["path"].get<std::string>() << " on " << folder["type"].get<std::string>()
              << (folder["shared"].get<bool>()                  ? " (shared)"
                  : slurm["only_node_is_this_host"].get<bool>() ? " (shared: the only node is this host)"
                                                                : " (not shared)")
              << "\n";
}

int run_doctor(const CommonOptions& options, const std::string& output, bool slurm) {
  Config config = load_session_config(options);
  EnvironmentCapture capture = capture_environment(config.source_dir);
  fs::path path = output.empty() ? config.state_dir / "environment.json" : fs::path(output);
  fs::create_directories(path.parent_path());
  capture.document["captured_at"] = utc_timestamp();
  if (slurm) capture.document["slurm"] = check_slurm(config);
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
  report_weights(config, capture.warnings);
  report_ctest_gpus(config, document, capture.warnings);
  if (slurm) {
    print_slurm(document["slurm"]);
    for (const auto& finding : document["slurm"]["findings"]) capture.warnings.push_back(finding);
  }
  if (!sandbox.available)
    capture.warnings.push_back("no sandbox for the candidate's stages (" + sandbox.description +
                               "): experiments run unsandboxed, and their records say so");
  for (const auto& warning : capture.warnings) std::cout << "warning: " << warning << "\n";
  Fields fields{{"status", "OK"},
                {"gpu", document.value("gpu", "none")},
                {"sandbox", sandbox.available ? "bwrap" : sandbox.description},
                {"warnings", std::to_string(capture.warnings.size())},
                {"environment", path.string()}};
  if (slurm) fields.push_back({"slurm", document["slurm"]["ready"].get<bool>() ? "ready" : "not ready"});
  print_result_block(std::cout, fields, false);
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
  auto slurm = std::make_shared<bool>(false);
  command->add_flag("--slurm", *slurm,
                    "Also check what dit-ar work --slurm needs: sbatch, sinfo, squeue and scancel, the nodes sinfo "
                    "lists, and the repository and state directory on a filesystem the nodes share (a finding, a "
                    "warning, for each problem; the block's slurm: ready or not ready)");
  add_common_options(*command, options, true);
  command->callback([&options, output, slurm] { finish_with(run_doctor(options, *output, *slurm)); });
}

}  // namespace dit::ar
