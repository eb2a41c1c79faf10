// The harness of the kernel tests (STYLE.md rule 3): case names from parameters, fresh random
// inputs (tests/support/test_support.h; DIT_TEST_SEED replays a failure), poisoned outputs, the
// normwise check ||out - ref|| / ||ref|| <= bound that prints the first mismatches and the worst
// one, and, for the CUDA cases, device buffers.
//
// Each tests/kernels/<op>_test.cpp is compiled twice (tests/kernels/CMakeLists.txt): into
// kernels_test with DIT_KERNEL_TESTS_CUDA=0, which runs its `#if DIT_CPU_CASES` part (the CPU
// reference against a float64 re-derivation), and into kernels_cuda_test with
// DIT_KERNEL_TESTS_CUDA=1, which runs its `#if DIT_CUDA_CASES` part (the kernels against the CPU
// reference) and skips with 77 without a GPU (tests/support/gpu_test_main.cpp).
#pragma once

#if !defined(DIT_KERNEL_TESTS_CUDA)
#error "DIT_KERNEL_TESTS_CUDA comes from tests/kernels/CMakeLists.txt: 0 in kernels_test, 1 in kernels_cuda_test"
#endif
#define DIT_CPU_CASES (!DIT_KERNEL_TESTS_CUDA)
#define DIT_CUDA_CASES (DIT_KERNEL_TESTS_CUDA)

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_support.h"

#if DIT_CUDA_CASES
#include "kernels/cuda_check.h"
#include "kernels/cuda_types.h"
#endif

namespace dit::test {

// {{"b", 2}, {"h", 16}, {"n", 256}} -> "b2_h16_n256": a case's name from its parameters.
std::string dims_name(std::initializer_list<std::pair<const char*, int64_t>> dims);

// n floats, each poison_value(): an output before the op under test writes it.
std::vector<float> poisoned(size_t n);

std::vector<double> to_double(const std::vector<float>& values);

// The check every case ends with. Prints the case's normwise error, bound and seed; fails when
// `never_written` outputs were never written, an output is not finite, or ||out - ref|| / ||ref||
// exceeds `bound`, listing the first elements off by more than bound * rms(ref) and the worst.
void expect_close(const std::string& name, const std::vector<float>& out, size_t never_written,
                  const std::vector<double>& ref, double bound, uint64_t seed);

// One float32 rounding of each element of a float64 result (about 6e-8 relative), with room.
constexpr double kElementwiseF32Bound = 1e-6;

#if DIT_CUDA_CASES

// What a value becomes stored in `dtype` (the input a kernel sees, so the reference sees it too).
float round_to(float value, cuda::DeviceDtype dtype);
std::vector<float> round_to(const std::vector<float>& values, cuda::DeviceDtype dtype);

const char* dtype_suffix(cuda::DeviceDtype dtype);  // "fp32", "fp16", "bf16"

// The gap between |value| (stored in `dtype`) and the next larger value `dtype` holds: one
// rounding step, by which a kernel's result may differ from a float64 reference's rounding.
float rounding_step(float value, cuda::DeviceDtype dtype);

// n values from N(shift, std^2), each rounded to `dtype`.
std::vector<float> rounded_normal(size_t n, uint64_t seed, cuda::DeviceDtype dtype, float std, float shift = 0);

// The DiT kernels' normwise bounds by output dtype: float32 storage with float32 accumulation
// against a float64 reference; one fp16 rounding is 4.9e-4 relative, one bf16 rounding 3.9e-3.
constexpr double kF32Bound = 1e-5;
constexpr double kF16Bound = 2e-3;
constexpr double kBF16Bound = 1e-2;
double output_bound(cuda::DeviceDtype dtype);
// The VAE kernels' (short float32 sums): the output rounding dominates, about 2^-11 (fp16) and
// 2^-8 (bf16) relative per element.
double vae_output_bound(cuda::DeviceDtype dtype);

// A device buffer of `count` elements of `dtype`, filled from and read back as float values.
// poison() fills it with a NaN no kernel writes (float32: poison_value(); 16-bit: 0xFFFF), and
// download() counts the elements still holding it.
class DeviceTensor {
 public:
  explicit DeviceTensor(size_t count, cuda::DeviceDtype dtype = cuda::DeviceDtype::f32);
  explicit DeviceTensor(const std::vector<float>& values, cuda::DeviceDtype dtype = cuda::DeviceDtype::f32);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void* data() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * cuda::dtype_bytes(dtype_); }

  void upload(const std::vector<float>& values);
  void poison();
  // Synchronises the device first, so that a kernel's fault is reported here, by name.
  std::vector<float> download(size_t* never_written = nullptr) const;

 private:
  void* data_ = nullptr;
  size_t count_;
  cuda::DeviceDtype dtype_;
};

// A device copy of a plain array (labels, timesteps, seeds, step tables).
// An attention case on the device (kernels/attention.h's layout), and what each attention test
// starts from: qkv drawn with std 1.5 (softmax rows far from uniform, so a wrong key or value
// shows) and rounded to the dtype, the CPU reference of it, and the naive kernel's output for the
// same device inputs (`naive_unwritten`: its outputs never written).
struct AttentionCase {
  int B, H, N, hd;
  cuda::DeviceDtype dtype;
  std::string name() const;
};
struct AttentionRun {
  std::vector<float> qkv;
  std::vector<float> reference;
  std::vector<float> naive;
  size_t naive_unwritten = 0;
};
AttentionRun run_naive_attention(const AttentionCase& k, uint64_t seed);

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& values) {
    DIT_CUDA_CHECK(cudaMalloc(&data_, values.size() * sizeof(T) + 1));
    DIT_CUDA_CHECK(cudaMemcpy(data_, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
};

#endif  // DIT_CUDA_CASES

}  // namespace dit::test
