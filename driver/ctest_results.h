// What CTest selected and what happened to each test: the selection and labels from
// `ctest --show-only=json-v1` (CMake 3.25's JUnit output has no labels), the outcome from the
// `--output-junit` file, refined by CTest's console log (which alone tells a crash or a
// timeout from a plain failure).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dit::ar {

struct SelectedTest {
  std::string name;
  std::vector<std::string> command;  // empty when CTest could not resolve the executable
  std::vector<std::string> labels;
  nlohmann::json properties = nlohmann::json::array();  // every CTest property, as listed
  bool has_label(const std::string& label) const;
  // The strings of property `name` (FIXTURES_REQUIRED, FIXTURES_SETUP, ...): a list's strings, a
  // string alone, nothing when the test has no such property.
  std::vector<std::string> property_strings(const std::string& name) const;
};

enum class TestOutcome { passed, failed, crashed, timed_out, skipped, not_run, missing };
std::string to_string(TestOutcome outcome);

struct TestResult {
  SelectedTest test;
  TestOutcome outcome = TestOutcome::missing;
  std::string detail;  // CTest's message (skip reason, exception name)
  double seconds = 0.0;
  std::string preset;  // the test preset that ran it
  // The GoogleTest cases a failed test names in its output ("[  FAILED  ] suite.case"), in order.
  std::vector<std::string> failed_cases;
};

// Parses the json-v1 listing. Throws dit::Error(invalid_file) when it is not one (a field of
// the wrong type included).
std::vector<SelectedTest> parse_test_listing(const nlohmann::json& listing, const std::string& where);

// Per test name: outcome, detail and time from a CTest JUnit file. Throws dit::Error when the
// file is unreadable or not CTest's JUnit.
struct JunitCase {
  TestOutcome outcome = TestOutcome::missing;
  std::string detail;
  double seconds = 0.0;
  std::vector<std::string> failed_cases;  // of a failed test, from its <system-out>
};

// The GoogleTest cases an output names as failed ("[  FAILED  ] suite.case, where GetParam() =
// ..."), each once, in order, without the parameter's bytes.
std::vector<std::string> parse_gtest_failures(const std::string& output);
std::map<std::string, JunitCase> parse_junit(const std::filesystem::path& path);

// Per test name: "Exception: SegFault", "Timeout", ... from CTest's console output. Here and in
// the JUnit readers, text is returned as valid UTF-8 (an invalid byte becomes U+FFFD).
std::map<std::string, std::string> parse_console_failures(const std::string& console_log);

// Joins the three: every selected test gets a result; a selected test absent from the JUnit
// file is `missing`; a failure the console calls an exception is `crashed`, a timeout `timed_out`.
std::vector<TestResult> merge_results(const std::vector<SelectedTest>& selected,
                                      const std::map<std::string, JunitCase>& junit,
                                      const std::map<std::string, std::string>& console_failures,
                                      const std::string& preset);

// A test the judge runs (label `judge`): from the judge's own build, never the candidate's.
bool is_judge_test(const SelectedTest& test);

// The test set of one preset as a signature: per test its name, command and every property,
// with the build and source folders written as {build_dir} and {source_dir}, so that two builds
// of one tree compare equal. Sorted by name.
nlohmann::json test_signature(const std::vector<SelectedTest>& tests, const std::string& build_dir,
                              const std::string& source_dir);
// What differs between two signatures: "test x: added", "test y: removed", "test z: property
// WILL_FAIL changed (absent -> true)", "test z: command changed". Throws
// dit::Error(invalid_file) when either is not a signature (a list of objects, each with a
// string name and, if any, an object of properties).
std::vector<std::string> signature_differences(const nlohmann::json& expected, const nlohmann::json& found);

}  // namespace dit::ar
