// Fixed ground (core/).
#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "core/half.h"

namespace dit {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian and is read in place");

namespace {

// The same cap as huggingface/safetensors: a larger header is refused before it is parsed.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kHeaderLengthBytes = 8;
constexpr size_t kDataAlignment = 8;

using Json = nlohmann::json;

std::string in_quotes(const std::string& text) { return "'" + text + "'"; }

// Parser messages quote raw input; keep them printable.
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) c = '?';
  }
  return out;
}

std::string json_type(const Json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number_float()) return "a fractional number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  if (value.is_boolean()) return "a boolean";
  return "null";
}

std::string errno_text() { return std::strerror(errno); }

// A JSON integer in [0, INT64_MAX], or nothing.
bool as_non_negative_int64(const Json& value, int64_t& out) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(v);
    return true;
  }
  if (value.is_number_integer()) {
    out = value.get<int64_t>();
    return out >= 0;
  }
  return false;
}

template <typename Raw>
Raw load(const std::byte* at) {
  Raw raw;
  std::memcpy(&raw, at, sizeof(Raw));
  return raw;
}

// Applies `convert` to the stored values [first, first + n) of `view` (read unaligned) and
// writes them into `out`.
template <typename Out, typename Convert>
void decode(const TensorView& view, size_t first, size_t n, Out* out, Convert convert) {
  const std::byte* in = view.bytes.data() + first * dtype_size(view.dtype);
  switch (view.dtype) {
    case DType::F64:
      for (size_t i = 0; i < n; ++i) out[i] = convert(load<double>(in + 8 * i));
      return;
    case DType::F32:
      for (size_t i = 0; i < n; ++i) out[i] = convert(load<float>(in + 4 * i));
      return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) out[i] = convert(f16_bits_to_float(load<uint16_t>(in + 2 * i)));
      return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) out[i] = convert(bf16_bits_to_float(load<uint16_t>(in + 2 * i)));
      return;
    case DType::I64:
      for (size_t i = 0; i < n; ++i) out[i] = convert(load<int64_t>(in + 8 * i));
      return;
  }
}

template <typename Out, typename Convert>
void decode(const TensorView& view, Out* out, Convert convert) {
  decode(view, 0, static_cast<size_t>(view.numel()), out, convert);
}

bool parse_dtype(const std::string& name, DType& out) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64}) {
    if (name == dtype_name(dtype)) {
      out = dtype;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F64: return "F64";
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64: return 8;
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64: return 8;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

struct SafetensorsFile::Storage {
  const std::byte* data = nullptr;
  size_t size = 0;
  void* mapping = nullptr;  // set when the bytes are a read-only file mapping
  std::vector<std::byte> owned;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (mapping != nullptr) munmap(mapping, size);
  }
};

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const auto io_error = [&](const std::string& what) {
    return Error(ErrorKind::io, "safetensors " + in_quotes(path) + ": " + what);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error("cannot open: " + errno_text());
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    const std::string reason = errno_text();
    ::close(fd);
    throw io_error("cannot stat: " + reason);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw io_error("not a regular file");
  }
  auto storage = std::make_shared<Storage>();
  storage->size = static_cast<size_t>(info.st_size);
  if (storage->size < kHeaderLengthBytes) {
    ::close(fd);
    throw Error(ErrorKind::invalid_file, "safetensors " + in_quotes(path) + ": file is " +
                                             std::to_string(storage->size) +
                                             " bytes, shorter than the 8-byte header length");
  }
  void* mapping = mmap(nullptr, storage->size, PROT_READ, MAP_PRIVATE, fd, 0);
  const std::string map_reason = mapping == MAP_FAILED ? errno_text() : std::string();
  ::close(fd);  // the mapping keeps the file alive
  if (mapping == MAP_FAILED) throw io_error("cannot map " + std::to_string(storage->size) + " bytes: " + map_reason);
  storage->mapping = mapping;
  storage->data = static_cast<const std::byte*>(mapping);

  SafetensorsFile file;
  file.storage_ = std::move(storage);
  file.path_ = path;
  file.parse_header();
  return file;
}

