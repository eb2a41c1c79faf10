// Order statistics, the Mann-Whitney U test and the rank-based shift interval the performance
// gate decides with: a difference is real only when the repetitions say so.
#pragma once

#include <cstddef>
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
// correction and continuity correction. When every value is tied the p-value is 1. Throws
// dit::Error(invalid_argument) on an empty sample or a NaN.
MannWhitneyResult mann_whitney_u(const std::vector<double>& first, const std::vector<double>& second);

// P(U = u) for u = 0..m*n: the null distribution of the Mann-Whitney U of two samples of sizes m
// and n drawn from one continuous distribution.
std::vector<double> mann_whitney_null_distribution(std::size_t m, std::size_t n);

// Hodges-Lehmann estimate of the shift `first - second` (the median of the m*n pairwise
// differences first_i - second_j) and Lehmann's distribution-free interval for it.
struct ShiftInterval {
  double estimate = 0.0;
  double lower = 0.0;  // the rank-th smallest pairwise difference
  double upper = 0.0;  // the rank-th largest
};

// The rank k of the interval [D_(k), D_(mn+1-k)] whose each side misses the true shift with
// probability at most `alpha_each_side` (the largest k with P(U <= k - 1) <= alpha_each_side)
// when both samples come from one continuous distribution up to that shift; 0 when the samples
// are too small for any (1 / C(m + n, m) > alpha_each_side).
std::size_t shift_interval_rank(std::size_t m, std::size_t n, double alpha_each_side);

// The estimate and the interval of rank `rank` (1 <= rank <= (m*n + 1) / 2).
ShiftInterval shift_interval(const std::vector<double>& first, const std::vector<double>& second, std::size_t rank);

}  // namespace dit::ar
