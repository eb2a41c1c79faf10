// Readers for CTest's test listing (json-v1), JUnit XML (pugixml) and console summary lines.
#include "driver/ctest_results.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <pugixml.hpp>

#include "core/error.h"

namespace dit::ar {

namespace {

// Text from CTest's files (written by the candidate's tests) as valid UTF-8, each invalid byte
// replaced by U+FFFD: names and details end up in the decision's reasons and the JSON records,
// whose writer refuses anything else.
std::string valid_utf8(const std::string& text) {
  const std::string quoted = nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace

bool SelectedTest::has_label(const std::string& label) const {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

std::vector<std::string> SelectedTest::property_strings(const std::string& name) const {
  std::vector<std::string> strings;
  for (const auto& property : properties) {
    if (!property.is_object() || property.value("name", "") != name || !property.contains("value")) continue;
    const nlohmann::json& value = property["value"];
    if (value.is_string()) strings.push_back(value.get<std::string>());
    if (value.is_array())
      for (const auto& item : value)
        if (item.is_string()) strings.push_back(item.get<std::string>());
  }
  return strings;
}

std::string to_string(TestOutcome outcome) {
  switch (outcome) {
    case TestOutcome::passed: return "passed";
    case TestOutcome::failed: return "failed";
    case TestOutcome::crashed: return "crashed";
    case TestOutcome::timed_out: return "timed out";
    case TestOutcome::skipped: return "skipped";
    case TestOutcome::not_run: return "not run";
    case TestOutcome::missing: return "missing";
  }
  return "unknown";
}

std::vector<SelectedTest> parse_test_listing(const nlohmann::json& listing, const std::string& where) {
  if (!listing.is_object() || !listing.contains("kind") || listing["kind"] != "ctestInfo" ||
      !listing.contains("tests") || !listing["tests"].is_array()) {
    throw Error(ErrorKind::invalid_file, where + ": not a `ctest --show-only=json-v1` listing");
  }
  // A field of the wrong type is refused with the test named, never read as something else.
  auto malformed = [&where](const std::string& at, const std::string& problem) {
    return Error(ErrorKind::invalid_file, where + ": " + at + " " + problem + " (not a ctest json-v1 listing)");
  };
  std::vector<SelectedTest> tests;
  const nlohmann::json& entries = listing["tests"];
  for (std::size_t index = 0; index < entries.size(); ++index) {
    const nlohmann::json& entry = entries[index];
    const std::string at = "tests[" + std::to_string(index) + "]";
    if (!entry.is_object()) throw malformed(at, "is not an object");
    SelectedTest test;
    if (entry.contains("name")) {
      if (!entry["name"].is_string()) throw malformed(at + ".name", "is not a string");
      test.name = entry["name"].get<std::string>();
    }
    if (entry.contains("command") && entry["command"].is_array()) {
      for (const auto& argument : entry["command"]) {
        if (!argument.is_string()) throw malformed(at + ".command", "holds a value that is not a string");
        test.command.push_back(argument.get<std::string>());
      }
    }
    if (entry.contains("properties") && entry["properties"].is_array()) {
      test.properties = entry["properties"];
      for (const auto& property : entry["properties"]) {
        if (!property.is_object() || (property.contains("name") && !property["name"].is_string()))
          throw malformed(at + ".properties", "holds a property that is not an object with a string name");
        if (!property.contains("name") || property["name"] != "LABELS" || !property.contains("value")) continue;
        const auto& value = property["value"];
        if (value.is_array()) {
          for (const auto& label : value) {
            if (!label.is_string()) throw malformed(at + " LABELS", "holds a label that is not a string");
            test.labels.push_back(label.get<std::string>());
          }
        } else if (value.is_string()) {
          test.labels.push_back(value.get<std::string>());
        }
      }
    }
    tests.push_back(std::move(test));
  }
  return tests;
}

std::map<std::string, JunitCase> parse_junit(const std::filesystem::path& path) {
  pugi::xml_document document;
  pugi::xml_parse_result parsed = document.load_file(path.c_str());
  if (!parsed) {
    throw Error(ErrorKind::invalid_file, path.string() + ": not readable JUnit XML (" + parsed.description() +
                                             " at byte " + std::to_string(parsed.offset) + ")");
  }
  pugi::xml_node suite = document.child("testsuite");
  if (!suite) suite = document.child("testsuites").child("testsuite");
  if (!suite) throw Error(ErrorKind::invalid_file, path.string() + ": no <testsuite> element");
  std::map<std::string, JunitCase> cases;
  for (pugi::xml_node testcase : suite.children("testcase")) {
    JunitCase result;
    result.seconds = testcase.attribute("time").as_double();
    std::string status = valid_utf8(testcase.attribute("status").as_string());
    if (pugi::xml_node failure = testcase.child("failure")) {
      result.outcome = TestOutcome::failed;
      result.detail = valid_utf8(failure.attribute("message").as_string());
      result.failed_cases = parse_gtest_failures(testcase.child_value("system-out"));
    } else if (pugi::xml_node skipped = testcase.child("skipped")) {
      result.detail = valid_utf8(skipped.attribute("message").as_string());
      // CTest marks a SKIP_RETURN_CODE exit "notrun" with that message; other "notrun"
      // cases (failed fixture, missing executable, disabled) never started.
      result.outcome = result.detail.rfind("SKIP_RETURN_CODE", 0) == 0 || result.detail.rfind("SKIP_REGULAR", 0) == 0
                           ? TestOutcome::skipped
                           : TestOutcome::not_run;
    } else if (status == "run") {
      result.outcome = TestOutcome::passed;
    } else if (status == "fail") {
      result.outcome = TestOutcome::failed;
    } else {
      result.outcome = TestOutcome::not_run;
      result.detail = status;
    }
    cases[valid_utf8(testcase.attribute("name").as_string())] = result;
  }
  return cases;
}

std::vector<std::string> parse_gtest_failures(const std::string& output) {
  // "[  FAILED  ] suite/Fixture.case/param, where GetParam() = ... (87 ms)"; the summary at the
  // end repeats each line without the time, and "[  FAILED  ] 2 tests, listed below:" counts.
  // The name runs to the first space or comma (no std::regex: the output is the test's own, and
  // a regex would recurse once per character of a long line).
  static const std::string marker = "[  FAILED  ] ";
  std::vector<std::string> cases;
  std::set<std::string> seen;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(marker, 0) != 0) continue;
    const std::size_t end = line.find_first_of(" ,", marker.size());
    const std::string name =
        valid_utf8(line.substr(marker.size(), end == std::string::npos ? end : end - marker.size()));
    if (name.empty()) continue;
    if (line.find(" tests, listed below") != std::string::npos || line.find(" test, listed below") != std::string::npos)
      continue;
    if (seen.insert(name).second) cases.push_back(name);
  }
  return cases;
}

namespace {

// The failure of one line of CTest's console output, as the pattern
//   Test +#\d+: (.+?) \.*\s*\*\*\*(.+?)\s+[0-9.]+ sec
// finds it (std::regex_search, ECMAScript: the leftmost start, the shortest name, the shortest
// status, neither holding a line terminator): " 4/8 Test #4: segv .......***Exception: SegFault
// 0.00 sec" gives {"segv", "Exception: SegFault"}. Scanned by hand in linear time: the lines are
// the tests' own output too, and std::regex recurses once per character (a long line overflows
// the stack) and backtracks in quadratic time or worse.
std::optional<std::pair<std::string, std::string>> console_failure(const std::string& line) {
  constexpr std::size_t none = std::string::npos;
  if (line.find("Test") == none || line.find("***") == none) return std::nullopt;
  const std::size_t n = line.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  auto number = [](char c) { return (c >= '0' && c <= '9') || c == '.'; };
  auto terminator = [](char c) { return c == '\n' || c == '\r'; };  // what '.' never matches
  // From the right: where each run of spaces, of number characters and of dots ends; the first
  // terminator at or after each index; where "\s+[0-9.]+ sec" matches, and the first such index.
  std::vector<std::size_t> space_end(n + 1, n), number_end(n + 1, n), dot_end(n + 1, n), next_terminator(n + 1, none),
      next_tail(n + 2, none);
  for (std::size_t i = n; i-- > 0;) {
    space_end[i] = space(line[i]) ? space_end[i + 1] : i;
    number_end[i] = number(line[i]) ? number_end[i + 1] : i;
    dot_end[i] = line[i] == '.' ? dot_end[i + 1] : i;
    next_terminator[i] = terminator(line[i]) ? i : next_terminator[i + 1];
  }
  for (std::size_t q = n; q-- > 0;) {
    bool tail = false;
    if (space(line[q])) {
      const std::size_t digits = space_end[q];
      const std::size_t end = number_end[digits];
      tail = end > digits && line.compare(end, 4, " sec") == 0;
    }
    next_tail[q] = tail ? q : next_tail[q + 1];
  }
  // The status after "***" at k: the shortest one, without a terminator, before a tail.
  auto status_end = [&](std::size_t k) -> std::size_t {
    if (k + 1 > n) return none;
    const std::size_t q = next_tail[k + 1];
    return q != none && (next_terminator[k] == none || next_terminator[k] >= q) ? q : none;
  };
  // first_name_end[x]: the first p >= x where " \.*\s*\*\*\*" and a status follow.
  std::vector<std::size_t> first_name_end(n + 2, none);
  for (std::size_t p = n; p-- > 0;) {
    bool ends = false;
    if (line[p] == ' ') {
      const std::size_t stars = space_end[dot_end[p + 1]];
      ends = line.compare(stars, 3, "***") == 0 && status_end(stars + 3) != none;
    }
    first_name_end[p] = ends ? p : first_name_end[p + 1];
  }
  for (std::size_t start = line.find("Test"); start != none; start = line.find("Test", start + 1)) {
    std::size_t i = start + 4;
    const std::size_t spaces = i;
    while (i < n && line[i] == ' ') ++i;
    if (i == spaces || i >= n || line[i] != '#') continue;
    const std::size_t digits = ++i;
    while (i < n && line[i] >= '0' && line[i] <= '9') ++i;
    if (i == digits || line.compare(i, 2, ": ") != 0) continue;
    const std::size_t name = i + 2;
    if (name + 1 > n) continue;
    const std::size_t p = first_name_end[name + 1];  // the name holds at least one character
    if (p == none || (next_terminator[name] != none && next_terminator[name] < p)) continue;
    const std::size_t stars = space_end[dot_end[p + 1]];
    const std::size_t status = stars + 3;
    return std::pair(line.substr(name, p - name), line.substr(status, status_end(status) - status));
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, std::string> parse_console_failures(const std::string& console_log) {
  std::map<std::string, std::string> failures;
  std::istringstream lines(console_log);
  for (std::string line; std::getline(lines, line);) {
    if (auto failure = console_failure(line)) failures[valid_utf8(failure->first)] = valid_utf8(failure->second);
  }
  return failures;
}

std::vector<TestResult> merge_results(const std::vector<SelectedTest>& selected,
                                      const std::map<std::string, JunitCase>& junit,
                                      const std::map<std::string, std::string>& console_failures,
                                      const std::string& preset) {
  std::vector<TestResult> results;
  for (const auto& test : selected) {
    TestResult result;
    result.test = test;
    result.preset = preset;
    auto found = junit.find(test.name);
    if (found == junit.end()) {
      result.outcome = TestOutcome::missing;
      result.detail = "selected but absent from the JUnit results";
    } else {
      result.outcome = found->second.outcome;
      result.detail = found->second.detail;
      result.seconds = found->second.seconds;
      result.failed_cases = found->second.failed_cases;
    }
    auto console = console_failures.find(test.name);
    if (result.outcome == TestOutcome::failed && console != console_failures.end()) {
      const std::string& text = console->second;
      if (text.rfind("Timeout", 0) == 0)
        result.outcome = TestOutcome::timed_out;
      else if (text.rfind("Exception", 0) == 0)
        result.outcome = TestOutcome::crashed;
      result.detail = text;
    }
    results.push_back(std::move(result));
  }
  return results;
}

bool is_judge_test(const SelectedTest& test) { return test.has_label("judge"); }

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

nlohmann::json normalized(const nlohmann::json& value, const std::string& build_dir, const std::string& source_dir) {
  if (value.is_string()) {
    // The build folder lies inside the source folder: replace it first.
    return replace_all(replace_all(value.get<std::string>(), build_dir, "{build_dir}"), source_dir, "{source_dir}");
  }
  if (value.is_array()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& item : value) list.push_back(normalized(item, build_dir, source_dir));
    return list;
  }
  if (value.is_object()) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [key, item] : value.items()) object[key] = normalized(item, build_dir, source_dir);
    return object;
  }
  return value;
}

std::map<std::string, nlohmann::json> properties_by_name(const nlohmann::json& properties) {
  std::map<std::string, nlohmann::json> named;
  for (const auto& property : properties) {
    if (!property.is_object() || (property.contains("name") && !property["name"].is_string()))
      throw Error(ErrorKind::invalid_file, "a test property is not an object with a string name: " +
                                               property.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    named[property.value("name", "")] = property.value("value", nlohmann::json());
  }
  return named;
}

// A signature as test_signature() writes it: a list of objects, each with a string name.
void check_signature(const nlohmann::json& signature) {
  auto malformed = [](const std::string& problem) {
    return Error(ErrorKind::invalid_file, "a test-set signature is malformed: " + problem +
                                              " (the baseline's, in session.json, is damaged: restore it, or start "
                                              "a new session in a fresh state directory)");
  };
  if (!signature.is_array()) throw malformed("not a list");
  for (std::size_t i = 0; i < signature.size(); ++i) {
    const nlohmann::json& entry = signature[i];
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string())
      throw malformed("entry " + std::to_string(i) + " is not an object with a string name");
    if (entry.contains("properties") && !entry["properties"].is_object())
      throw malformed("the properties of entry " + std::to_string(i) + " are not an object");
  }
}

}  // namespace

nlohmann::json test_signature(const std::vector<SelectedTest>& tests, const std::string& build_dir,
                              const std::string& source_dir) {
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& test : tests) {
    nlohmann::json properties = nlohmann::json::object();
    for (const auto& [name, value] : properties_by_name(test.properties)) properties[name] = value;
    by_name[test.name] =
        normalized({{"name", test.name}, {"command", test.command}, {"properties", properties}}, build_dir, source_dir);
  }
  nlohmann::json signature = nlohmann::json::array();
  for (auto& [name, entry] : by_name) signature.push_back(std::move(entry));
  return signature;
}