SafetensorsFile SafetensorsFile::from_bytes(std::span<const std::byte> bytes, std::string label) {
  auto storage = std::make_shared<Storage>();
  storage->owned.assign(bytes.begin(), bytes.end());
  storage->data = storage->owned.data();
  storage->size = storage->owned.size();
  SafetensorsFile file;
  file.storage_ = std::move(storage);
  file.path_ = std::move(label);
  file.parse_header();
  return file;
}

void SafetensorsFile::parse_header() {
  const std::string where = "safetensors " + in_quotes(path_) + ": ";
  const auto invalid = [&](const std::string& what) { return Error(ErrorKind::invalid_file, where + what); };
  const std::byte* base = storage_->data;
  const size_t size = storage_->size;

  if (size < kHeaderLengthBytes) {
    throw invalid("file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  }
  const auto header_length = load<uint64_t>(base);
  if (header_length > kMaxHeaderBytes) {
    throw invalid("header length " + std::to_string(header_length) + " exceeds the limit of " +
                  std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_length > size - kHeaderLengthBytes) {
    throw invalid("header length " + std::to_string(header_length) + " runs past the end of the file (" +
                  std::to_string(size) + " bytes)");
  }
  const auto* header_begin = reinterpret_cast<const char*>(base + kHeaderLengthBytes);
  const auto* header_end = header_begin + header_length;

  // Later duplicates would silently replace earlier keys; refuse them instead.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const Json::parser_callback_t reject_duplicates = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == Json::parse_event_t::key && duplicate.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(header_begin, header_end, reject_duplicates);
  } catch (const Json::exception& e) {
    throw invalid("header is not valid JSON: " + printable(e.what()));
  }
  if (!duplicate.empty()) throw invalid("header repeats the key " + in_quotes(printable(duplicate)));
  if (!header.is_object()) throw invalid("header is " + json_type(header) + ", not a JSON object");

  const size_t data_size = size - kHeaderLengthBytes - static_cast<size_t>(header_length);
  const std::byte* data = base + kHeaderLengthBytes + header_length;

  struct Extent {
    int64_t begin, end;
    const std::string* name;
  };
  std::vector<Extent> extents;
  std::map<std::string, TensorView> tensors;
  std::map<std::string, std::string> metadata;

  for (const auto& item : header.items()) {
    const std::string& name = item.key();
    const Json& entry = item.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) throw invalid("__metadata__ is " + json_type(entry) + ", not an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          throw invalid("__metadata__ must map strings to strings, but " + in_quotes(key) + " is " + json_type(value));
        }
        metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    const std::string tensor_where = "tensor " + in_quotes(name) + ": ";
    const auto bad = [&](const std::string& what) { return invalid(tensor_where + what); };
    if (!entry.is_object()) throw bad("entry is " + json_type(entry) + ", not an object");
    const auto field = [&](const char* key) -> const Json& {
      const auto it = entry.find(key);
      if (it == entry.end()) throw bad("missing field '" + std::string(key) + "'");
      return *it;
    };

    const Json& dtype_json = field("dtype");
    if (!dtype_json.is_string()) throw bad("field 'dtype' is " + json_type(dtype_json) + ", not a string");
    DType dtype{};
    const auto& dtype_text = dtype_json.get_ref<const std::string&>();
    if (!parse_dtype(dtype_text, dtype)) {
      throw bad("field 'dtype' has unknown dtype " + in_quotes(printable(dtype_text)) +
                " (supported: F64, F32, F16, BF16, I64)");
    }

    const Json& shape_json = field("shape");
    if (!shape_json.is_array()) throw bad("field 'shape' is " + json_type(shape_json) + ", not an array");
    std::vector<int64_t> shape;
    shape.reserve(shape_json.size());
    for (const Json& dim : shape_json) {
      int64_t extent = 0;
      if (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0) {
        throw bad("field 'shape' has a negative dimension " + std::to_string(dim.get<int64_t>()));
      }
      if (!as_non_negative_int64(dim, extent)) {
        throw bad("field 'shape' has a dimension that is " + json_type(dim) + ", not a non-negative int64");
      }
      shape.push_back(extent);
    }
    // The product of the non-zero extents must fit, so that no running product overflows.
    int64_t nonzero_product = 1;
    bool empty = false;
    for (int64_t extent : shape) {
      if (extent == 0) {
        empty = true;
      } else if (__builtin_mul_overflow(nonzero_product, extent, &nonzero_product)) {
        throw bad("field 'shape' " + shape_string(shape) + " has too many elements");
      }
    }
    int64_t byte_count = 0;
    if (__builtin_mul_overflow(nonzero_product, static_cast<int64_t>(dtype_size(dtype)), &byte_count)) {
      throw bad("field 'shape' " + shape_string(shape) + " has too many elements");
    }
    if (empty) byte_count = 0;

    const Json& offsets_json = field("data_offsets");
    int64_t begin = 0;
    int64_t end = 0;
    if (!offsets_json.is_array() || offsets_json.size() != 2 || !as_non_negative_int64(offsets_json[0], begin) ||
        !as_non_negative_int64(offsets_json[1], end)) {
      throw bad("field 'data_offsets' must be [begin, end], two non-negative integers");
    }
    const std::string offsets_text = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (end < begin) throw bad("field 'data_offsets' " + offsets_text + " ends before it begins");
    if (static_cast<uint64_t>(end) > data_size) {
      throw bad("field 'data_offsets' " + offsets_text + " runs past the end of the data section (" +
                std::to_string(data_size) + " bytes)");
    }
    if (end - begin != byte_count) {
      throw bad("shape " + shape_string(shape) + " of " + dtype_name(dtype) + " needs " + std::to_string(byte_count) +
                " bytes, but field 'data_offsets' " + offsets_text + " spans " + std::to_string(end - begin));
    }

    TensorView view{name, dtype, std::move(shape),
                    std::span<const std::byte>(data + begin, static_cast<size_t>(end - begin))};
    const auto inserted = tensors.emplace(name, std::move(view));
    extents.push_back({begin, end, &inserted.first->first});
  }

  // The data section is tiled exactly: no overlaps (aliasing), no holes, nothing after the end.
  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  int64_t covered = 0;
  const std::string* previous = nullptr;
  for (const Extent& extent : extents) {
    if (extent.begin < covered) {
      throw invalid("tensors " + in_quotes(*previous) + " and " + in_quotes(*extent.name) +
                    " overlap (the second begins at byte " + std::to_string(extent.begin) +
                    ", before the first ends at byte " + std::to_string(covered) + ")");
    }
    if (extent.begin > covered) {
      throw invalid("tensor " + in_quotes(*extent.name) + " begins at byte " + std::to_string(extent.begin) +
                    ", leaving a hole after byte " + std::to_string(covered) + " of the data section");
    }
    covered = extent.end;
    previous = extent.name;
  }
  if (static_cast<uint64_t>(covered) != data_size) {
    throw invalid("the data section has " + std::to_string(data_size - static_cast<uint64_t>(covered)) +
                  " bytes after the last tensor");
  }

  tensors_ = std::move(tensors);
  metadata_ = std::move(metadata);
}

const TensorView& SafetensorsFile::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    throw Error(ErrorKind::invalid_file, "safetensors " + in_quotes(path_) + ": no tensor " + in_quotes(name));
  }
  return it->second;
}

