// Fixed ground (core/). A memory-mapped safetensors reader and a writer. The reader validates everything before
// handing out a byte: header length, JSON, dtypes, shapes, offsets (in range, no overlaps, no
// holes, nothing past the last tensor) and sizes; every problem is a dit::Error naming the file
// and the tensor or field.
//
// Format (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of a JSON
// object {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data; offsets are relative to the first byte after the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/files.h"
#include "core/half.h"
#include "core/tensor.h"

namespace dit {

enum class DType { F64, F32, F16, BF16, I64 };

const char* dtype_name(DType dtype);  // "F32"
size_t dtype_size(DType dtype);       // bytes per element

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;  // inside the mapping; valid while the file lives
  int64_t numel() const { return Tensor::count(shape); }
};

class SafetensorsFile {
 public:
  // Maps and validates `path`. Throws dit::Error (io or invalid_file).
  static SafetensorsFile open(const std::string& path);
  // Validates an in-memory image (the fuzz target and tests use this). The buffer is copied.
  static SafetensorsFile from_bytes(std::span<const std::byte> bytes, std::string label = "<memory>");

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws dit::Error naming the missing tensor.
  const TensorView& at(const std::string& name) const;
  // Converts any floating dtype (and I64) to float32; throws when `expected_shape` is given
  // and differs.
  Tensor to_float(const std::string& name, const std::vector<int64_t>& expected_shape = {}) const;
  // As to_float, and refuses (invalid_file) a tensor holding a NaN or an infinity after the
  // conversion (an F64 beyond float32's range included), naming it and its first such element.
  // The test shares the conversion's pass: about as fast as to_float.
  Tensor to_finite_float(const std::string& name, const std::vector<int64_t>& expected_shape = {}) const;
  // Elements [first, first + count) of tensor `name` (flat, in storage order) as float32 into
  // `out`, refused as to_finite_float refuses, the element counted from the tensor's start: a
  // piece of a tensor for loads that convert a checkpoint in chunks straight from the mapping.
  // A range past the tensor's end is invalid_argument. Any thread; no allocation.
  void to_finite_float_range(const std::string& name, size_t first, size_t count, float* out) const;
  // I64 as is; a floating tensor only when every value is an integer that fits in int64.
  std::vector<int64_t> to_int64(const std::string& name) const;
  // Any dtype; I64 values beyond 2^53 round to the nearest double.
  std::vector<double> to_double(const std::string& name) const;

 private:
  // The tensor, refused (invalid_file) when expected_shape is given and differs.
  const TensorView& shaped(const std::string& name, const std::vector<int64_t>& expected_shape) const;
  struct Storage;
  void parse_header();

  std::shared_ptr<Storage> storage_;
  std::string path_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorView> tensors_;
};

// Writes float32 tensors (and optional string metadata) to `path` atomically: a temporary file
// in the same directory, fsync, rename. Values are stored as `dtype` (F64, F32, F16 or BF16),
// keys sorted, the data section 8-byte aligned, tensors packed in key order. Throws dit::Error
// on failure, leaving `path` untouched. `durability` as in core/files.h (the fsync only with
// Durability::synced).
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {}, DType dtype = DType::F32,
                       Durability durability = Durability::synced);

// A tensor in its stored form: numel(shape) * dtype_size(dtype) little-endian bytes.
struct TensorBytes {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

// As write_safetensors, for tensors already encoded in any dtype (I64 included).
void write_safetensors_bytes(const std::string& path, const std::map<std::string, TensorBytes>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

}  // namespace dit
