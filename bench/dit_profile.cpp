// Fixed during a session (the performance harness).
// dit_profile: per-phase GPU times of one image (a corpus case) from the engine's NVTX ranges.
// `dit-ar profile` runs it (with DIT_OUTPUT_DIR set: the JSON goes to $DIT_OUTPUT_DIR/profile.json).
//
// It links an NVTX injection into itself (NVTX's static injection, dit_profile_nvtx_hook.cpp):
// every range push and pop of the engine (and the tool's own "generate",
// "vae_decode" and "to_images" ranges around the pipeline's parts) synchronises the device and
// records a CUDA event, so the time between two events is the GPU time of the work enqueued
// between them; the engine's private stream leaves no cheaper way to see its boundaries. Ranges
// are keyed by their nesting path (generate/sample/step/forward/block), with inclusive and
// self time (inclusive minus children; the self time of `forward` is the embedding).
//
// The engine replays its forward pass as a CUDA Graph, and a range inside a replayed graph emits
// nothing (and a synchronisation during a capture would break it). So the image is rendered
// twice per model: on the engine as configured (a 2-step warm-up, then the unperturbed run, no
// synchronisation: the true total), then on a second model built with CUDA Graphs off (eager
// launches, every range visible: a warm-up, then the profiled run). The profiled total exceeds
// the unperturbed one by the cost of graphs off and of the synchronisations; the output states
// both totals. Under another NVTX tool (ncu, nsys) the injection is theirs and the phase table
// is empty; the unperturbed total still prints.
#include <nvtx3/nvToolsExt.h>

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/engine/engine_setup.h"
#include "bench/support/gpu_support.h"
#include "bench/support/tool_arguments.h"
#include "model/pipeline.h"
#include "quality/corpus.h"
#include "quality/gate_sets.h"

namespace {

// ---------------------------------------------------------------------------------------------
// The injection: a stack of open ranges, each closed range becomes one record.

struct OpenRange {
  std::string path;
  cudaEvent_t start;
};

struct Recorder {
  bool injected = false;  // NVTX called our initialiser (no other tool took the ranges)
  bool recording = false;
  std::vector<OpenRange> open;
  std::vector<std::pair<std::string, std::pair<cudaEvent_t, cudaEvent_t>>> closed;  // path, (start, stop)
  std::string error;  // the first CUDA failure inside a callback (callbacks cannot throw)

  cudaEvent_t mark() {
    cudaEvent_t event = nullptr;  // one per boundary, alive until the process ends
    const cudaError_t created = cudaEventCreate(&event);
    if (created != cudaSuccess) {
      if (error.empty()) error = cudaGetErrorString(created);
      return nullptr;
    }
    const cudaError_t synced = cudaDeviceSynchronize();
    const cudaError_t recorded = cudaEventRecord(event, nullptr);
    if ((synced != cudaSuccess || recorded != cudaSuccess) && error.empty()) {
      error = cudaGetErrorString(synced != cudaSuccess ? synced : recorded);
    }
    return event;
  }
  void push(const char* name) {
    if (!recording) return;
    const std::string parent = open.empty() ? "" : open.back().path + "/";
    open.push_back({parent + (name ? name : "?"), mark()});
  }
  void pop() {
    if (!recording || open.empty()) return;
    closed.push_back({open.back().path, {open.back().start, mark()}});
    open.pop_back();
  }
};

Recorder& recorder() {
  static Recorder instance;
  return instance;
}

const char* message_of(const nvtxEventAttributes_t* attributes) {
  if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII) return attributes->message.ascii;
  return "(unnamed)";
}

int NVTX_API push_a(const char* message) {
  recorder().push(message);
  return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* attributes) {
  recorder().push(message_of(attributes));
  return 0;
}
int NVTX_API pop() {
  recorder().pop();
  return 0;
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attributes) {
  recorder().push(message_of(attributes));
  return 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t) {
  recorder().pop();
  return 0;
}

void set_callback(NvtxGetExportTableFunc_t get_table, NvtxCallbackModule module, unsigned id, NvtxFunctionPointer f) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks && callbacks->GetModuleFunctionTable(module, &table, &size) && table && id < size) *table[id] = f;
}

}  // namespace

// Called by NVTX at its first use, through dit_profile_nvtx_hook.cpp.
extern "C" int dit_profile_initialize_injection(NvtxGetExportTableFunc_t get_table) {
  set_callback(get_table, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA,
               reinterpret_cast<NvtxFunctionPointer>(push_a));
  set_callback(get_table, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx,
               reinterpret_cast<NvtxFunctionPointer>(push_ex));
  set_callback(get_table, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, reinterpret_cast<NvtxFunctionPointer>(pop));
  set_callback(get_table, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
               reinterpret_cast<NvtxFunctionPointer>(domain_push_ex));
  set_callback(get_table, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop,
               reinterpret_cast<NvtxFunctionPointer>(domain_pop));
  recorder().injected = true;
  return 1;
}

