// Fixed ground (core/). The cuBLASLt entry points, forwarded to the library opened on first use
// (core/cublaslt_library.h).
#include "core/cublaslt_library.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

namespace dit {

namespace {

struct Library {
  void* handle = nullptr;
  std::string error;
};

// The soname of the toolkit the build compiled against (libcublasLt.so.13), then the same file in
// the folder CMake found it in (DIT_CUBLASLT_DIR), for a loader path that lacks the toolkit's.
const Library& library() {
  static const Library loaded = [] {
    Library result;
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    result.handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef DIT_CUBLASLT_DIR
    if (result.handle == nullptr)
      result.handle = dlopen((DIT_CUBLASLT_DIR "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (result.handle == nullptr) {
      const char* why = dlerror();
      result.error = "cannot load " + soname + (why ? std::string(": ") + why : std::string());
    }
    return result;
  }();
  return loaded;
}

template <typename Function>
Function resolve(const char* name) {
  const Library& loaded = library();
  return loaded.handle == nullptr ? nullptr : reinterpret_cast<Function>(dlsym(loaded.handle, name));
}

}  // namespace

std::string preload_cublaslt() { return library().error; }

}  // namespace dit

// Each entry point resolves its own symbol once (a function-local static: thread-safe) and
// forwards; without the library (or the symbol), the status says the library is not initialised.
#define DIT_CUBLASLT_FORWARD(name, parameters, arguments)                            \
  extern "C" cublasStatus_t CUBLASWINAPI name parameters {                           \
    static const auto function = dit::resolve<decltype(&name)>(#name);               \
    return function == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : function arguments; \
  }

DIT_CUBLASLT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
DIT_CUBLASLT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
DIT_CUBLASLT_FORWARD(cublasLtMatmul,
                     (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                      cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                      const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                      const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
                     (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                      workspace_bytes, stream))
DIT_CUBLASLT_FORWARD(cublasLtMatmulDescCreate,
                     (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                     (desc, compute, scale))
DIT_CUBLASLT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
DIT_CUBLASLT_FORWARD(cublasLtMatmulDescSetAttribute,
                     (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const void* buffer,
                      size_t bytes),
                     (desc, attribute, buffer, bytes))
DIT_CUBLASLT_FORWARD(cublasLtMatrixLayoutCreate,
                     (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
                     (layout, type, rows, cols, ld))
DIT_CUBLASLT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
DIT_CUBLASLT_FORWARD(cublasLtMatrixLayoutSetAttribute,
                     (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute, const void* buffer,
                      size_t bytes),
                     (layout, attribute, buffer, bytes))
DIT_CUBLASLT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * preference), (preference))
DIT_CUBLASLT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t preference), (preference))
DIT_CUBLASLT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                     (cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                      const void* buffer, size_t bytes),
                     (preference, attribute, buffer, bytes))
DIT_CUBLASLT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                     (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                      cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                      cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
                      int* returned),
                     (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requested, results, returned))
DIT_CUBLASLT_FORWARD(cublasLtMatmulAlgoConfigGetAttribute,
                     (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attribute, void* buffer,
                      size_t bytes, size_t* written),
                     (algo, attribute, buffer, bytes, written))

// The version: 0 without the library (no status to return).
extern "C" size_t CUBLASWINAPI cublasLtGetVersion(void) {
  static const auto function = dit::resolve<decltype(&cublasLtGetVersion)>("cublasLtGetVersion");
  return function == nullptr ? 0 : function();
}

namespace dit {

const char* const* cublaslt_entry_points() {
  static const char* const names[] = {"cublasLtCreate",
                                      "cublasLtDestroy",
                                      "cublasLtGetVersion",
                                      "cublasLtMatmul",
                                      "cublasLtMatmulDescCreate",
                                      "cublasLtMatmulDescDestroy",
                                      "cublasLtMatmulDescSetAttribute",
                                      "cublasLtMatrixLayoutCreate",
                                      "cublasLtMatrixLayoutDestroy",
                                      "cublasLtMatrixLayoutSetAttribute",
                                      "cublasLtMatmulPreferenceCreate",
                                      "cublasLtMatmulPreferenceDestroy",
                                      "cublasLtMatmulPreferenceSetAttribute",
                                      "cublasLtMatmulAlgoGetHeuristic",
                                      "cublasLtMatmulAlgoConfigGetAttribute",
                                      nullptr};
  return names;
}

}  // namespace dit
