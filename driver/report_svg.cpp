// The objective over experiments as inline SVG: x is the row of results.tsv (0 is the
// baseline), y the value comparable_series() says was measured the same way as the best it was
// compared with. Every row gets one marker of class "point"; rows without a measurement (a
// crash, a rejection, a quality discard before timing) sit in a "not measured" strip under the
// axis, so none is hidden.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "driver/report.h"

namespace dit::ar {

namespace {

constexpr double kWidth = 1000, kHeight = 380;
constexpr double kLeft = 110, kRight = 20, kTop = 20, kBottom = 80;  // plot margins
constexpr double kStripOffset = 30;                                  // the "not measured" strip, below the x axis
constexpr int kYTicks = 5;

std::string svg_number(double value, int precision = 4) {
  std::ostringstream text;
  text << std::setprecision(precision) << value;
  return text.str();
}

std::string coordinate(double value) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << value;
  return text.str();
}

// A round step (1, 2 or 5 times a power of ten) giving about `count` ticks over `span`.
double tick_step(double span, int count) {
  double raw = span / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double multiple : {1.0, 2.0, 5.0, 10.0}) {
    if (multiple * power >= raw) return multiple * power;
  }
  return 10.0 * power;
}

std::string css_class(const std::string& status) {
  std::string name = status;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

}  // namespace

ComparableSeries comparable_series(const ReportInput& input) {
  const auto& rows = input.results.rows;
  const std::size_t count = rows.size();
  ComparableSeries series;
  series.plotted.resize(count);
  series.paired.resize(count, false);
  series.measured_beside.resize(count);
  for (std::size_t index = 0; index < count; ++index) {
    series.plotted[index] = rows[index].candidate;
    series.paired[index] = !rows[index].is_baseline() && rows[index].candidate && rows[index].best_before;
  }
  // A recorded baseline is the best until the next KEEP: the experiments before it re-measure it
  // beside themselves, and the first of them gives the value comparable with theirs.
  for (std::size_t index = 0; index < count; ++index) {
    if (!rows[index].is_baseline() || rows[index].status != "KEEP") continue;
    series.baseline_row = index;
    for (std::size_t later = index + 1; later < count; ++later) {
      if (series.paired[later]) {
        series.plotted[index] = rows[later].best_before;
        series.measured_beside[index] = later;
        break;
      }
      if (rows[later].status == "KEEP") break;  // an unpaired KEEP: the baseline was not measured beside it
    }
  }
  if (!series.baseline_row) {
    for (std::size_t index = 0; index < count && !series.baseline_row; ++index) {
      if (rows[index].is_baseline() && series.plotted[index]) series.baseline_row = index;
    }
  }

  auto& steps = series.running_best;
  auto vertex = [&steps](std::size_t index, double value) {
    if (steps.empty() || steps.back() != std::pair{index, value}) steps.emplace_back(index, value);
  };
  std::optional<double> held;
  for (std::size_t index = 0; index < count; ++index) {
    if (series.paired[index]) {
      if (held) vertex(index, *held);
      held = rows[index].best_before;
      vertex(index, *held);
    }
    if (rows[index].status == "KEEP" && series.plotted[index]) {
      if (held) vertex(index, *held);
      held = series.plotted[index];
      vertex(index, *held);
    }
  }
  if (held && count > 1 && steps.back().first != count - 1) vertex(count - 1, *held);
  return series;
}

