#include "tests/kernels/harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#if DIT_CUDA_CASES
#include <cuda_runtime.h>

#include "core/error.h"
#include "core/half.h"
#include "kernels/attention.h"
#endif

namespace dit::test {

std::string dims_name(std::initializer_list<std::pair<const char*, int64_t>> dims) {
  std::string name;
  for (const auto& [key, value] : dims) {
    if (!name.empty()) name += '_';
    name.append(key).append(std::to_string(value));
  }
  return name;
}

std::vector<float> poisoned(size_t n) {
  std::vector<float> values(n);
  poison(values);
  return values;
}

std::vector<double> to_double(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

void expect_close(const std::string& name, const std::vector<float>& out, size_t never_written,
                  const std::vector<double>& ref, double bound, uint64_t seed) {
  const Comparison c = compare(out, ref);
  std::printf("  %-48s relative error %.3e (bound %.1e), max abs %.3e, seed %llu\n", name.c_str(), c.relative_error,
              bound, c.max_abs_error, static_cast<unsigned long long>(seed));
  EXPECT_EQ(never_written, 0u) << name << ": " << never_written << " of " << out.size()
                               << " outputs never written (seed " << seed << ")";
  EXPECT_EQ(c.non_finite, 0u) << name << " (seed " << seed << "): " << c.describe(out, ref);
  if (!(c.relative_error <= bound)) {
    double squares = 0;
    for (double r : ref) squares += r * r;
    const double rms = ref.empty() ? 0 : std::sqrt(squares / static_cast<double>(ref.size()));
    ADD_FAILURE() << name << " (seed " << seed << "): relative error " << c.relative_error << " over the bound "
                  << bound << "; " << c.describe(out, ref, 5, bound * rms);
  }
}

#if DIT_CUDA_CASES

using cuda::DeviceDtype;

namespace {

constexpr uint16_t kPoison16 = 0xFFFF;  // all ones: a NaN in fp16 and bf16 that no kernel writes

uint16_t encode16(float value, DeviceDtype dtype) {
  return dtype == DeviceDtype::f16 ? float_to_f16_bits(value) : float_to_bf16_bits(value);
}

float decode16(uint16_t bits, DeviceDtype dtype) {
  return dtype == DeviceDtype::f16 ? f16_bits_to_float(bits) : bf16_bits_to_float(bits);
}

}  // namespace

float round_to(float value, DeviceDtype dtype) {
  return dtype == DeviceDtype::f32 ? value : decode16(encode16(value, dtype), dtype);
}

std::vector<float> round_to(const std::vector<float>& values, DeviceDtype dtype) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = round_to(values[i], dtype);
  return out;
}

float rounding_step(float value, DeviceDtype dtype) {
  const float magnitude = std::fabs(round_to(value, dtype));
  if (dtype == DeviceDtype::f32) return std::nextafter(magnitude, INFINITY) - magnitude;
  const uint16_t bits = encode16(magnitude, dtype);
  return decode16(static_cast<uint16_t>(bits + 1), dtype) - magnitude;
}

const char* dtype_suffix(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return "fp32";
    case DeviceDtype::f16: return "fp16";
    case DeviceDtype::bf16: return "bf16";
  }
  return "?";
}

std::vector<float> rounded_normal(size_t n, uint64_t seed, DeviceDtype dtype, float std, float shift) {
  std::vector<float> values = random_normal(n, seed, std);
  for (float& v : values) v = round_to(v + shift, dtype);
  return values;
}

double output_bound(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return kF32Bound;
    case DeviceDtype::f16: return kF16Bound;
    case DeviceDtype::bf16: return kBF16Bound;
  }
  return 0;
}

double vae_output_bound(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f16: return 2e-3;
    case DeviceDtype::bf16: return 1.5e-2;
    default: return 2e-6;
  }
}

DeviceTensor::DeviceTensor(size_t count, DeviceDtype dtype) : count_(count), dtype_(dtype) {
  DIT_CUDA_CHECK(cudaMalloc(&data_, bytes() ? bytes() : 1));
}

DeviceTensor::DeviceTensor(const std::vector<float>& values, DeviceDtype dtype) : DeviceTensor(values.size(), dtype) {
  upload(values);
}

DeviceTensor::~DeviceTensor() { cudaFree(data_); }

void DeviceTensor::upload(const std::vector<float>& values) {
  if (values.size() != count_) throw Error(ErrorKind::invalid_argument, "DeviceTensor::upload: size mismatch");
  if (dtype_ == DeviceDtype::f32) {
    DIT_CUDA_CHECK(cudaMemcpy(data_, values.data(), bytes(), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> raw(count_);
  for (size_t i = 0; i < count_; ++i) raw[i] = encode16(values[i], dtype_);
  DIT_CUDA_CHECK(cudaMemcpy(data_, raw.data(), bytes(), cudaMemcpyHostToDevice));
}

void DeviceTensor::poison() {
  if (dtype_ == DeviceDtype::f32) {
    const std::vector<float> values = poisoned(count_);
    DIT_CUDA_CHECK(cudaMemcpy(data_, values.data(), bytes(), cudaMemcpyHostToDevice));
  } else {
    DIT_CUDA_CHECK(cudaMemset(data_, 0xFF, bytes()));
  }
}

std::vector<float> DeviceTensor::download(size_t* never_written) const {
  DIT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(count_);
  size_t untouched = 0;
  if (dtype_ == DeviceDtype::f32) {
    DIT_CUDA_CHECK(cudaMemcpy(out.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    untouched = count_poisoned(out);
  } else {
    std::vector<uint16_t> raw(count_);
    DIT_CUDA_CHECK(cudaMemcpy(raw.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count_; ++i) {
      untouched += raw[i] == kPoison16;
      out[i] = decode16(raw[i], dtype_);
    }
  }
  if (never_written) *never_written = untouched;
  return out;
}

std::string AttentionCase::name() const {
  return dims_name({{"b", B}, {"h", H}, {"n", N}, {"d", hd}}) + "_" + dtype_suffix(dtype);
}

AttentionRun run_naive_attention(const AttentionCase& k, uint64_t seed) {
  AttentionRun run;
  const size_t qkv_size = static_cast<size_t>(k.B) * k.N * 3 * k.H * k.hd;
  run.qkv = round_to(random_normal(qkv_size, seed, 1.5f), k.dtype);
  run.reference.resize(static_cast<size_t>(k.B) * k.N * k.H * k.hd);
  cpu::attention(run.qkv.data(), run.reference.data(), k.B, k.N, k.H, k.hd);
  DeviceTensor dqkv(run.qkv, k.dtype), dout(run.reference.size(), k.dtype);
  dout.poison();
  cuda::attention_naive(dqkv.data(), dout.data(), k.dtype, k.B, k.N, k.H, k.hd, nullptr);
  run.naive = dout.download(&run.naive_unwritten);
  return run;
}

#endif  // DIT_CUDA_CASES

}  // namespace dit::test
