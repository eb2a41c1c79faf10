// Mann-Whitney U: midranks, exact null distribution by counting (no ties), normal
// approximation with tie and continuity corrections otherwise.
#include "driver/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/error.h"

namespace dit::ar {

namespace {

constexpr std::size_t kExactLimit = 30;

// Number of arrangements with each U value: counts[m][n][u], built by the recurrence
// f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u). Returns P(U <= u) for sizes m, n.
double exact_lower_tail(std::size_t m, std::size_t n, double u) {
  std::size_t max_u = m * n;
  // table[i][j] is the distribution of U for sizes (i, j); built row by row.
  std::vector<std::vector<std::vector<double>>> table(m + 1, std::vector<std::vector<double>>(n + 1));
  for (std::size_t i = 0; i <= m; ++i) {
    for (std::size_t j = 0; j <= n; ++j) {
      std::vector<double>& counts = table[i][j];
      counts.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        counts[0] = 1.0;
        continue;
      }
      const std::vector<double>& without_first = table[i - 1][j];  // largest value from sample one
      const std::vector<double>& without_second = table[i][j - 1];
      for (std::size_t k = 0; k < without_first.size(); ++k) counts[k + j] += without_first[k];
      for (std::size_t k = 0; k < without_second.size(); ++k) counts[k] += without_second[k];
    }
  }
  const std::vector<double>& counts = table[m][n];
  double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  double below = 0.0;
  for (std::size_t k = 0; k <= max_u && static_cast<double>(k) <= u + 1e-9; ++k) below += counts[k];
  return below / total;
}

}  // namespace

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
    double smaller = std::min(result.u, mm * nn - result.u);
    result.p_value = std::min(1.0, 2.0 * exact_lower_tail(m, n, smaller));
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
