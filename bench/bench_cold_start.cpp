// Fixed during a session (the performance harness).
// Cold start: process start to first image. Each iteration spawns dit-sample (DiT-XL/2 at 256 by
// default, one image, CUDA backend, random weights or --weights, DDPM with guidance, VAE decode,
// PNG written) and times it from the spawn to the process's exit, wall clock. --model, --steps
// and --vae make a short run (the smoke test) cheap; the figure is the defaults' one.
//
// The driver compiles the PTX of kernels built for another architecture (an sm_86 build on an
// H200) on first use and keeps the result in its JIT cache, so the state of that cache is part
// of the figure and is recorded:
//   BM_ColdStart/jit_cache:cold  CUDA_CACHE_PATH is a new empty directory for every run;
//   BM_ColdStart/jit_cache:warm  CUDA_CACHE_PATH is a directory a previous run filled (the
//                                first cold run's, else an untimed run's).
// On a GPU that runs the build's native code (an sm_86 build on an A5500) both are the same.
// Each run also reports where the time to the model being ready went: dit-sample --phase-times
// from the spawn (--spawn-monotonic-ns) to the first sampling step done and the VAE made, as
// counters `ready_ms` and `<phase>_ms` (process start, arguments, backend check, hash, the
// device context, DiT weights: a checkpoint opened and its names and shapes checked (0 for the
// random default, drawn on the device), the DiT model built: for a checkpoint its values
// converted from the mapping and uploaded, and the plans; setup, the first step, which holds the
// first graph capture, and `vae`: what the VAE's weights and decoder, made on a thread beside the DiT's load and first
// step, add after that step) and `<work>_beside_ms` for the VAE thread's own parts.
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/support/bench_support.h"

extern char** environ;

