// GPU and toolchain capture. NVML and the CUDA libraries are opened with dlopen so dit-ar
// starts on machines that lack them (CI has neither a GPU nor a driver).
#include "driver/environment_capture.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "core/files.h"
#include "driver/git_repository.h"
#include "driver/process.h"

#ifdef DIT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTargetGpu = "A5500";

void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

// NVML, declared here with the few entry points used (the ABI is stable C).
struct Nvml {
  using Device = void*;
  void* handle = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*device_count)(unsigned*) = nullptr;
  int (*device_by_index)(unsigned, Device*) = nullptr;
  int (*device_name)(Device, char*, unsigned) = nullptr;
  int (*device_uuid)(Device, char*, unsigned) = nullptr;
  int (*clock_info)(Device, int, unsigned*) = nullptr;
  int (*max_clock_info)(Device, int, unsigned*) = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  int (*power_limit)(Device, unsigned*) = nullptr;
  int (*common_ancestor)(Device, Device, int*) = nullptr;

  bool load() {
    handle = open_first({"libnvidia-ml.so.1", "libnvidia-ml.so"});
    if (!handle) return false;
    auto bind = [&](auto& pointer, const char* symbol) {
      pointer = reinterpret_cast<std::remove_reference_t<decltype(pointer)>>(::dlsym(handle, symbol));
      return pointer != nullptr;
    };
    bool ok = bind(init, "nvmlInit_v2") && bind(shutdown, "nvmlShutdown") &&
              bind(device_count, "nvmlDeviceGetCount_v2") && bind(device_by_index, "nvmlDeviceGetHandleByIndex_v2") &&
              bind(device_name, "nvmlDeviceGetName") && bind(device_uuid, "nvmlDeviceGetUUID") &&
              bind(clock_info, "nvmlDeviceGetClockInfo") && bind(max_clock_info, "nvmlDeviceGetMaxClockInfo") &&
              bind(driver_version, "nvmlSystemGetDriverVersion") &&
              bind(power_limit, "nvmlDeviceGetPowerManagementLimit");
    bind(common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    return ok && init() == 0;
  }
  ~Nvml() {
    if (handle && shutdown) shutdown();
    if (handle) ::dlclose(handle);
  }
};

constexpr int kNvmlClockGraphics = 0;
constexpr int kNvmlClockMemory = 2;

std::string topology_name(int level) {
  switch (level) {
    case 0: return "same board";
    case 10: return "single PCIe switch";
    case 20: return "multiple PCIe switches";
    case 30: return "PCIe host bridge";
    case 40: return "same NUMA node (CPU)";
    case 50: return "across CPU sockets";
    default: return "level " + std::to_string(level);
  }
}

nlohmann::json capture_nvml() {
  Nvml nvml;
  if (!nvml.load()) return {{"available", false}, {"reason", "libnvidia-ml.so.1 not found or nvmlInit failed"}};
  nlohmann::json result{{"available", true}};
  char text[256] = {};
  if (nvml.driver_version(text, sizeof text) == 0) result["driver_version"] = text;
  unsigned count = 0;
  nvml.device_count(&count);
  std::vector<Nvml::Device> devices(count);
  nlohmann::json gpus = nlohmann::json::array();
  for (unsigned i = 0; i < count; ++i) {
    if (nvml.device_by_index(i, &devices[i]) != 0) continue;
    nlohmann::json gpu{{"index", i}};
    if (nvml.device_name(devices[i], text, sizeof text) == 0) gpu["name"] = text;
    if (nvml.device_uuid(devices[i], text, sizeof text) == 0) gpu["uuid"] = text;
    unsigned value = 0;
    if (nvml.clock_info(devices[i], kNvmlClockGraphics, &value) == 0) gpu["sm_clock_mhz"] = value;
    if (nvml.max_clock_info(devices[i], kNvmlClockGraphics, &value) == 0) gpu["max_sm_clock_mhz"] = value;
    if (nvml.clock_info(devices[i], kNvmlClockMemory, &value) == 0) gpu["memory_clock_mhz"] = value;
    if (nvml.max_clock_info(devices[i], kNvmlClockMemory, &value) == 0) gpu["max_memory_clock_mhz"] = value;
    if (nvml.power_limit(devices[i], &value) == 0) gpu["power_limit_w"] = value / 1000.0;
    gpus.push_back(gpu);
  }
  result["gpus"] = gpus;
  nlohmann::json topology = nlohmann::json::array();
  if (nvml.common_ancestor) {
    for (unsigned a = 0; a < count; ++a) {
      for (unsigned b = a + 1; b < count; ++b) {
        int level = 0;
        if (nvml.common_ancestor(devices[a], devices[b], &level) == 0) {
          topology.push_back({{"gpus", {a, b}}, {"link", topology_name(level)}});
        }
      }
    }
  }
  result["topology"] = topology;
  return result;
}

nlohmann::json capture_cuda_runtime() {
#ifdef DIT_WITH_CUDA
  nlohmann::json result{{"built_with_cuda", true}};
  int version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess) result["runtime_version"] = version;
  if (cudaDriverGetVersion(&version) == cudaSuccess) result["driver_api_version"] = version;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    result["device_count"] = 0;
    result["error"] = cudaGetErrorString(status);
    return result;
  }
  result["device_count"] = count;
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, i) != cudaSuccess) continue;
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    devices.push_back(
        {{"index", i},
         {"name", properties.name},
         {"compute_capability", std::to_string(properties.major) + "." + std::to_string(properties.minor)},
         {"sm_count", properties.multiProcessorCount},
         {"memory_bytes", properties.totalGlobalMem},
         {"l2_bytes", properties.l2CacheSize},
         {"shared_memory_per_block_optin", properties.sharedMemPerBlockOptin},
         {"pci_bus_id", bus}});
  }
  result["devices"] = devices;
  return result;
