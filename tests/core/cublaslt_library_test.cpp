// core/cublaslt_library.h: the process starts without libcublasLt, preload opens it once, and the
// forwarded entry points reach the library (its version, and descriptors that need no GPU); every
// name the forwarder resolves is one the library exports.
#include <cublasLt.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/cublaslt_library.h"

namespace dit {
namespace {

const std::string kSoname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

bool library_loaded() {
  void* handle = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

TEST(CublasLtLibrary, OpensOnFirstUseAndForwards) {
  // Not loaded at start: nothing links it. (The only test in this binary: no other one opened it.)
  EXPECT_FALSE(library_loaded()) << kSoname << " was loaded before its first use";
  std::vector<std::thread> threads;  // opened once, whichever thread comes first
  std::vector<std::string> results(4);
  for (size_t i = 0; i < results.size(); ++i) threads.emplace_back([&results, i] { results[i] = preload_cublaslt(); });
  for (std::thread& thread : threads) thread.join();
  for (const std::string& result : results) EXPECT_EQ(result, "");
  EXPECT_TRUE(library_loaded());

  EXPECT_EQ(cublasLtGetVersion() / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16F, 1152, 512, 1152), CUBLAS_STATUS_SUCCESS);
  const cublasLtOrder_t order = CUBLASLT_ORDER_COL;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, 1),
            CUBLAS_STATUS_INVALID_VALUE);  // the library's own check, reached through the forwarder
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const cublasOperation_t transpose = CUBLAS_OP_T;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t preference = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&preference), CUBLAS_STATUS_SUCCESS);
  const size_t workspace = 1 << 20;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                 sizeof workspace),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(preference), CUBLAS_STATUS_SUCCESS);

  // Every forwarded name is exported by the library (a misspelt one would forward to nothing).
  void* library = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr);
  int names = 0;
  for (const char* const* name = cublaslt_entry_points(); *name != nullptr; ++name, ++names)
    EXPECT_NE(dlsym(library, *name), nullptr) << *name;
  dlclose(library);
  EXPECT_EQ(names, 15);
}

}  // namespace
}  // namespace dit