namespace {

// ---------------------------------------------------------------------------------------------
// The run

struct Options {
  std::string case_id;
  std::string precision;
  std::string gate_set = "gpu";
  int steps = 0;
  std::string out;
};

struct Phase {
  std::string path;
  int calls = 0;
  double total_ms = 0, self_ms = 0;
};

class ScopedRange {
 public:
  explicit ScopedRange(const char* name) { nvtxRangePushA(name); }
  ~ScopedRange() { nvtxRangePop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

// generate() of model/pipeline.cpp, with a range around each of its parts.
void generate_with_ranges(dit::DitModel& model, dit::VaeDecoder& vae, const dit::SampleRequest& request) {
  ScopedRange range("generate");
  dit::Tensor latents = model.sample(request);
  for (float& value : latents.data) value /= dit::kVaeScalingFactor;
  dit::Tensor decoded;
  {
    ScopedRange decode("vae_decode");
    decoded = vae.decode(latents);
  }
  ScopedRange convert("to_images");
  benchmark::DoNotOptimize(dit::to_images(decoded).data());
}

std::vector<Phase> collect_phases() {
  Recorder& r = recorder();
  std::map<std::string, Phase> by_path;
  for (const auto& [path, events] : r.closed) {
    if (!events.first || !events.second) continue;
    float ms = 0;
    DIT_BENCH_CUDA(cudaEventElapsedTime(&ms, events.first, events.second));
    Phase& phase = by_path[path];
    phase.path = path;
    phase.calls += 1;
    phase.total_ms += ms;
  }
  for (auto& [path, phase] : by_path) {
    phase.self_ms = phase.total_ms;
    for (const auto& [child_path, child] : by_path) {
      const bool direct_child = child_path.size() > path.size() + 1 && child_path.rfind(path + "/", 0) == 0 &&
                                child_path.find('/', path.size() + 1) == std::string::npos;
      if (direct_child) phase.self_ms -= child.total_ms;
    }
  }
  std::vector<Phase> phases;
  for (auto& [path, phase] : by_path) phases.push_back(phase);
  return phases;  // sorted by path: parents before their children
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int run(const Options& options) {
  dit::bench::Context context = dit::bench::build_context();
  if (const auto no_gpu = dit::bench::probe_gpu(context)) {
    std::fprintf(stderr, "dit_profile: needs a GPU (%s)\n", no_gpu->c_str());
    return 2;
  }
  const std::vector<dit::quality::GateSet> sets = dit::quality::load_gate_sets(DIT_QUALITY_GATE_SETS);
  const auto gpu_set =
      std::find_if(sets.begin(), sets.end(), [&](const auto& s) { return s.name == options.gate_set; });
  if (gpu_set == sets.end())
    throw dit::Error(dit::ErrorKind::invalid_file, "no \"" + options.gate_set + "\" set in " DIT_QUALITY_GATE_SETS);
  const dit::quality::Corpus corpus = dit::quality::load_corpus(gpu_set->corpus);
  const dit::quality::Case c = options.case_id.empty() ? corpus.cases.at(0) : corpus.at(options.case_id);

  dit::bench::EngineChoice choice;
  choice.model = c.model;
  choice.backend = dit::parse_backend(gpu_set->backend);
  choice.precision = dit::parse_precision(options.precision.empty() ? gpu_set->precision : options.precision);
  choice.weights_seed = c.weights_seed;
  // The case's checkpoint as the quality render takes it (its own, else the set's), hashed first.
  const std::optional<dit::quality::WeightsReference>& weights = dit::quality::case_checkpoint(c, *gpu_set);
  if (weights) {
    if (const std::string problem = dit::quality::weights_file_problem(*weights); !problem.empty())
      throw dit::Error(dit::ErrorKind::invalid_file, "gate set " + gpu_set->name + ", case " + c.id + ": " + problem);
    choice.weights_path = weights->path;
  }
  dit::SampleRequest request;
  request.class_labels = {c.class_label};
  request.seeds = {c.seed};
  request.steps = options.steps > 0 ? options.steps : c.steps;
  request.cfg_scale = static_cast<float>(c.cfg_scale);
  request.sampler = dit::parse_sampler(c.sampler);

  std::printf("dit_profile: case %s (%s %d, %s %d steps, cfg %g), %s %s on %s\n", c.id.c_str(), c.model.c_str(),
              c.image_size, c.sampler.c_str(), request.steps, request.cfg_scale, gpu_set->backend.c_str(),
              dit::precision_name(choice.precision), std::find_if(context.begin(), context.end(), [](const auto& kv) {
                                                       return kv.first == "gpu_name";
                                                     })->second.c_str());
  auto start = std::chrono::steady_clock::now();
  auto models = std::make_unique<dit::bench::ModelCache>(choice);
  dit::DitModel* model = &models->get(c.image_size);
  const auto vae = dit::bench::bench_vae(choice.backend, choice.precision, c.weights_seed);
  const double load_ms = milliseconds_since(start);

  dit::SampleRequest warm = request;
  warm.steps = 2;
  generate_with_ranges(*model, *vae, warm);
  DIT_BENCH_CUDA(cudaDeviceSynchronize());
  start = std::chrono::steady_clock::now();
  generate_with_ranges(*model, *vae, request);
  DIT_BENCH_CUDA(cudaDeviceSynchronize());
  const double unperturbed_ms = milliseconds_since(start);

  // The same model with CUDA Graphs off.
  models.reset();
  choice.engine.cuda_graphs = false;
  models = std::make_unique<dit::bench::ModelCache>(choice);
  model = &models->get(c.image_size);
  generate_with_ranges(*model, *vae, warm);
  DIT_BENCH_CUDA(cudaDeviceSynchronize());

  Recorder& r = recorder();
  r.recording = true;
  start = std::chrono::steady_clock::now();
  generate_with_ranges(*model, *vae, request);
  DIT_BENCH_CUDA(cudaDeviceSynchronize());
  const double profiled_ms = milliseconds_since(start);
  r.recording = false;
  if (!r.error.empty()) throw dit::Error(dit::ErrorKind::device, "inside an NVTX callback: " + r.error);
  const std::vector<Phase> phases = collect_phases();

  std::printf(
      "load %.0f ms; one image %.1f ms as configured (unperturbed), %.1f ms profiled (CUDA Graphs off, a "
      "device synchronisation at each of %zu range boundaries)\n",
      load_ms, unperturbed_ms, profiled_ms, 2 * r.closed.size());
  if (!r.injected) {
    std::printf("no phase table: another tool (ncu, nsys) holds the NVTX injection\n");
  } else {
    const double root_ms = phases.empty() ? 0.0 : phases.front().total_ms;
    std::printf(
        "\n| phase (nesting path) | calls | total ms | self ms | mean ms | %% of image |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (const Phase& p : phases) {
      std::printf("| %s | %d | %.2f | %.2f | %.4f | %.1f |\n", p.path.c_str(), p.calls, p.total_ms, p.self_ms,
                  p.total_ms / p.calls, root_ms > 0 ? 100.0 * p.total_ms / root_ms : 0.0);
    }
  }

  nlohmann::json json;
  for (const auto& [key, value] : context) json["context"][key] = value;
  json["case"] = {{"id", c.id},
                  {"model", c.model},
                  {"image_size", c.image_size},
                  {"sampler", c.sampler},
                  {"steps", request.steps},
                  {"cfg_scale", c.cfg_scale},
                  {"precision", dit::precision_name(choice.precision)},
                  {"backend", gpu_set->backend}};
  if (!weights) {
    json["case"]["weights"] = "seeded random (seed " + std::to_string(c.weights_seed) + ")";
  } else {
    json["case"]["weights"] = weights->path;
    json["case"]["weights_sha256"] = weights->sha256;
  }
  json["load_ms"] = load_ms;
  json["image_ms_unperturbed"] = unperturbed_ms;
  json["image_ms_profiled"] = profiled_ms;  // CUDA Graphs off, synchronised at every range boundary
  json["nvtx_injected"] = r.injected;
  json["phases"] = nlohmann::json::array();
  for (const Phase& p : phases) {
    json["phases"].push_back({{"path", p.path}, {"calls", p.calls}, {"total_ms", p.total_ms}, {"self_ms", p.self_ms}});
  }
  std::string out = options.out;
  if (out.empty() && std::getenv("DIT_OUTPUT_DIR")) out = std::string(std::getenv("DIT_OUTPUT_DIR")) + "/profile.json";
  if (!out.empty()) {
    std::ofstream file(out);
    file << json.dump(2) << "\n";
    if (!file) throw dit::Error(dit::ErrorKind::io, "cannot write " + out);
    std::printf("\nwrote %s\n", out.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("dit_profile: per-phase GPU times of one corpus image from the engine's NVTX ranges");
  Options options;
  app.add_option("--gate-set", options.gate_set, "quality gate set whose corpus, backend and precision are used");
  app.add_option("--case", options.case_id, "corpus case id (default: the gate set corpus's first case)");
  app.add_option("--precision", options.precision, "fp32, tf32, fp16 or bf16 (default: the GPU gate set's)");
  app.add_option("--steps", options.steps, "override the case's step count (e.g. 2 under ncu; 0: the case's)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--out", options.out, "JSON output (default: $DIT_OUTPUT_DIR/profile.json when set)");
  if (const auto code = dit::bench::parse_tool_arguments(app, argc, argv)) return *code;
  try {
    return run(options);
  } catch (const dit::Error& error) {
    std::fprintf(stderr, "dit_profile: %s\n", error.what());
    return error.kind() == dit::ErrorKind::device ? 1 : 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dit_profile: %s\n", error.what());
    return 1;
  }
}
