// CTest's GPU allocation onto CUDA_VISIBLE_DEVICES (core/ctest_gpu.h): what each form of the two
// variables gives, and that an allocation changes the environment while none leaves it alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/ctest_gpu.h"
#include "core/error.h"

namespace dit {
namespace {

struct Case {
  const char* count;
  const char* gpus;
  std::optional<std::string> index;  // nullopt with `refused` false: no allocation
  bool refused;
};

static_assert(kCtestGpuSlots == 4, "the table's whole-GPU row below holds 4 slots");

TEST(CtestGpu, ReadsSlotsOfOneGpu) {
  const Case cases[] = {
      {nullptr, nullptr, std::nullopt, false},
      {nullptr, "id:3,slots:1", std::nullopt, false},  // no group count: not started by CTest's allocator
      {"1", "id:0,slots:1", "0", false},
      {"1", "id:7,slots:1", "7", false},
      {"1", "id:12,slots:1", "12", false},
      {"1", nullptr, std::nullopt, true},
      {"2", "id:0,slots:1", std::nullopt, true},
      {"0", nullptr, std::nullopt, false},  // a test without resource groups, in a run with a specification
      {"1", "id:0,slots:2", "0", false},
      {"1", "id:5,slots:4", "5", false},  // kCtestGpuSlots: a test that holds the GPU whole
      {"1", "id:0,slots:5", std::nullopt, true},
      {"1", "id:0,slots:0", std::nullopt, true},
      {"1", "id:0,slots:", std::nullopt, true},
      {"1", "id:0,slots:x", std::nullopt, true},
      {"1", "id:0", std::nullopt, true},
      {"1", "id:0,slots:1;id:1,slots:1", std::nullopt, true},
      {"1", "id:gpu_a,slots:1", std::nullopt, true},
      {"1", "id:,slots:1", std::nullopt, true},
      {"1", "id:-1,slots:1", std::nullopt, true},
      {"1", "", std::nullopt, true},
      {"1", "0", std::nullopt, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.count ? c.count : "(unset)") + " / " + (c.gpus ? c.gpus : "(unset)"));
    if (c.refused) {
      try {
        ctest_gpu_index(c.count, c.gpus);
        ADD_FAILURE() << "accepted";
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
        EXPECT_NE(std::string(error.what()).find("CTEST_RESOURCE_GROUP"), std::string::npos) << error.what();
      }
    } else {
      EXPECT_EQ(ctest_gpu_index(c.count, c.gpus), c.index);
    }
  }
}

TEST(CtestGpu, AnAllocationSetsTheVisibleDevice) {
  unsetenv("CTEST_RESOURCE_GROUP_COUNT");
  unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
  setenv("CUDA_VISIBLE_DEVICES", "5", 1);
  unsetenv("CUDA_DEVICE_ORDER");
  EXPECT_EQ(apply_ctest_gpu_allocation(), std::nullopt);
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "5");
  EXPECT_EQ(std::getenv("CUDA_DEVICE_ORDER"), nullptr);

  setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1);
  setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:2,slots:1", 1);
  EXPECT_EQ(apply_ctest_gpu_allocation(), std::optional<std::string>("2"));
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  unsetenv("CTEST_RESOURCE_GROUP_COUNT");
  unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("CUDA_DEVICE_ORDER");
}

}  // namespace
}  // namespace dit
