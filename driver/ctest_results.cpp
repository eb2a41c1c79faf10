// Readers for CTest's test listing (json-v1), JUnit XML (pugixml) and console summary lines.
#include "driver/ctest_results.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include <pugixml.hpp>

#include "core/error.h"

namespace dit::ar {

bool SelectedTest::has_label(const std::string& label) const {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
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
  if (!listing.is_object() || listing.value("kind", "") != "ctestInfo" || !listing.contains("tests") ||
      !listing["tests"].is_array()) {
    throw Error(ErrorKind::invalid_file, where + ": not a `ctest --show-only=json-v1` listing");
  }
  std::vector<SelectedTest> tests;
  for (const auto& entry : listing["tests"]) {
    SelectedTest test;
    test.name = entry.value("name", "");
    if (entry.contains("command") && entry["command"].is_array()) {
      for (const auto& argument : entry["command"]) test.command.push_back(argument.get<std::string>());
    }
    if (entry.contains("properties") && entry["properties"].is_array()) {
      test.properties = entry["properties"];
      for (const auto& property : entry["properties"]) {
        if (property.value("name", "") != "LABELS" || !property.contains("value")) continue;
        const auto& value = property["value"];
        if (value.is_array()) {
          for (const auto& label : value) test.labels.push_back(label.get<std::string>());
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
    std::string status = testcase.attribute("status").as_string();
    if (pugi::xml_node failure = testcase.child("failure")) {
      result.outcome = TestOutcome::failed;
      result.detail = failure.attribute("message").as_string();
      result.failed_cases = parse_gtest_failures(testcase.child_value("system-out"));
    } else if (pugi::xml_node skipped = testcase.child("skipped")) {
      result.detail = skipped.attribute("message").as_string();
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
    cases[testcase.attribute("name").as_string()] = result;
  }
  return cases;
}

std::vector<std::string> parse_gtest_failures(const std::string& output) {
  // "[  FAILED  ] suite/Fixture.case/param, where GetParam() = ... (87 ms)"; the summary at the
  // end repeats each line without the time, and "[  FAILED  ] 2 tests, listed below:" counts.
  static const std::regex line_pattern(R"(^\[  FAILED  \] ([^ ,]+))");
  std::vector<std::string> cases;
  std::set<std::string> seen;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, line_pattern)) continue;
    const std::string name = match[1].str();
    if (line.find(" tests, listed below") != std::string::npos || line.find(" test, listed below") != std::string::npos)
      continue;
    if (seen.insert(name).second) cases.push_back(name);
  }
  return cases;
}

std::map<std::string, std::string> parse_console_failures(const std::string& console_log) {
  // " 4/8 Test #4: segv .............***Exception: SegFault  0.00 sec"
  static const std::regex line_pattern(R"(Test +#\d+: (.+?) \.*\s*\*\*\*(.+?)\s+[0-9.]+ sec)");
  std::map<std::string, std::string> failures;
  std::istringstream lines(console_log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, line_pattern)) failures[match[1].str()] = match[2].str();
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
  for (const auto& property : properties) named[property.value("name", "")] = property.value("value", nlohmann::json());
  return named;
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
  auto index = [](const nlohmann::json& signature) {
    std::map<std::string, nlohmann::json> named;
    for (const auto& entry : signature) named[entry.value("name", "")] = entry;
    return named;
  };
  auto show = [](const nlohmann::json& value) {
    std::string text = value.is_null() ? "absent" : value.dump();
    return text.size() > 120 ? text.substr(0, 117) + "..." : text;
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
      differences.push_back("test " + name + ": command changed (" + show(entry["command"]) + " -> " +
                            show(now->second["command"]) + ")");
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
