// The rules that turn measured calibration spreads into contract floors (quality/README.md).
#include <gtest/gtest.h>

#include "quality/renderer/calibrate.h"
#include "quality/metrics.h"

namespace dit::quality {
namespace {

TEST(Calibration, FloorsFollowTheDocumentedRules) {
  // The CPU corpus's measured rounding spread (README) gives the committed floors.
  EXPECT_NEAR(proposed_floor(kLatentRelativeL2, 2.1196978480642274e-07), 2.2e-6, 1e-18);
  EXPECT_DOUBLE_EQ(proposed_floor(kImagePsnr, 89.02561563555346), 79.0);
  EXPECT_NEAR(proposed_floor(kImageSsim, 0.9999998713835585), 0.99999, 1e-15);
  EXPECT_DOUBLE_EQ(proposed_floor(kMaxAbsPixelError, 1.0), 2.0);
  // Zero spreads fall back to the minimums; large ones scale.
  EXPECT_DOUBLE_EQ(proposed_floor(kLatentRelativeL2, 0.0), 1e-6);
  EXPECT_NEAR(proposed_floor(kLatentRelativeL2, 3.14e-5), 3.2e-4, 1e-16);
  EXPECT_DOUBLE_EQ(proposed_floor(kImagePsnr, kPsnrOfIdenticalImages), 80.0);
  EXPECT_NEAR(proposed_floor(kImageSsim, 0.999), 0.99, 1e-15);
  EXPECT_DOUBLE_EQ(proposed_floor(kMaxAbsPixelError, 3.0), 6.0);
  EXPECT_DOUBLE_EQ(proposed_floor(kAllFinite, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(proposed_floor(kDeterminism, 1.0), 1.0);
}

}  // namespace
}  // namespace dit::quality