#else
  return {{"built_with_cuda", false},
          {"note", "dit-ar was built without CUDA (DIT_WITH_CUDA=OFF); GPUs come from NVML only"}};
#endif
}

// A library's version through a version function looked up with dlopen.
nlohmann::json library_version(std::initializer_list<const char*> names, const char* symbol, bool by_pointer) {
  void* handle = open_first(names);
  if (!handle) return nullptr;
  nlohmann::json version;
  if (void* function = ::dlsym(handle, symbol)) {
    if (by_pointer) {
      int value = 0;
      if (reinterpret_cast<int (*)(int*)>(function)(&value) == 0) version = value;
    } else {
      version = reinterpret_cast<std::size_t (*)()>(function)();
    }
  }
  ::dlclose(handle);
  return version;
}

std::optional<fs::path> find_tool(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/local/cuda/bin";
  std::istringstream folders(path);
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (folder.empty()) continue;
    fs::path candidate = fs::path(folder) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

nlohmann::json tool_version(const std::string& name, const std::string& flag = "--version") {
  std::optional<fs::path> tool = find_tool(name);
  if (!tool) return {{"found", false}};
  fs::path output = fs::temp_directory_path() / ("dit-ar-" + name + "-" + std::to_string(::getpid()) + ".txt");
  ProcessOptions options;
  options.argv = {tool->string(), flag};
  options.stdout_path = output;
  options.log_path = "/dev/null";
  options.timeout = std::chrono::seconds(20);
  ProcessResult result = run_process(options);
  std::string text = fs::exists(output) ? read_text_file(output) : "";
  fs::remove(output);
  // The last non-empty line usually carries the version ("Cuda compilation tools, release 13.0").
  std::string first_line = text.substr(0, text.find('\n'));
  std::string version_line;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("ersion") != std::string::npos || line.find("release") != std::string::npos) version_line = line;
  }
  return {{"found", true},
          {"path", tool->string()},
          {"works", result.succeeded()},
          {"version", version_line.empty() ? first_line : version_line}};
}

}  // namespace

EnvironmentCapture capture_environment(const fs::path& source_dir) {
  EnvironmentCapture capture;
  auto& document = capture.document;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  utsname system{};
  ::uname(&system);
  document["host"] = {{"name", host},
                      {"kernel", std::string(system.sysname) + " " + system.release},
                      {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)}};
  document["nvml"] = capture_nvml();
  document["cuda_runtime"] = capture_cuda_runtime();
  document["libraries"] = {
      {"cublasLt",
       library_version({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, "cublasLtGetVersion", false)},
      {"cudnn", library_version({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "cudnnGetVersion", false)},
      {"nccl", library_version({"libnccl.so.2", "libnccl.so"}, "ncclGetVersion", true)}};
  document["toolchain"] = {{"dit-ar_compiler", __VERSION__}, {"cmake", tool_version("cmake")},
                           {"ctest", tool_version("ctest")}, {"c++", tool_version("c++")},
                           {"nvcc", tool_version("nvcc")},   {"nsys", tool_version("nsys")},
                           {"ncu", tool_version("ncu")}};
  try {
    GitRepository repository(source_dir);
    auto branch = repository.current_branch();
    auto dirty = repository.dirty_paths();
    document["repository"] = {{"path", source_dir.string()},
                              {"branch", branch ? *branch : "(detached)"},
                              {"head", repository.head_commit()},
                              {"dirty_paths", dirty.size()}};
    if (!dirty.empty())
      capture.warnings.push_back(std::to_string(dirty.size()) + " uncommitted path(s) in the working tree");
  } catch (const std::exception& error) {
    document["repository"] = {{"error", error.what()}};
  }

  std::string gpus = gpu_description();
  document["gpu"] = gpus;
  if (gpus == "none") {
    capture.warnings.push_back("no GPU found: numbers measured here are not RTX A5500 numbers");
  } else if (gpus.find(kTargetGpu) == std::string::npos) {
    capture.warnings.push_back("the GPU is " + gpus +
                               ", not an RTX A5500: its numbers must never be presented as A5500 numbers");
  }
  if (!document["toolchain"]["ncu"].value("found", false)) {
    capture.warnings.push_back("ncu (Nsight Compute) not found: `dit-ar profile --ncu` will not work");
  }
  if (!document["toolchain"]["nsys"].value("found", false)) {
    capture.warnings.push_back("nsys (Nsight Systems) not found");
  }
  document["warnings"] = capture.warnings;
  return capture;
}

std::string gpu_description() {
  std::vector<std::string> names;
  nlohmann::json nvml = capture_nvml();
  if (nvml.value("available", false)) {
    for (const auto& gpu : nvml["gpus"]) names.push_back(gpu.value("name", "unknown GPU"));
  }
#ifdef DIT_WITH_CUDA
  if (names.empty()) {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess) {
      for (int i = 0; i < count; ++i) {
        cudaDeviceProp properties{};
        if (cudaGetDeviceProperties(&properties, i) == cudaSuccess) names.push_back(properties.name);
      }
    }
  }
#endif
  if (names.empty()) return "none";
  bool all_same = true;
  for (const auto& name : names) all_same = all_same && name == names.front();
  if (all_same) return names.size() == 1 ? names.front() : std::to_string(names.size()) + "x " + names.front();
  std::string joined;
  for (const auto& name : names) joined += (joined.empty() ? "" : " + ") + name;
  return joined;
}

}  // namespace dit::ar