std::string render_objective_chart(const ReportInput& input) {
  const auto& rows = input.results.rows;
  const ComparableSeries series = comparable_series(input);
  const double noise_fraction = input.noise_percent ? std::abs(*input.noise_percent) / 100.0 : 0.0;
  std::vector<double> drawn;
  for (const auto& value : series.plotted) {
    if (value) drawn.push_back(*value);
  }
  for (const auto& [index, value] : series.running_best) {
    drawn.push_back(value * (1.0 + noise_fraction));
    drawn.push_back(value * (1.0 - noise_fraction));
  }
  double low = drawn.empty() ? 0.0 : *std::min_element(drawn.begin(), drawn.end());
  double high = drawn.empty() ? 1.0 : *std::max_element(drawn.begin(), drawn.end());
  if (high - low < 1e-12 * std::max(1.0, std::abs(high))) {
    double pad = std::abs(high) > 0 ? std::abs(high) * 0.1 : 1.0;
    low -= pad;
    high += pad;
  } else {
    double pad = (high - low) * 0.08;
    low -= pad;
    high += pad;
  }
  const double plot_width = kWidth - kLeft - kRight;
  const double plot_height = kHeight - kTop - kBottom;
  const double axis_y = kTop + plot_height;
  const double strip_y = axis_y + kStripOffset;
  const std::size_t count = rows.size();
  auto x_of = [&](std::size_t index) {
    return count <= 1 ? kLeft + plot_width / 2
                      : kLeft + plot_width * static_cast<double>(index) / static_cast<double>(count - 1);
  };
  auto y_of = [&](double value) { return kTop + plot_height * (high - value) / (high - low); };

  std::ostringstream svg;
  svg << "<svg class=\"objective-chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << " "
      << kHeight << "\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" role=\"img\" aria-label=\"objective over experiments\">\n";

  // Grid and y axis.
  double step = tick_step(high - low, kYTicks);
  for (double tick = std::ceil(low / step) * step; tick <= high + step * 1e-9; tick += step) {
    double y = y_of(tick);
    svg << "<line class=\"grid\" x1=\"" << coordinate(kLeft) << "\" y1=\"" << coordinate(y) << "\" x2=\""
        << coordinate(kLeft + plot_width) << "\" y2=\"" << coordinate(y) << "\"/>"
        << "<text class=\"tick\" x=\"" << coordinate(kLeft - 8) << "\" y=\"" << coordinate(y + 4)
        << "\" text-anchor=\"end\">" << svg_number(std::abs(tick) < step * 1e-9 ? 0.0 : tick, 6) << "</text>\n";
  }
  svg << "<line class=\"axis\" x1=\"" << kLeft << "\" y1=\"" << coordinate(axis_y) << "\" x2=\""
      << coordinate(kLeft + plot_width) << "\" y2=\"" << coordinate(axis_y) << "\"/>\n";
  svg << "<text class=\"axis-label\" transform=\"translate(18," << coordinate(kTop + plot_height / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">"
      << html_escape(input.unit.empty() ? "objective" : "objective (" + input.unit + ")") << "</text>\n";
  // x ticks: every row when they fit, else about twenty.
  std::size_t x_every = std::max<std::size_t>(1, (count + 19) / 20);
  for (std::size_t index = 0; index < count; index += x_every) {
    svg << "<text class=\"tick\" x=\"" << coordinate(x_of(index)) << "\" y=\"" << coordinate(strip_y + 26)
        << "\" text-anchor=\"middle\">" << index << "</text>\n";
  }
  svg << "<text class=\"axis-label\" x=\"" << coordinate(kLeft + plot_width / 2) << "\" y=\"" << coordinate(kHeight - 6)
      << "\" text-anchor=\"middle\">experiment (0 = baseline)</text>\n";
  svg << "<text class=\"strip-label\" x=\"" << coordinate(kLeft - 8) << "\" y=\"" << coordinate(strip_y + 4)
      << "\" text-anchor=\"end\">not measured</text>\n";

  // The noise band under everything it surrounds: the running best scaled by 1 +- noise.
  if (input.noise_percent && !series.running_best.empty()) {
    std::ostringstream band;
    for (const auto& [index, value] : series.running_best)
      band << coordinate(x_of(index)) << "," << coordinate(y_of(value * (1.0 + noise_fraction))) << " ";
    for (auto vertex = series.running_best.rbegin(); vertex != series.running_best.rend(); ++vertex)
      band << coordinate(x_of(vertex->first)) << "," << coordinate(y_of(vertex->second * (1.0 - noise_fraction)))
           << " ";
    svg << "<polygon class=\"noise-band\" data-noise-percent=\"" << svg_number(*input.noise_percent, 6)
        << "\" points=\"" << band.str() << "\"><title>the running best &#177;" << svg_number(*input.noise_percent, 4)
        << "%, the noise the baseline's A/A run measured</title></polygon>\n";
  }

  if (series.baseline_row && series.plotted[*series.baseline_row]) {
    const double value = *series.plotted[*series.baseline_row];
    const auto& beside = series.measured_beside[*series.baseline_row];
    double y = y_of(value);
    svg << "<line class=\"baseline-line\" x1=\"" << coordinate(kLeft) << "\" y1=\"" << coordinate(y) << "\" x2=\""
        << coordinate(kLeft + plot_width) << "\" y2=\"" << coordinate(y) << "\"/>"
        << "<text class=\"baseline-label\" x=\"" << coordinate(kLeft + plot_width - 4) << "\" y=\"" << coordinate(y - 6)
        << "\" text-anchor=\"end\">baseline " << svg_number(value, 6)
        << (beside ? " (as measured beside #" + std::to_string(*beside) + ")" : std::string()) << "</text>\n";
  }

  if (!series.running_best.empty()) {
    std::ostringstream points, values;
    for (const auto& [index, value] : series.running_best) {
      points << coordinate(x_of(index)) << "," << coordinate(y_of(value)) << " ";
      values << (values.tellp() > 0 ? " " : "") << svg_number(value, 10);
    }
    svg << "<polyline class=\"running-best\" data-values=\"" << values.str() << "\" points=\"" << points.str()
        << "\"/>\n";
  }

  // Markers last, on top.
  for (std::size_t index = 0; index < count; ++index) {
    const auto& row = rows[index];
    double x = x_of(index);
    const std::optional<double>& value = series.plotted[index];
    double y = value ? y_of(*value) : strip_y;
    std::ostringstream text;
    text << "#" << index << " " << row.commit.substr(0, 8) << " " << row.status << " ";
    if (!value) {
      text << "(not measured)";
    } else if (const auto& beside = series.measured_beside[index]) {
      text << svg_number(*value, 6) << " " << input.unit << " as measured beside #" << *beside;
      if (row.candidate) text << " (its own A/A run: " << svg_number(*row.candidate, 6) << " " << input.unit << ")";
    } else if (series.paired[index]) {
      text << svg_number(*value, 6) << " " << input.unit << " (the best: " << svg_number(*row.best_before, 6) << " "
           << input.unit << " in the same rounds)";
    } else {
      text << svg_number(*value, 6) << " " << input.unit << (row.is_baseline() ? "" : " (no best measured beside it)");
    }
    text << ": " << row.description;
    const std::string title = text.str();
    const std::string classes = "point " + (row.is_baseline() ? std::string("baseline") : css_class(row.status));
    std::ostringstream attribute_text;
    attribute_text << " data-row=\"" << index << "\" data-status=\"" << html_escape(row.status) << "\"";
    if (value) attribute_text << " data-value=\"" << svg_number(*value, 10) << "\"";
    const std::string attributes = attribute_text.str();
    if (row.status == "CRASH" || row.status == "REJECTED") {
      const double r = 5.5;
      svg << "<path class=\"" << classes << "\"" << attributes << " d=\"M" << coordinate(x - r) << ","
          << coordinate(y - r) << " L" << coordinate(x + r) << "," << coordinate(y + r) << " M" << coordinate(x - r)
          << "," << coordinate(y + r) << " L" << coordinate(x + r) << "," << coordinate(y - r) << "\"><title>"
          << html_escape(title) << "</title></path>\n";
    } else if (row.status == "DISCARD-QUALITY") {
      const double r = 6.5;
      svg << "<path class=\"" << classes << "\"" << attributes << " d=\"M" << coordinate(x) << "," << coordinate(y - r)
          << " L" << coordinate(x + r) << "," << coordinate(y) << " L" << coordinate(x) << "," << coordinate(y + r)
          << " L" << coordinate(x - r) << "," << coordinate(y) << " Z\"><title>" << html_escape(title)
          << "</title></path>\n";
    } else {
      svg << "<circle class=\"" << classes << "\"" << attributes << " cx=\"" << coordinate(x) << "\" cy=\""
          << coordinate(y) << "\" r=\"" << (row.is_baseline() ? 7 : 5.5) << "\"><title>" << html_escape(title)
          << "</title></circle>\n";
    }
  }
  svg << "</svg>";
  return svg.str();
}

}  // namespace dit::ar
