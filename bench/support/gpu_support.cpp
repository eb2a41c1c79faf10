#include "bench/support/gpu_support.h"

#include <cublasLt.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/cublaslt_library.h"
#include "core/error.h"

namespace dit::bench {
namespace {

size_t g_context_used_bytes = 0;

std::string version_string(int packed) {  // 13000 -> "13.0"
  return std::to_string(packed / 1000) + "." + std::to_string(packed % 1000 / 10);
}

// NVML, loaded with dlopen when present (ARCHITECTURE.md, Who may use whom: never linked, CI
// machines have none). Only the calls the context needs, declared with the types of nvml.h.
struct Nvml {
  using Init = int (*)();
  using Shutdown = int (*)();
  using DriverVersion = int (*)(char*, unsigned);
  using HandleByPci = int (*)(const char*, void**);
  using ClockInfo = int (*)(void*, int, unsigned*);
  static constexpr int kClockSm = 1;   // NVML_CLOCK_SM
  static constexpr int kClockMem = 2;  // NVML_CLOCK_MEM

  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);

  template <typename F>
  F symbol(const char* name) const {
    return library ? reinterpret_cast<F>(dlsym(library, name)) : nullptr;
  }
  ~Nvml() {
    if (library) dlclose(library);
  }
};

void append_nvml_context(int device, Context& context) {
  Nvml nvml;
  auto init = nvml.symbol<Nvml::Init>("nvmlInit_v2");
  auto shutdown = nvml.symbol<Nvml::Shutdown>("nvmlShutdown");
  auto driver_version = nvml.symbol<Nvml::DriverVersion>("nvmlSystemGetDriverVersion");
  auto handle_by_pci = nvml.symbol<Nvml::HandleByPci>("nvmlDeviceGetHandleByPciBusId_v2");
  auto clock = nvml.symbol<Nvml::ClockInfo>("nvmlDeviceGetClockInfo");
  auto max_clock = nvml.symbol<Nvml::ClockInfo>("nvmlDeviceGetMaxClockInfo");
  if (!init || !shutdown || !driver_version || !handle_by_pci || !clock || !max_clock || init() != 0) {
    context.emplace_back("nvml", "not available (libnvidia-ml.so.1 missing or failed to start)");
    return;
  }
  std::array<char, 96> text{};
  if (driver_version(text.data(), text.size()) == 0) context.emplace_back("gpu_driver", text.data());
  std::array<char, 32> pci{};
  void* handle = nullptr;
  if (cudaDeviceGetPCIBusId(pci.data(), pci.size(), device) == cudaSuccess && handle_by_pci(pci.data(), &handle) == 0) {
    unsigned mhz = 0;
    if (clock(handle, Nvml::kClockSm, &mhz) == 0)
      context.emplace_back("gpu_sm_clock_mhz_at_start", std::to_string(mhz));
    if (max_clock(handle, Nvml::kClockSm, &mhz) == 0) context.emplace_back("gpu_sm_clock_max_mhz", std::to_string(mhz));
    if (clock(handle, Nvml::kClockMem, &mhz) == 0)
      context.emplace_back("gpu_memory_clock_mhz_at_start", std::to_string(mhz));
  }
  shutdown();
}

}  // namespace

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    throw Error(ErrorKind::device, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                                       cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
}

