// Fixed ground (core/). cuBLASLt loaded when first used, not at process start. Linked directly,
// libcublasLt's static initialisation ran before main in every process that uses the engine:
// about 70 ms of CPU time and 25,000 page faults on a 2-core AMD EPYC (a program that only links
// it and returns), inside the "process" phase of the model load (53-76 ms on the H200). With a
// CUDA build, dit::core defines the cuBLASLt entry points the project calls
// (core/cublaslt_library.cpp), each forwarding to the library, which is opened (dlopen) on the
// first call or by preload_cublaslt.
#pragma once

#include <string>

namespace dit {

// Opens libcublasLt now (its static initialisation runs on the calling thread): called on a
// helper thread while the device context is made, it takes that work off the critical path.
// Returns "" when the library is loaded, else why not (also what every entry point then returns
// CUBLAS_STATUS_NOT_INITIALIZED for). Safe from any thread; the library is opened once.
std::string preload_cublaslt();

// The cuBLASLt entry points dit::core forwards, by name (for the test that resolves each).
const char* const* cublaslt_entry_points();

}  // namespace dit