const TensorView& SafetensorsFile::shaped(const std::string& name, const std::vector<int64_t>& expected_shape) const {
  const TensorView& view = at(name);
  if (!expected_shape.empty() && view.shape != expected_shape) {
    throw Error(ErrorKind::invalid_file, "safetensors " + in_quotes(path_) + ": tensor " + in_quotes(name) +
                                             " has shape " + shape_string(view.shape) + ", expected " +
                                             shape_string(expected_shape));
  }
  return view;
}

Tensor SafetensorsFile::to_float(const std::string& name, const std::vector<int64_t>& expected_shape) const {
  const TensorView& view = shaped(name, expected_shape);
  Tensor out(view.shape);
  decode(view, out.ptr(), [](auto value) { return static_cast<float>(value); });
  return out;
}

Tensor SafetensorsFile::to_finite_float(const std::string& name, const std::vector<int64_t>& expected_shape) const {
  const TensorView& view = shaped(name, expected_shape);
  Tensor out(view.shape);
  to_finite_float_range(name, 0, out.data.size(), out.ptr());
  return out;
}

void SafetensorsFile::to_finite_float_range(const std::string& name, size_t first, size_t count, float* out) const {
  const TensorView& view = at(name);
  const auto numel = static_cast<size_t>(view.numel());
  if (first > numel || count > numel - first)
    throw Error(ErrorKind::invalid_argument, "safetensors " + in_quotes(path_) + ": elements [" +
                                                 std::to_string(first) + ", " + std::to_string(first + count) +
                                                 ") of tensor " + in_quotes(name) + " pass its " +
                                                 std::to_string(numel) + " elements");
  // In the conversion's own loop: each converted value's exponent bits are tested (all ones: NaN
  // or infinite) and ORed into a flag kept in a register, branch-free, so the float32 loop stays
  // vectorised and the 16-bit ones gain a few operations. Only a range that fails is scanned
  // again, for its first bad element.
  constexpr uint32_t kExponentBits = 0x7f800000u;
  uint32_t non_finite = 0;
  decode(view, first, count, out, [&non_finite](auto value) {
    const float converted = static_cast<float>(value);
    non_finite |= static_cast<uint32_t>((std::bit_cast<uint32_t>(converted) & kExponentBits) == kExponentBits);
    return converted;
  });
  if (non_finite != 0) {
    size_t index = 0;
    while (std::isfinite(out[index])) ++index;
    const float bad = out[index];
    const std::string what = std::isnan(bad) ? "NaN" : bad > 0 ? "+inf" : "-inf";
    throw Error(ErrorKind::invalid_file, "safetensors " + in_quotes(path_) + ": tensor " + in_quotes(name) + " (" +
                                             dtype_name(view.dtype) + ") element " + std::to_string(first + index) +
                                             " is " + what +
                                             (view.dtype == DType::F64 && !std::isnan(bad) ? " as float32" : "") +
                                             ": a checkpoint's weights must be finite");
  }
}

