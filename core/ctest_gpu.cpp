#include "core/ctest_gpu.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"

namespace dit {
namespace {

[[noreturn]] void refuse(const std::string& what) {
  throw Error(
      ErrorKind::invalid_argument,
      what + " (a GPU test takes slots of one GPU: RESOURCE_GROUPS \"gpus:<slots>\", cmake/DitGpuResources.cmake)");
}

bool is_decimal(std::string_view text) {
  return !text.empty() && text.size() <= 6 && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

std::optional<std::string> ctest_gpu_index(const char* group_count, const char* group_gpus) {
  // CTest sets the count to 0 for a test without resource groups when a specification is given.
  if (group_count == nullptr || std::string_view(group_count) == "0") return std::nullopt;
  if (std::string_view(group_count) != "1")
    refuse("CTEST_RESOURCE_GROUP_COUNT is '" + std::string(group_count) + "', not 1");
  if (group_gpus == nullptr) refuse("CTEST_RESOURCE_GROUP_0_GPUS is unset");
  // "id:<n>,slots:<k>": one GPU; two GPUs would read "id:0,slots:4;id:1,slots:4".
  const std::string_view text(group_gpus);
  const std::string_view prefix = "id:", separator = ",slots:";
  const size_t at = text.find(separator);
  if (text.substr(0, prefix.size()) != prefix || at == std::string_view::npos)
    refuse("CTEST_RESOURCE_GROUP_0_GPUS is '" + std::string(text) + "', not id:<index>,slots:<count>");
  const std::string_view id = text.substr(prefix.size(), at - prefix.size());
  const std::string_view slots = text.substr(at + separator.size());
  if (!is_decimal(id)) refuse("CTEST_RESOURCE_GROUP_0_GPUS names GPU '" + std::string(id) + "', not a decimal index");
  if (!is_decimal(slots) || std::stoi(std::string(slots)) < 1 || std::stoi(std::string(slots)) > kCtestGpuSlots)
    refuse("CTEST_RESOURCE_GROUP_0_GPUS holds '" + std::string(slots) + "' slots, not 1 to " +
           std::to_string(kCtestGpuSlots));
  return std::string(id);
}

std::optional<std::string> apply_ctest_gpu_allocation() {
  const std::optional<std::string> index =
      ctest_gpu_index(std::getenv("CTEST_RESOURCE_GROUP_COUNT"), std::getenv("CTEST_RESOURCE_GROUP_0_GPUS"));
  if (!index) return std::nullopt;
  if (setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1) != 0 || setenv("CUDA_VISIBLE_DEVICES", index->c_str(), 1) != 0)
    throw Error(ErrorKind::io, "cannot set CUDA_VISIBLE_DEVICES for CTest's GPU " + *index);
  return index;
}

bool take_ctest_gpu(const char* program) {
  try {
    apply_ctest_gpu_allocation();
    return true;
  } catch (const Error& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return false;
  }
}

}  // namespace dit
