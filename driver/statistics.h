// Order statistics and the Mann-Whitney U test the performance gate decides with (as Google
// Benchmark's compare.py does): a difference is real only when the repetitions say so.
#pragma once

#include <vector>

namespace dit::ar {

double median(std::vector<double> values);
// Linear interpolation between closest ranks (NumPy's default); `fraction` in [0, 1].
double percentile(std::vector<double> values, double fraction);

struct MannWhitneyResult {
  double u = 0.0;        // U of the first sample
  double p_value = 1.0;  // two-sided
  bool exact = false;    // exact distribution (no ties, small samples) or normal approximation
};

// Two-sided test of "the two samples come from the same distribution". Exact when there are
// no ties and both samples hold at most 30 values; otherwise the normal approximation with tie
// correction and continuity correction. When every value is tied the p-value is 1.
MannWhitneyResult mann_whitney_u(const std::vector<double>& first, const std::vector<double>& second);

}  // namespace dit::ar
