// dit-ar profile: runs the benchmark engineer's profiling tool (bench/dit_profile in the build
// directory: per-phase times from NVTX ranges and CUDA events) on one case, and, with --ncu,
// the same under Nsight Compute with `--clock-control none` (clocks as the benchmarks see them).
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/environment_capture.h"
#include "core/files.h"
#include "driver/process.h"
#include "driver/session.h"
#include "driver/subcommands.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

constexpr const char* kProfileTool = "bench/dit_profile";  // relative to the build directory

struct ProfileOptions {
  std::string build_dir;
  std::string output;
  bool ncu = false;
  int ncu_launch_count = 200;  // kernels ncu profiles: a whole 250-step image launches many thousands
  int timeout_seconds = 1800;
  std::vector<std::string> tool_arguments;
};

int run_profile(const CommonOptions& options, const ProfileOptions& profile) {
  Config config = load_session_config(options);
  StateDirectory state(config.state_dir);
  std::string lane_name =
      state.has_session() ? state.load_session().value("lane", config.default_lane) : config.default_lane;
  const Lane& lane = config.lane(lane_name);
  // By default the best commit's build in the driver's own tree (the checkout is never built by
  // the driver), or the checkout's build outside a session.
  fs::path build_dir = profile.build_dir;
  if (build_dir.empty()) {
    const fs::path best = state.best_source_dir() / lane.build_dir;
    build_dir = fs::exists(best / kProfileTool) ? best : config.source_dir / lane.build_dir;
  }
  fs::path tool = build_dir / kProfileTool;
  if (!fs::exists(tool)) {
    // dit_profile times the CUDA backend: a build configured without it has no such target.
    const fs::path cache = build_dir / "CMakeCache.txt";
    if (fs::exists(cache) && read_text_file(cache).find("DIT_WITH_CUDA:BOOL=ON") == std::string::npos)
      refuse("the profiling tool is built with the CUDA backend only, and " + build_dir.string() + " (lane " +
                 lane.name + ") is built without it",
             "profile a GPU lane's build (--build-dir, or a session on such a lane) on a machine with a GPU");
    refuse("the profiling tool " + tool.string() + " does not exist",
           "build it first: cmake --build --preset " + lane.build_preset + " --target dit_profile");
  }
  std::string stamp = utc_timestamp();
  for (char& character : stamp) {
    if (character == ':') character = '-';
  }
  fs::path output = profile.output.empty() ? config.state_dir / "profiles" / stamp : fs::path(profile.output);
  fs::create_directories(output);

  ProcessOptions process;
  process.working_dir = config.source_dir;
  process.environment = {{"DIT_OUTPUT_DIR", output.string()}, {"DIT_LANE", lane.name}};
  process.log_path = output / "profile.log";
  process.timeout = std::chrono::seconds(profile.timeout_seconds);
  if (profile.ncu) {
    fs::path ncu = "ncu";
    if (fs::exists("/usr/local/cuda/bin/ncu")) ncu = "/usr/local/cuda/bin/ncu";
    process.argv = {ncu.string(),
                    "--clock-control",
                    "none",
                    "--nvtx",
                    "--target-processes",
                    "all",
                    "--launch-count",
                    std::to_string(profile.ncu_launch_count),
                    "--export",
                    (output / "ncu-report").string(),
                    "--force-overwrite",
                    tool.string()};
  } else {
    process.argv = {tool.string()};
  }
  for (const auto& argument : profile.tool_arguments) process.argv.push_back(argument);
  std::cout << "dit-ar profile: " << tool.string() << (profile.ncu ? " under ncu" : "") << " on " << gpu_description()
            << "\n  output " << output.string() << "\n";
  ProcessResult result = run_process(process);
  if (!result.started && profile.ncu) {
    refuse("ncu (Nsight Compute) could not be started: " + result.error, "install Nsight Compute or run without --ncu");
  }
  if (!options.json && fs::exists(process.log_path)) std::cout << read_text_file(process.log_path);
  print_result_block(std::cout,
                     {{"status", result.succeeded() ? "OK" : "FAILED"},
                      {"tool", tool.string()},
                      {"result", result.describe()},
                      {"gpu", gpu_description()},
                      {"output", output.string()},
                      {"log", process.log_path.string()}},
                     options.json);
  // A tool that fails is the build's crash (4), never a decision's discard.
  return result.succeeded() ? kExitKeep : kExitCrash;
}

}  // namespace

void add_profile_command(CLI::App& app, CommonOptions& options) {
  auto profile = std::make_shared<ProfileOptions>();
  CLI::App* command = app.add_subcommand(
      "profile",
      "Profile one case: runs <build>/bench/dit_profile (per-phase times from NVTX ranges and CUDA events); with "
      "--ncu, under Nsight Compute with --clock-control none. Arguments after -- go to dit_profile.");
  command->add_option("--build-dir", profile->build_dir,
                      "Build directory (default: the best commit's build in the state directory, best/src/<build_dir>, "
                      "else the lane's build_dir in the checkout)");
  command->add_option("--output", profile->output, "Output folder (default: <state>/profiles/<timestamp>)");
  command->add_flag("--ncu", profile->ncu, "Also collect an Nsight Compute report (ncu --clock-control none)");
  command->add_option("--ncu-launch-count", profile->ncu_launch_count, "How many kernel launches ncu profiles")
      ->capture_default_str();
  command->add_option("--timeout", profile->timeout_seconds, "Seconds before the profiler's process group is killed")
      ->capture_default_str();
  command->add_option("tool_arguments", profile->tool_arguments, "Arguments for dit_profile (after --)");
  add_common_options(*command, options, true);
  command->callback([&options, profile] { finish_with(run_profile(options, *profile)); });
}

}  // namespace dit::ar
