// GEMM plans: which of cuBLASLt's heuristic candidates each linear-layer shape takes, for one GPU
// and one cuBLASLt version. cuBLASLt's first heuristic pick is not always its fastest (at
// DiT-XL/2 batch 64 on an H200 the 4th to 6th candidates of qkv, proj and fc1 are 8-14% faster),
// and timing candidates at every start would make the choice, and so the rounding of the output,
// differ from one process to the next. A plan is measured once by `bench/gemm_plan` and read by
// the engine (model/cuda/cublaslt_gemm.cpp), so a given plan file gives the same algorithm, and the
// same bytes, in every process.
//
// File (JSON, model/gemm-plans/*.json):
//   {"format": "dit-gemm-plan/1",
//    "device": {"gpu": "NVIDIA H200", "compute_capability": "9.0", "cublaslt_version": 130100,
//               "workspace_bytes": 33554432},
//    "method": "...",                                   // how it was measured (free text)
//    "choices": [{"M": 16384, "N": 1152, "K": 1152, "operands": "f16", "output": "f32",
//                 "compute": "fp32", "epilogue": "bias", "candidate": 5,
//                 "algo": {"id": 66, "tile": 20, ...},  // the candidate's configuration, checked at use
//                 "us": 68.5, "first_us": 74.7}]}        // its time and the first candidate's
//
// Which plan the engine takes (select_gemm_plan): DIT_GEMM_PLAN=off takes none (the heuristic's
// first everywhere); DIT_GEMM_PLAN=FILE takes that file, which must be for this device;
// otherwise the file of the plan directory whose device block matches the running GPU, name,
// compute capability, cuBLASLt version and workspace, or none.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dit {

inline constexpr const char* kGemmPlanFormat = "dit-gemm-plan/1";

struct GemmPlanKey {
  int M = 0, N = 0, K = 0;
  std::string operands, output;  // f32, f16, bf16
  std::string compute;           // fp32, tf32
  std::string epilogue;          // none, bias, gelu_bias
  bool operator<(const GemmPlanKey& other) const;
  bool operator==(const GemmPlanKey& other) const;
  std::string describe() const;
};

struct GemmPlanChoice {
  GemmPlanKey key;
  int candidate = 0;                    // index into cuBLASLt's heuristic list
  std::map<std::string, int64_t> algo;  // that candidate's configuration attributes
  double us = 0.0, first_us = 0.0;      // measured: the candidate, and the heuristic's first
};

struct GemmPlanDevice {
  std::string gpu;                 // cudaDeviceProp::name
  std::string compute_capability;  // "major.minor"
  int64_t cublaslt_version = 0;    // cublasLtGetVersion()
  int64_t workspace_bytes = 0;     // the GEMM workspace the heuristic was asked with
  bool operator==(const GemmPlanDevice& other) const;
  std::string describe() const;
};

struct GemmPlan {
  std::string source;  // the file it came from (messages), empty when built in memory
  GemmPlanDevice device;
  std::string method;
  std::vector<GemmPlanChoice> choices;  // at most one per key
  const GemmPlanChoice* find(const GemmPlanKey& key) const;
};

// Throws dit::Error(invalid_file) naming `source` and the field when the text is not a plan.
GemmPlan parse_gemm_plan(const std::string& text, const std::string& source);
// Throws dit::Error(io) when the file cannot be read, (invalid_file) when malformed.
GemmPlan read_gemm_plan(const std::string& path);
std::string gemm_plan_json(const GemmPlan& plan);  // choices sorted by key, two-space indent
// Writes through a temporary file in the same folder and a rename: never half a file.
void write_gemm_plan(const GemmPlan& plan, const std::string& path);

// The plan for `device` (see the header comment): `setting` is DIT_GEMM_PLAN's value (empty
// when unset), `directory` the plan directory. Throws dit::Error(invalid_argument) when the
// setting names a file for another device, or when two files of the directory match; a
// malformed file, named or found, is an error too.
std::optional<GemmPlan> select_gemm_plan(const GemmPlanDevice& device, const std::string& setting,
                                         const std::string& directory);

}  // namespace dit
