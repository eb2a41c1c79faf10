// libFuzzer target for the readers of what CTest writes (driver/ctest_results.cpp), all of it
// under the candidate's control: the JUnit XML (parse_junit, pugixml), the json-v1 test listing
// (parse_test_listing), the console log (parse_console_failures) and GoogleTest's output
// (parse_gtest_failures). Each input is given to every reader. Each one either answers or
// refuses with dit::Error(invalid_file); every string they return is valid UTF-8 (it ends up in
// the decision's reasons and the JSON records); the console scanner finds what the regular
// expression it implements finds, on lines short enough for std::regex; merge_results gives
// every selected test one result; a listing's signature survives the trip through session.json
// (written as text, read back) and any signature compares equal to itself, or is refused.
// Anything else (a crash, a stack overflow, undefined behaviour, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "driver/ctest_results.h"
#include "fuzz/fuzz_support.h"

namespace {

using dit::fuzz::check;
using dit::fuzz::valid_utf8;
using namespace dit::ar;

// valid_utf8() of driver/ctest_results.cpp: invalid bytes become U+FFFD.
std::string replaced(const std::string& text) {
  return nlohmann::json::parse(nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

// The console scanner agrees with the pattern it implements, on lines short enough for
// std::regex (which recurses once per character).
void check_console_line(const std::string& line) {
  static const std::regex pattern(R"(Test +#\d+: (.+?) \.*\s*\*\*\*(.+?)\s+[0-9.]+ sec)");
  std::smatch match;
  const std::map<std::string, std::string> found = parse_console_failures(line);
  if (std::regex_search(line, match, pattern)) {
    check(found.size() == 1 && found.begin()->first == replaced(match[1].str()) &&
              found.begin()->second == replaced(match[2].str()),
          "the console scanner finds what the pattern finds");
  } else {
    check(found.empty(), "the console scanner finds nothing where the pattern finds nothing");
  }
}

void refused(const dit::Error& error) {
  check(error.kind() == dit::ErrorKind::invalid_file, "a refused CTest file is an invalid_file error");
}

std::optional<std::map<std::string, JunitCase>> read_junit(std::string_view text) {
  const std::filesystem::path path = dit::fuzz::scratch_dir() / "junit.xml";
  dit::fuzz::write_bytes(path, text);
  try {
    std::map<std::string, JunitCase> cases = parse_junit(path);
    for (const auto& [name, result] : cases) {
      check(result.outcome != TestOutcome::missing, "a JUnit case has an outcome");
      check(valid_utf8(name) && valid_utf8(result.detail), "JUnit names and details are valid UTF-8");
      std::set<std::string> distinct;
      for (const auto& failed : result.failed_cases) {
        check(!failed.empty() && valid_utf8(failed), "failed case names are valid UTF-8");
        check(distinct.insert(failed).second, "each failed case is named once");
      }
    }
    return cases;
  } catch (const dit::Error& error) {
    refused(error);
    return std::nullopt;
  }
}

std::optional<std::vector<SelectedTest>> read_listing(const nlohmann::json& document) {
  try {
    return parse_test_listing(document, "tests.json");
  } catch (const dit::Error& error) {
    refused(error);
    return std::nullopt;
  }
}

void check_signatures(const std::vector<SelectedTest>& tests) {
  for (const auto& test : tests) {
    for (const auto& label : test.labels) check(test.has_label(label), "a listed label is found");
  }
  const nlohmann::json signature = test_signature(tests, "/source/build", "/source");
  std::set<std::string> names;
  for (const auto& test : tests) names.insert(test.name);
  check(signature.size() == names.size(), "one signature entry per test name");
  check(signature_differences(signature, signature).empty(), "a signature equals itself");
  // session.json keeps it as text.
  const nlohmann::json stored = nlohmann::json::parse(signature.dump(2));
  check(stored == signature && signature_differences(stored, signature).empty(), "a stored signature reads back");
  const auto removed = signature_differences(signature, nlohmann::json::array());
  check(removed.size() == names.size(), "every test of a signature is missed by an empty one");
  for (const auto& difference : signature_differences(nlohmann::json::array(), signature))
    check(valid_utf8(difference), "differences are valid UTF-8");
}

// A damaged signature from session.json compares equal to itself, or is refused.
void check_any_signature(const nlohmann::json& document) {
  try {
    check(signature_differences(document, document).empty(), "a signature equals itself");
    for (const auto& difference : signature_differences(document, nlohmann::json::array()))
      check(valid_utf8(difference), "differences are valid UTF-8");
    // The same tests without their commands and properties: every change is shown, shortened.
    nlohmann::json bare = nlohmann::json::array();
    for (const auto& entry : document) bare.push_back({{"name", entry.at("name")}});
    for (const auto& difference : signature_differences(document, bare))
      check(valid_utf8(difference), "shortened differences are valid UTF-8");
  } catch (const dit::Error& error) {
    refused(error);
  }
}

void check_merge(const std::vector<SelectedTest>& selected, const std::map<std::string, JunitCase>& junit,
                 const std::map<std::string, std::string>& console) {
  const std::vector<TestResult> results = merge_results(selected, junit, console, "fuzz");
  check(results.size() == selected.size(), "every selected test has one result");
  for (size_t i = 0; i < results.size(); ++i) {
    const TestResult& result = results[i];
    check(result.test.name == selected[i].name && result.preset == "fuzz", "results keep the selection's order");
    check((result.outcome == TestOutcome::missing) == !junit.count(result.test.name),
          "a test is missing exactly when the JUnit file lacks it");
    if (result.outcome == TestOutcome::crashed || result.outcome == TestOutcome::timed_out)
      check(console.count(result.test.name) == 1, "only the console log makes a crash or a timeout");
    check(valid_utf8(result.detail), "details are valid UTF-8");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  const std::string log(text);

  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() <= 512) check_console_line(line);
  }
  const std::map<std::string, std::string> console = parse_console_failures(log);
  for (const auto& [name, failure] : console)
    check(valid_utf8(name) && valid_utf8(failure), "console failures are valid UTF-8");
  std::set<std::string> distinct;
  for (const auto& failed : parse_gtest_failures(log)) {
    check(!failed.empty() && failed.find_first_of(" ,") == std::string::npos, "a case name has no space or comma");
    check(valid_utf8(failed) && distinct.insert(failed).second, "case names are valid UTF-8, each once");
  }

  const std::optional<std::map<std::string, JunitCase>> junit = read_junit(text);

  std::vector<SelectedTest> selected;
  const nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  if (!document.is_discarded()) {
    check_any_signature(document);
    if (auto listing = read_listing(document)) {
      check_signatures(*listing);
      selected = *listing;
    }
  }
  if (junit) {
    if (selected.empty()) {
      for (const auto& [name, result] : *junit) selected.push_back(SelectedTest{name, {}, {}});
      selected.push_back(SelectedTest{"not in the JUnit file", {}, {}});
    }
    check_merge(selected, *junit, console);
  }
  check_merge(selected, {}, console);
  return 0;
}