namespace {

using dit::bench::Option;

const Option sample_option("dit-sample", "the dit-sample program to spawn", DIT_SAMPLE_PATH);
const Option weights_option("weights", "checkpoint for dit-sample (default: --random-weights)");
const Option precision_option("precision", "dit-sample --precision", "fp16");
const Option steps_option("steps", "dit-sample --steps", "250");
const Option model_option("model", "dit-sample --model", "DiT-XL/2");
const Option vae_option("vae", "dit-sample --vae (sd, tiny or none)", "sd");

namespace fs = std::filesystem;

// The run's scratch directory (dit-sample's output and log, the JIT caches), created on first
// use and removed at exit. One object owns both the path and its removal: a separate static
// whose destructor reads the path would run after the path's own destructor whenever it was
// constructed first (statics are destroyed in reverse order of construction).
class ScratchDirectory {
 public:
  ScratchDirectory() : path_(fs::temp_directory_path() / ("dit-bench-cold-start-" + std::to_string(getpid()))) {
    fs::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const fs::path& scratch_root() {
  static const ScratchDirectory directory;
  return directory.path();
}

struct SampleRun {
  double seconds = 0;     // spawn to exit, wall clock
  nlohmann::json phases;  // dit-sample --phase-times
};

// Runs dit-sample with CUDA_CACHE_PATH=cache; returns wall seconds and its phases. Throws with
// the log's tail.
SampleRun spawn_sample(const fs::path& cache, uint64_t seed) {
  const fs::path out = scratch_root() / "out";
  const fs::path log = scratch_root() / "dit-sample.log";
  const fs::path phases = scratch_root() / "phases.json";
  fs::remove(phases);
  std::vector<std::string> arguments = {sample_option.value(),
                                        "--backend",
                                        "cuda",
                                        "--model",
                                        model_option.value(),
                                        "--precision",
                                        precision_option.value(),
                                        "--image-size",
                                        "256",
                                        "--class",
                                        "207",
                                        "--seed",
                                        std::to_string(seed),
                                        "--steps",
                                        steps_option.value(),
                                        "--cfg-scale",
                                        "4",
                                        "--vae",
                                        vae_option.value(),
                                        "--out",
                                        out.string(),
                                        "--phase-times",
                                        phases.string()};
  if (weights_option.given()) {
    arguments.insert(arguments.end(), {"--weights", weights_option.value()});
  } else {
    arguments.push_back("--random-weights");
  }
  arguments.insert(arguments.end(), {"--spawn-monotonic-ns", "0"});  // the last: set just before the spawn
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    if (std::string(*entry).rfind("CUDA_CACHE_PATH=", 0) != 0) environment.emplace_back(*entry);
  }
  environment.push_back("CUDA_CACHE_PATH=" + cache.string());

  std::vector<char*> argv, envp;
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t child = 0;
  const auto start = std::chrono::steady_clock::now();
  arguments.back() =
      std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count());
  argv[argv.size() - 2] = arguments.back().data();
  const int spawned = posix_spawn(&child, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot start " + arguments[0] + ": " + std::strerror(spawned));
  int status = 0;
  pid_t waited = 0;
  do {
    waited = waitpid(child, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited < 0) throw std::runtime_error("waitpid for " + arguments[0] + ": " + std::strerror(errno));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream text(log);
    std::stringstream contents;
    contents << text.rdbuf();
    const std::string all = contents.str();
    const std::string how = WIFEXITED(status)     ? "exit code " + std::to_string(WEXITSTATUS(status))
                            : WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                  : "wait status " + std::to_string(status);
    throw std::runtime_error(arguments[0] + " failed (" + how +
                             "): " + all.substr(all.size() > 600 ? all.size() - 600 : 0));
  }
  std::ifstream phases_file(phases);
  if (!phases_file) throw std::runtime_error(arguments[0] + " wrote no " + phases.string());
  return {seconds, nlohmann::json::parse(phases_file)};
}

// The phases of one run as counters: ready_ms and <phase>_ms.
void phase_counters(benchmark::State& state, const nlohmann::json& phases) {
  state.counters["ready_ms"] = phases.at("ready_ms").get<double>();
  for (const auto& phase : phases.at("phases"))
    state.counters[phase.at("phase").get<std::string>() + "_ms"] = phase.at("ms").get<double>();
  // Work beside the phases (the VAE's weights and decoder, on their own thread), by its own time.
  for (const auto& work : phases.value("overlapped", nlohmann::json::array()))
    state.counters[work.at("work").get<std::string>() + "_beside_ms"] = work.at("ms").get<double>();
}

void BM_ColdStart(benchmark::State& state, bool warm_cache) {
  static int cold_runs = 0;
  static bool warm_cache_filled = false;
  static uint64_t seed = 1;
  const fs::path warm_cache_dir = scratch_root() / "jit-cache-warm";
  try {
    if (warm_cache && !warm_cache_filled) {
      spawn_sample(warm_cache_dir, seed++);  // untimed: fills the cache
      warm_cache_filled = true;
    }
    for (auto _ : state) {
      fs::path cache = warm_cache_dir;
      if (!warm_cache) {
        cache = scratch_root() / ("jit-cache-cold-" + std::to_string(cold_runs++));
        fs::create_directories(cache);
      }
      const SampleRun run = spawn_sample(cache, seed++);
      state.SetIterationTime(run.seconds);
      phase_counters(state, run.phases);
      if (warm_cache) continue;
      if (!warm_cache_filled) {
        fs::rename(cache, warm_cache_dir);
        warm_cache_filled = true;
      } else {
        fs::remove_all(cache);
      }
    }
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  state.counters["jit_cache_warm"] = warm_cache ? 1 : 0;
  state.SetLabel("dit-sample " + model_option.value() + " 256 " + precision_option.value() +
                 " steps=" + steps_option.value() + " vae=" + vae_option.value() +
                 (weights_option.given() ? " checkpoint" : " random-weights") +
                 (warm_cache ? " jit_cache=warm" : " jit_cache=cold"));
}

const bool registered = [] {
  benchmark::RegisterBenchmark("BM_ColdStart/jit_cache:cold", BM_ColdStart, false)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  // Five warm runs: one process's load moves by 70 ms from run to run on the H200 (whether the
  // VAE's thread ends before or after the first step), so two left the median to chance.
  benchmark::RegisterBenchmark("BM_ColdStart/jit_cache:warm", BM_ColdStart, true)
      ->Iterations(1)
      ->Repetitions(5)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
