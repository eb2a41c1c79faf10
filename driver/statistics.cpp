// Mann-Whitney U: midranks, exact null distribution by counting (no ties), normal
// approximation with tie and continuity corrections otherwise; the Hodges-Lehmann shift and
// Lehmann's interval for it from the same null distribution.
#include "driver/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.h"

namespace dit::ar {

namespace {

constexpr std::size_t kExactLimit = 30;

}  // namespace

std::vector<double> mann_whitney_null_distribution(std::size_t m, std::size_t n) {
  // The number of arrangements with U = u is the coefficient of q^u in the Gaussian binomial
  // [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built factor by factor (each
  // division a strided running sum, each product a strided difference). Only the lower half is
  // built: there the running sums stay as small as the counts (in the upper half they would grow
  // past them and cancel in floating point); the distribution is symmetric (u <-> m*n - u).
  if (m > n) std::swap(m, n);
  const std::size_t top = m * n;
  const std::size_t half = top / 2;
  std::vector<double> counts(half + 1, 0.0);
  counts[0] = 1.0;
  for (std::size_t i = 1; i <= m; ++i) {
    for (std::size_t k = i; k <= half; ++k) counts[k] += counts[k - i];
    for (std::size_t k = half + 1; k-- > n + i;) counts[k] -= counts[k - n - i];
  }
  std::vector<double> distribution(top + 1, 0.0);
  for (std::size_t u = 0; u <= half; ++u) distribution[u] = distribution[top - u] = counts[u];
  const double total = std::accumulate(distribution.begin(), distribution.end(), 0.0);
  for (double& probability : distribution) probability /= total;
  return distribution;
}

std::size_t shift_interval_rank(std::size_t m, std::size_t n, double alpha_each_side) {
  if (m == 0 || n == 0) return 0;
  const std::vector<double> distribution = mann_whitney_null_distribution(m, n);
  const std::size_t widest = (m * n + 1) / 2;  // the interval of rank `widest` is the estimate alone
  std::size_t rank = 0;
  double below = 0.0;  // P(U <= rank - 1)
  while (rank < widest && below + distribution[rank] <= alpha_each_side) below += distribution[rank++];
  return rank;
}

ShiftInterval shift_interval(const std::vector<double>& first, const std::vector<double>& second, std::size_t rank) {
  const std::size_t count = first.size() * second.size();
  if (count == 0 || rank == 0 || rank > (count + 1) / 2) {
    throw Error(ErrorKind::invalid_argument, "shift interval of rank " + std::to_string(rank) + " for samples of " +
                                                 std::to_string(first.size()) + " and " +
                                                 std::to_string(second.size()) + " values");
  }
  std::vector<double> differences;
  differences.reserve(count);
  for (double a : first) {
    for (double b : second) differences.push_back(a - b);
  }
  std::sort(differences.begin(), differences.end());
  ShiftInterval interval;
  interval.estimate = (differences[(count - 1) / 2] + differences[count / 2]) / 2.0;
  interval.lower = differences[rank - 1];
  interval.upper = differences[count - rank];
  return interval;
}

double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) throw Error(ErrorKind::invalid_argument, "percentile of an empty sample");
  std::sort(values.begin(), values.end());
  double position = fraction * static_cast<double>(values.size() - 1);
  auto lower = static_cast<std::size_t>(std::floor(position));
  std::size_t upper = std::min(lower + 1, values.size() - 1);
  double weight = position - static_cast<double>(lower);
  return values[lower] * (1.0 - weight) + values[upper] * weight;
}

MannWhitneyResult mann_whitney_u(const std::vector<double>& first, const std::vector<double>& second) {
  if (first.empty() || second.empty()) {
    throw Error(ErrorKind::invalid_argument, "Mann-Whitney U needs two non-empty samples");
  }
  const std::size_t m = first.size();
  const std::size_t n = second.size();
  for (const std::vector<double>* sample : {&first, &second}) {
    // NaN has no rank (and would never compare equal to itself in the midrank loop below).
    if (std::any_of(sample->begin(), sample->end(), [](double value) { return std::isnan(value); })) {
      throw Error(ErrorKind::invalid_argument, "Mann-Whitney U of a sample holding NaN");
    }
  }
  std::vector<std::pair<double, int>> pooled;
  for (double value : first) pooled.emplace_back(value, 0);
  for (double value : second) pooled.emplace_back(value, 1);
  std::sort(pooled.begin(), pooled.end());

  // Midranks, and the tie term sum(t^3 - t).
  double rank_sum_first = 0.0;
  double tie_term = 0.0;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_first += midrank;
    }
    double tied = static_cast<double>(j - i);
    tie_term += tied * tied * tied - tied;
    i = j;
  }
  MannWhitneyResult result;
  const double mm = static_cast<double>(m);
  const double nn = static_cast<double>(n);
  result.u = rank_sum_first - mm * (mm + 1.0) / 2.0;
  const double mean = mm * nn / 2.0;

  if (tie_term == 0.0 && m <= kExactLimit && n <= kExactLimit) {
    const double smaller = std::min(result.u, mm * nn - result.u);
    const std::vector<double> distribution = mann_whitney_null_distribution(m, n);
    double lower_tail = 0.0;  // P(U <= smaller); U is a whole number without ties
    for (std::size_t u = 0; static_cast<double>(u) <= smaller + 1e-9; ++u) lower_tail += distribution[u];
    result.p_value = std::min(1.0, 2.0 * lower_tail);
    result.exact = true;
    return result;
  }
  const double total = mm + nn;
  const double variance = mm * nn / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
  if (variance <= 0.0) {
    result.p_value = 1.0;
    return result;
  }
  double z = (std::abs(result.u - mean) - 0.5) / std::sqrt(variance);
  z = std::max(z, 0.0);
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

}  // namespace dit::ar
