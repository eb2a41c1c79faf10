// gemm_plan: measures a GEMM plan (model/gemm_plan.h) for the running GPU and writes it. It
// builds the CUDA DiT (seeded random weights unless --weights is given: timing does not depend
// on values), turns on the engine's GEMM tuning (cuda::gemm_tuning), and runs one forward pass
// per --cases entry and, with --image-steps, one guided image at 256: every GEMM shape those
// make is tuned as it is first planned, on its own buffers and stream. The plan keeps a
// candidate other than the heuristic's first only where it is at least --margin faster.
//
//   gemm_plan [--model DiT-XL/2] [--precision fp16] [--cases 256:2,256:64,512:2]
//             [--image-steps 250] [--candidates 16] [--margin 0.03] [--out FILE]
//
// --out defaults to model/gemm-plans/<gpu>-cublaslt-<version>.json in the source tree, the
// directory the engine looks through. Exit codes: 0 written, 2 bad arguments or no GPU, 1 a
// failure while measuring (nothing written).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/engine/engine_setup.h"
#include "bench/support/bench_support.h"
#include "bench/support/gpu_support.h"
#include "bench/support/tool_arguments.h"
#include "model/cuda/cublaslt_gemm.h"
#include "core/error.h"
#include "model/gemm_plan.h"

#ifndef DIT_GEMM_PLAN_SOURCE_DIR
#define DIT_GEMM_PLAN_SOURCE_DIR "model/gemm-plans"
#endif

namespace {

std::vector<std::pair<int, int>> parse_cases(const std::string& text) {
  std::vector<std::pair<int, int>> cases;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const size_t colon = item.find(':');
    int image = 0, batch = 0;
    try {
      if (colon == std::string::npos) throw std::invalid_argument(item);
      size_t used = 0;
      image = std::stoi(item.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument(item);
      batch = std::stoi(item.substr(colon + 1), &used);
      if (used != item.size() - colon - 1) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw dit::Error(dit::ErrorKind::invalid_argument, "--cases: '" + item + "' is not IMAGE:BATCH");
    }
    if (image <= 0 || image % 8 != 0 || batch <= 0)
      throw dit::Error(dit::ErrorKind::invalid_argument,
                       "--cases: '" + item + "' needs an image size divisible by 8 and a positive batch");
    cases.emplace_back(image, batch);
    start = end + 1;
  }
  return cases;
}

std::string file_name_for(const dit::GemmPlanDevice& device) {
  std::string slug;
  for (char c : device.gpu) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug + "-cublaslt-" + std::to_string(device.cublaslt_version) + ".json";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measures a GEMM plan (which cuBLASLt candidate each linear layer takes) for this GPU"};
  dit::bench::EngineChoice choice;
  std::string precision = "fp16", cases_text = "256:2,256:64,512:2", out, weights_sha256;
  int image_steps = 250, candidates = 16;
  double margin = 0.03;
  app.add_option("--model", choice.model, "DiT configuration");
  app.add_option("--weights", choice.weights_path, "safetensors checkpoint (default: seeded random weights)");
  app.add_option("--weights-sha256", weights_sha256,
                 "the SHA-256 --weights must have (64 hexadecimal digits): another file is refused before loading");
  app.add_option("--precision", precision, "fp32, tf32, fp16 or bf16");
  app.add_option("--cases", cases_text, "forward passes IMAGE:BATCH, comma-separated");
  app.add_option("--image-steps", image_steps, "steps of one guided DDPM image at 256 (0: none)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--candidates", candidates, "heuristic candidates timed per shape")->check(CLI::Range(1, 64));
  app.add_option("--margin", margin, "the least gain (fraction) that leaves the first candidate")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--out", out, "plan file (default: model/gemm-plans/<gpu>-cublaslt-<version>.json)");
  if (const auto code = dit::bench::parse_tool_arguments(app, argc, argv)) return *code;

  std::vector<std::pair<int, int>> cases;
  try {
    choice.precision = dit::parse_precision(precision);
    cases = parse_cases(cases_text);
    if (!weights_sha256.empty() && choice.weights_path.empty())
      throw dit::Error(dit::ErrorKind::invalid_argument, "--weights-sha256 needs --weights (a checkpoint to check)");
    if (!choice.weights_path.empty()) dit::bench::checked_weights_sha256(choice.weights_path, weights_sha256);
  } catch (const dit::Error& error) {
    std::fprintf(stderr, "gemm_plan: %s\n", error.what());
    return 2;
  } catch (const std::invalid_argument& error) {  // checked_weights_sha256: a missing or other file
    std::fprintf(stderr, "gemm_plan: %s\n", error.what());
    return 2;
  }
  if (!dit::bench::first_gpu_name()) {
    std::fprintf(stderr, "gemm_plan: no GPU: a plan is measured on the GPU it is for\n");
    return 2;
  }
  try {
    dit::cuda::GemmTuning& tuning = dit::cuda::gemm_tuning();
    tuning.candidates = candidates;
    tuning.margin = margin;
    dit::bench::ModelCache models(choice);
    if (image_steps > 0) {
      dit::SampleRequest request;
      request.class_labels = {207};
      request.seeds = {0};
      request.steps = image_steps;
      models.get(256).sample(request);
      std::printf("image 256, %d steps: %zu shapes tuned so far\n", image_steps, tuning.choices.size());
    }
    for (const auto& [image, batch] : cases) {
      dit::DitModel& model = models.get(image);
      const dit::bench::ForwardInputs inputs = dit::bench::random_forward_inputs(model.config(), batch, 1);
      model.forward(inputs.x, inputs.t, inputs.y);
      std::printf("forward %d batch %d: %zu shapes tuned so far\n", image, batch, tuning.choices.size());
    }
    tuning.candidates = 0;

    dit::GemmPlan plan;
    plan.device = dit::cuda::GemmRunner::current_device();
    plan.method = "bench/gemm_plan: " + choice.model + " " + precision + ", cases " + cases_text + ", image steps " +
                  std::to_string(image_steps) + "; the first " + std::to_string(candidates) +
                  " heuristic candidates per shape, each as 10 calls in one CUDA Graph on the call's own "
                  "buffers (hot L2), the best of 5 launches after a warm-up; another than the first only when at "
                  "least " +
                  std::to_string(static_cast<int>(margin * 100.0 + 0.5)) + "% faster";
    for (const dit::GemmPlanChoice& c : tuning.choices) {
      if (plan.find(c.key)) continue;  // a shape planned again by a second model
      plan.choices.push_back(c);
    }
    if (out.empty()) std::filesystem::create_directories(DIT_GEMM_PLAN_SOURCE_DIR);
    const std::string path =
        out.empty() ? std::string(DIT_GEMM_PLAN_SOURCE_DIR) + "/" + file_name_for(plan.device) : out;
    dit::write_gemm_plan(plan, path);
    int moved = 0;
    for (const dit::GemmPlanChoice& c : plan.choices) {
      moved += c.candidate != 0;
      std::printf("%-58s candidate %2d  %9.2f us  (first %9.2f us)\n", c.key.describe().c_str(), c.candidate, c.us,
                  c.first_us);
    }
    std::printf("wrote %s: %zu shapes, %d off the heuristic's first, for %s\n", path.c_str(), plan.choices.size(),
                moved, plan.device.describe().c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gemm_plan: %s\n", error.what());
    return 1;
  }
}