std::optional<std::string> probe_gpu(Context& context) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) return std::string(cudaGetErrorString(status));
  if (devices == 0) return std::string("no CUDA device");
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return std::string("cudaGetDevice failed");
  // cuBLASLt's start-up work (it is opened on first use: core/cublaslt_library.h) beside the
  // context's creation, after the device count loaded the driver.
  std::jthread cublaslt_preload([] { preload_cublaslt(); });
  const cudaError_t created = cudaFree(nullptr);  // creates the primary context
  if (created != cudaSuccess) return std::string(cudaGetErrorString(created));
  g_context_used_bytes = device_used_bytes();

  cudaDeviceProp properties{};
  DIT_BENCH_CUDA(cudaGetDeviceProperties(&properties, device));
  int clock_khz = 0, l2_bytes = 0, sms = 0;
  DIT_BENCH_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  DIT_BENCH_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  DIT_BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int runtime = 0, driver = 0;
  DIT_BENCH_CUDA(cudaRuntimeGetVersion(&runtime));
  DIT_BENCH_CUDA(cudaDriverGetVersion(&driver));
  const size_t cublaslt = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  const size_t cudnn = cudnnGetVersion();        // major * 10000 + minor * 100 + patch
  auto dotted = [](size_t v) {
    return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
  };

  context.emplace_back("gpu_name", properties.name);
  context.emplace_back("gpu_compute_capability",
                       std::to_string(properties.major) + "." + std::to_string(properties.minor));
  context.emplace_back("gpu_sm_count", std::to_string(sms));
  context.emplace_back("gpu_sm_clock_peak_mhz", std::to_string(clock_khz / 1000));
  context.emplace_back("gpu_l2_bytes", std::to_string(l2_bytes));
  context.emplace_back("gpu_memory_bytes", std::to_string(properties.totalGlobalMem));
  context.emplace_back("gpu_memory_in_use_after_context_bytes", std::to_string(g_context_used_bytes));
  context.emplace_back("cuda_runtime", version_string(runtime));
  context.emplace_back("cuda_driver_api", version_string(driver));
  context.emplace_back("cublaslt", dotted(cublaslt));
  context.emplace_back("cudnn", dotted(cudnn));
  append_nvml_context(device, context);
  return std::nullopt;
}

size_t device_used_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  DIT_BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

size_t context_used_bytes() { return g_context_used_bytes; }

// ---------------------------------------------------------------------------------------------

DeviceMemoryMonitor::DeviceMemoryMonitor(int period_us) {
  sample();
  poller_ = std::thread([this, period_us] {
    while (running_.load()) {
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        const size_t used = total_bytes - free_bytes;
        size_t seen = peak_.load();
        while (used > seen && !peak_.compare_exchange_weak(seen, used)) {}
      }
      std::this_thread::sleep_for(std::chrono::microseconds(period_us));
    }
  });
}

DeviceMemoryMonitor::~DeviceMemoryMonitor() {
  running_ = false;
  poller_.join();
}

void DeviceMemoryMonitor::sample() {
  const size_t used = device_used_bytes();
  size_t seen = peak_.load();
  while (used > seen && !peak_.compare_exchange_weak(seen, used)) {}
}

size_t DeviceMemoryMonitor::peak_above_context() const {
  const size_t peak = peak_.load();
  return peak > g_context_used_bytes ? peak - g_context_used_bytes : 0;
}

// ---------------------------------------------------------------------------------------------

EventTimer::EventTimer(cudaStream_t stream) : stream_(stream) {
  DIT_BENCH_CUDA(cudaEventCreate(&start_));
  DIT_BENCH_CUDA(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventTimer::start() { DIT_BENCH_CUDA(cudaEventRecord(start_, stream_)); }

double EventTimer::stop_seconds() {
  DIT_BENCH_CUDA(cudaEventRecord(stop_, stream_));
  DIT_BENCH_CUDA(cudaEventSynchronize(stop_));
  float milliseconds = 0;
  DIT_BENCH_CUDA(cudaEventElapsedTime(&milliseconds, start_, stop_));
  return milliseconds * 1e-3;
}

// ---------------------------------------------------------------------------------------------

L2Flusher::L2Flusher() {
  int device = 0, l2_bytes = 0;
  DIT_BENCH_CUDA(cudaGetDevice(&device));
  DIT_BENCH_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  bytes_ = std::max<size_t>(2 * static_cast<size_t>(l2_bytes), size_t{8} << 20);
  DIT_BENCH_CUDA(cudaMalloc(&buffer_, bytes_));
}

L2Flusher::~L2Flusher() { cudaFree(buffer_); }

DeviceBuffer::DeviceBuffer(size_t bytes) { DIT_BENCH_CUDA(cudaMalloc(&pointer_, std::max<size_t>(bytes, 256))); }

DeviceBuffer::~DeviceBuffer() { cudaFree(pointer_); }

std::optional<std::string> first_gpu_name() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return std::nullopt;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return std::nullopt;
  return std::string(prop.name);
}

void L2Flusher::flush(cudaStream_t stream) {
  // A different byte each pass, so no write can be elided as a no-op.
  DIT_BENCH_CUDA(cudaMemsetAsync(buffer_, ++pass_ & 0xff, bytes_, stream));
}

}  // namespace dit::bench
