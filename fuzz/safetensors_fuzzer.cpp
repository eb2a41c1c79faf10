// libFuzzer target for the safetensors reader: any byte string either parses into tensors whose
// views tile the data section and convert cleanly, or is refused with a dit::Error. Anything
// else (a crash, an out-of-bounds read, undefined behaviour, another exception) is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

void exercise(const dit::SafetensorsFile& file) {
  std::vector<const dit::TensorView*> views;
  for (const auto& [name, view] : file.tensors()) {
    check(view.name == name);
    check(view.bytes.size() == static_cast<size_t>(view.numel()) * dit::dtype_size(view.dtype));
    const dit::Tensor as_float = file.to_float(name, view.shape);
    check(as_float.data.size() == static_cast<size_t>(view.numel()));
    check(file.to_double(name).size() == as_float.data.size());
    try {
      check(file.to_int64(name).size() == as_float.data.size());
    } catch (const dit::Error&) {
      check(view.dtype != dit::DType::I64);  // only non-integral floating values are refused
    }
    views.push_back(&view);
  }
  // The accepted views tile one contiguous range: no overlaps, no holes.
  std::sort(views.begin(), views.end(), [](const dit::TensorView* a, const dit::TensorView* b) {
    return std::less<>()(a->bytes.data(), b->bytes.data()) ||
           (a->bytes.data() == b->bytes.data() && a->bytes.size() < b->bytes.size());
  });
  for (size_t i = 1; i < views.size(); ++i) {
    check(views[i - 1]->bytes.data() + views[i - 1]->bytes.size() == views[i]->bytes.data());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    exercise(dit::SafetensorsFile::from_bytes(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz"));
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file);
  }
  return 0;
}
