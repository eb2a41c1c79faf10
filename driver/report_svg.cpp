// The objective over experiments as inline SVG: x is the row of results.tsv (0 is the
// baseline), y the candidate's measured objective. Every row gets one marker of class "point";
// rows without a measurement (a crash, a rejection, a quality discard before timing) sit in
// a "not measured" strip under the axis, so none is hidden.
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

std::string number(double value, int precision = 4) {
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

std::string render_objective_chart(const ReportInput& input) {
  const auto& rows = input.results.rows;
  std::vector<double> measured;
  std::optional<double> baseline_value;
  for (const auto& row : rows) {
    if (row.candidate) measured.push_back(*row.candidate);
    if (row.is_baseline() && row.candidate && !baseline_value) baseline_value = row.candidate;
  }
  double low = measured.empty() ? 0.0 : *std::min_element(measured.begin(), measured.end());
  double high = measured.empty() ? 1.0 : *std::max_element(measured.begin(), measured.end());
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
        << "\" text-anchor=\"end\">" << number(std::abs(tick) < step * 1e-9 ? 0.0 : tick, 6) << "</text>\n";
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

  if (baseline_value) {
    double y = y_of(*baseline_value);
    svg << "<line class=\"baseline-line\" x1=\"" << coordinate(kLeft) << "\" y1=\"" << coordinate(y) << "\" x2=\""
        << coordinate(kLeft + plot_width) << "\" y2=\"" << coordinate(y) << "\"/>"
        << "<text class=\"baseline-label\" x=\"" << coordinate(kLeft + plot_width - 4) << "\" y=\"" << coordinate(y - 6)
        << "\" text-anchor=\"end\">baseline " << number(*baseline_value, 6) << "</text>\n";
  }

  // The running best: the value of the latest KEEP, held until the next one, to the last row.
  std::ostringstream steps;
  auto vertex = [&](std::size_t index, double value) {
    steps << coordinate(x_of(index)) << "," << coordinate(y_of(value)) << " ";
  };
  std::optional<double> running;
  for (std::size_t index = 0; index < count; ++index) {
    const auto& row = rows[index];
    if (row.status == "KEEP" && row.candidate) {
      if (running) vertex(index, *running);
      running = row.candidate;
      vertex(index, *running);
    }
  }
  if (running && count > 1) vertex(count - 1, *running);
  if (running) svg << "<polyline class=\"running-best\" points=\"" << steps.str() << "\"/>\n";

  // Markers last, on top.
  for (std::size_t index = 0; index < count; ++index) {
    const auto& row = rows[index];
    double x = x_of(index);
    double y = row.candidate ? y_of(*row.candidate) : strip_y;
    std::ostringstream text;
    text << "#" << index << " " << row.commit.substr(0, 8) << " " << row.status << " "
         << (row.candidate ? number(*row.candidate, 6) + " " + input.unit : std::string("(not measured)")) << ": "
         << row.description;
    const std::string title = text.str();
    const std::string classes = "point " + (row.is_baseline() ? std::string("baseline") : css_class(row.status));
    std::ostringstream attribute_text;
    attribute_text << " data-row=\"" << index << "\" data-status=\"" << html_escape(row.status) << "\"";
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