std::vector<int64_t> SafetensorsFile::to_int64(const std::string& name) const {
  const TensorView& view = at(name);
  std::vector<int64_t> out(static_cast<size_t>(view.numel()));
  if (view.dtype == DType::I64) {
    decode(view, out.data(), [](auto value) { return static_cast<int64_t>(value); });
    return out;
  }
  std::vector<double> values(out.size());
  decode(view, values.data(), [](auto value) { return static_cast<double>(value); });
  for (size_t i = 0; i < values.size(); ++i) {
    // [-2^63, 2^63) holds every double that converts to int64 without overflow.
    const double v = values[i];
    if (!(v >= -0x1p63 && v < 0x1p63) || std::trunc(v) != v) {
      throw Error(ErrorKind::invalid_file, "safetensors " + in_quotes(path_) + ": tensor " + in_quotes(name) + " (" +
                                               dtype_name(view.dtype) + ") element " + std::to_string(i) +
                                               " is not an int64 value");
    }
    out[i] = static_cast<int64_t>(v);
  }
  return out;
}

std::vector<double> SafetensorsFile::to_double(const std::string& name) const {
  const TensorView& view = at(name);
  std::vector<double> out(static_cast<size_t>(view.numel()));
  decode(view, out.data(), [](auto value) { return static_cast<double>(value); });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

namespace {

// One tensor to write: its header entry and a function that produces its bytes on demand, so
// that a large checkpoint never holds more than one encoded tensor at a time.
struct PlannedTensor {
  const std::string* name;
  DType dtype;
  const std::vector<int64_t>* shape;
  size_t byte_count;
  std::function<std::span<const std::byte>(std::vector<std::byte>& scratch)> encode;
};

template <typename Stored, typename Convert>
void encode_each(const std::vector<float>& values, std::vector<std::byte>& out, Convert convert) {
  out.resize(values.size() * sizeof(Stored));
  for (size_t i = 0; i < values.size(); ++i) {
    const Stored stored = convert(values[i]);
    std::memcpy(out.data() + i * sizeof(Stored), &stored, sizeof(Stored));
  }
}

// float32 values as `dtype` (F64, F32, F16 or BF16), little-endian.
void encode_floats(const std::vector<float>& values, DType dtype, std::vector<std::byte>& out) {
  switch (dtype) {
    case DType::F64: encode_each<double>(values, out, [](float v) { return static_cast<double>(v); }); return;
    case DType::F32: encode_each<float>(values, out, [](float v) { return v; }); return;
    case DType::F16: encode_each<uint16_t>(values, out, float_to_f16_bits); return;
    case DType::BF16: encode_each<uint16_t>(values, out, float_to_bf16_bits); return;
    case DType::I64: break;
  }
  throw Error(ErrorKind::invalid_argument, std::string("float tensors cannot be stored as ") + dtype_name(dtype));
}

void write_planned(const std::string& path, const std::vector<PlannedTensor>& tensors,
                   const std::map<std::string, std::string>& metadata, Durability durability = Durability::synced) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const PlannedTensor& tensor : tensors) {
    header[*tensor.name] = {{"dtype", dtype_name(tensor.dtype)},
                            {"shape", *tensor.shape},
                            {"data_offsets", {offset, offset + tensor.byte_count}}};
    offset += tensor.byte_count;
  }
  std::string header_text = header.dump();  // std::map order: keys sorted
  const size_t unaligned = (kHeaderLengthBytes + header_text.size()) % kDataAlignment;
  if (unaligned != 0) header_text.append(kDataAlignment - unaligned, ' ');

  AtomicFile file(path, durability);
  const auto header_length = static_cast<uint64_t>(header_text.size());
  file.write(&header_length, sizeof(header_length));
  file.write(header_text.data(), header_text.size());
  std::vector<std::byte> scratch;
  for (const PlannedTensor& tensor : tensors) {
    const std::span<const std::byte> bytes = tensor.encode(scratch);
    file.write(bytes.data(), bytes.size());
  }
  file.commit();
}