std::vector<std::string> signature_differences(const nlohmann::json& expected, const nlohmann::json& found) {
  check_signature(expected);
  check_signature(found);
  auto index = [](const nlohmann::json& signature) {
    std::map<std::string, nlohmann::json> named;
    for (const auto& entry : signature) named[entry.value("name", "")] = entry;
    return named;
  };
  auto show = [](const nlohmann::json& value) {
    std::string text =
        value.is_null() ? "absent" : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() <= 120) return text;
    // Cut before a character, never inside one: the result must stay valid UTF-8.
    std::size_t cut = 117;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return text.substr(0, cut) + "...";
  };
  const auto before = index(expected);
  const auto after = index(found);
  std::vector<std::string> differences;
  for (const auto& [name, entry] : before) {
    auto now = after.find(name);
    if (now == after.end()) {
      differences.push_back("test " + name + ": removed");
      continue;
    }
    if (entry.value("command", nlohmann::json()) != now->second.value("command", nlohmann::json()))
      differences.push_back("test " + name + ": command changed (" + show(entry.value("command", nlohmann::json())) +
                            " -> " + show(now->second.value("command", nlohmann::json())) + ")");
    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& was = entry.contains("properties") ? entry["properties"] : empty;
    const nlohmann::json& is = now->second.contains("properties") ? now->second["properties"] : empty;
    std::set<std::string> keys;
    for (const auto& [key, value] : was.items()) keys.insert(key);
    for (const auto& [key, value] : is.items()) keys.insert(key);
    for (const auto& key : keys) {
      nlohmann::json a = was.contains(key) ? was[key] : nlohmann::json();
      nlohmann::json b = is.contains(key) ? is[key] : nlohmann::json();
      if (a != b)
        differences.push_back("test " + name + ": property " + key + " changed (" + show(a) + " -> " + show(b) + ")");
    }
  }
  for (const auto& [name, entry] : after) {
    if (!before.count(name)) differences.push_back("test " + name + ": added");
  }
  return differences;
}

}  // namespace dit::ar