void check_writable_name(const std::string& path, const std::string& name) {
  if (name == "__metadata__") {
    throw Error(ErrorKind::invalid_argument,
                "writing safetensors " + in_quotes(path) + ": '__metadata__' is reserved, not a tensor name");
  }
}

int64_t checked_count(const std::string& path, const std::string& name, const std::vector<int64_t>& shape) {
  for (int64_t extent : shape) {
    if (extent < 0) {
      throw Error(ErrorKind::invalid_argument, "writing safetensors " + in_quotes(path) + ": tensor " +
                                                   in_quotes(name) + " has a negative dimension in " +
                                                   shape_string(shape));
    }
  }
  return Tensor::count(shape);
}

}  // namespace

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType dtype, Durability durability) {
  if (dtype == DType::I64) {
    throw Error(ErrorKind::invalid_argument,
                "writing safetensors " + in_quotes(path) + ": float tensors cannot be stored as I64");
  }
  std::vector<PlannedTensor> planned;
  planned.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    check_writable_name(path, name);
    const int64_t count = checked_count(path, name, tensor.shape);
    if (static_cast<size_t>(count) != tensor.data.size()) {
      throw Error(ErrorKind::invalid_argument, "writing safetensors " + in_quotes(path) + ": tensor " +
                                                   in_quotes(name) + " has shape " + shape_string(tensor.shape) +
                                                   " but " + std::to_string(tensor.data.size()) + " values");
    }
    const Tensor* source = &tensor;
    planned.push_back({&name, dtype, &tensor.shape, static_cast<size_t>(count) * dtype_size(dtype),
                       [source, dtype](std::vector<std::byte>& scratch) {
                         encode_floats(source->data, dtype, scratch);
                         return std::span<const std::byte>(scratch);
                       }});
  }
  write_planned(path, planned, metadata, durability);
}

void write_safetensors_bytes(const std::string& path, const std::map<std::string, TensorBytes>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  std::vector<PlannedTensor> planned;
  planned.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    check_writable_name(path, name);
    const int64_t count = checked_count(path, name, tensor.shape);
    const size_t byte_count = static_cast<size_t>(count) * dtype_size(tensor.dtype);
    if (byte_count != tensor.bytes.size()) {
      throw Error(ErrorKind::invalid_argument,
                  "writing safetensors " + in_quotes(path) + ": tensor " + in_quotes(name) + " has shape " +
                      shape_string(tensor.shape) + " of " + dtype_name(tensor.dtype) + " (" +
                      std::to_string(byte_count) + " bytes) but " + std::to_string(tensor.bytes.size()) + " bytes");
    }
    const std::vector<std::byte>* source = &tensor.bytes;
    planned.push_back({&name, tensor.dtype, &tensor.shape, byte_count,
                       [source](std::vector<std::byte>&) { return std::span<const std::byte>(*source); }});
  }
  write_planned(path, planned, metadata);
}

}  // namespace dit
