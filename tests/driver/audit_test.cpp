// Unit tests of the campaign audit (driver/audit.h): one history of commits, each a case with the
// verdict and problem it must get, and the cross-check against a state directory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "driver/audit.h"
#include "driver/recording.h"
#include "driver/state_directory.h"
#include "tests/support/scratch_directory.h"

namespace fs = std::filesystem;
using namespace dit::ar;

namespace {

int git(const fs::path& repository, const std::string& arguments) {
  const std::string command = "git -C '" + repository.string() +
                              "' -c user.name=t -c user.email=t@t -c init.defaultBranch=main " + arguments +
                              " >/dev/null 2>&1";
  return std::system(command.c_str());
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

ExperimentRecord keep_record(const std::string& commit, const std::string& parent, const std::string& lane) {
  ExperimentRecord record;
  record.kind = "experiment";
  record.timestamp = "2026-12-04T00:00:00Z";
  record.commit = commit;
  record.parent = parent;
  record.best_before = parent;
  record.lane = lane;
  record.status = Status::keep;
  record.run_dir = "runs/0001-" + short_id(commit);
  return record;
}

// One commit of the history: what it changes, how its note is made, and what the audit says.
struct Case {
  std::string name;
  std::vector<std::string> files;  // written with fresh content
  std::string trailer;             // appended to the message as its last paragraph
  // Changes the KEEP record before it is written as the note; none: no note at all.
  std::function<void(ExperimentRecord&)> note;
  AuditVerdict verdict;
  std::string problem;  // a part of the first problem; empty: none
};

class AuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write(root() / "model/a.cpp", "a\n");
    write(root() / "kernels/k.cu", "k\n");
    write(root() / "driver/d.cpp", "d\n");
    ASSERT_EQ(git(root(), "init -q"), 0);
    ASSERT_EQ(git(root(), "add -A"), 0);
    ASSERT_EQ(git(root(), "commit -q -m start"), 0);
    repository_ = std::make_unique<GitRepository>(root());
    base_ = repository_->head_commit();
    options_.mutable_paths = {"model/", "kernels/"};
  }

  fs::path root() const { return scratch_.path() / "repo"; }

  // Commits the case's changes; returns the new commit.
  std::string commit(const Case& c) {
    static int serial = 0;
    for (const auto& file : c.files) write(root() / file, c.name + std::to_string(++serial) + "\n");
    EXPECT_EQ(git(root(), "add -A"), 0);
    std::string message = "-m '" + c.name + "'";
    if (!c.trailer.empty()) message += " -m '" + c.trailer + "'";
    EXPECT_EQ(git(root(), "commit -q " + message), 0) << c.name;
    const std::string id = repository_->head_commit();
    if (c.note) {
      ExperimentRecord record = keep_record(id, repository_->parents(id).front(), "fp16");
      c.note(record);
      repository_->write_note(kNotesRef, id, record.to_json().dump(2) + "\n");
    }
    return id;
  }

  dit::test::ScratchDirectory scratch_;
  std::unique_ptr<GitRepository> repository_;
  std::string base_;
  AuditOptions options_;
};

const auto as_is = [](ExperimentRecord&) {};

TEST_F(AuditTest, EveryKindOfCommitGetsItsVerdict) {
  const std::vector<Case> cases{
      {"fixed part only", {"driver/d.cpp"}, "", nullptr, AuditVerdict::fixed_only, ""},
      {"kept experiment", {"model/a.cpp"}, "", as_is, AuditVerdict::kept, ""},
      {"kept kernel experiment", {"kernels/k.cu", "model/a.cpp"}, "", as_is, AuditVerdict::kept, ""},
      {"never judged", {"model/a.cpp"}, "", nullptr, AuditVerdict::failed, "no record on refs/notes/autoresearch"},
      {"discarded",
       {"model/a.cpp"},
       "",
       [](ExperimentRecord& r) { r.status = Status::discard_performance; },
       AuditVerdict::failed,
       "DISCARD-PERFORMANCE, not KEEP"},
      {"a baseline record",
       {"model/a.cpp"},
       "",
       [](ExperimentRecord& r) { r.kind = "baseline"; },
       AuditVerdict::failed,
       "a baseline run, not an experiment"},
      {"record of another commit",
       {"model/a.cpp"},
       "",
       [](ExperimentRecord& r) { r.commit = std::string(40, 'a'); },
       AuditVerdict::failed,
       "names commit aaaa"},
      {"judged on another best",
       {"model/a.cpp"},
       "",
       [](ExperimentRecord& r) { r.best_before = std::string(40, 'b'); },
       AuditVerdict::failed,
       "judged on top of bbbbbbbb"},
      {"fixed and mutable together",
       {"model/a.cpp", "driver/d.cpp"},
       "",
       as_is,
       AuditVerdict::failed,
       "changes driver/d.cpp outside the mutable paths beside model/a.cpp"},
      {"exempt fix",
       {"model/a.cpp", "driver/d.cpp"},
       "Loop-exempt: a rename, no speed claimed",
       nullptr,
       AuditVerdict::exempt,
       ""},
      {"another trailer is no exemption",
       {"kernels/k.cu"},
       "Reviewed-by: someone",
       nullptr,
       AuditVerdict::failed,
       "no record"},
  };
  std::vector<std::string> commits;
  for (const auto& c : cases) commits.push_back(commit(c));
  const auto entries = audit_range(*repository_, base_, "HEAD", options_);
  ASSERT_EQ(entries.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    EXPECT_EQ(entries[i].commit, commits[i]);
    EXPECT_EQ(entries[i].summary, cases[i].name);
    EXPECT_EQ(to_string(entries[i].verdict), to_string(cases[i].verdict));
    if (cases[i].problem.empty()) {
      EXPECT_TRUE(entries[i].problems.empty()) << entries[i].problems.front();
    } else {
      ASSERT_FALSE(entries[i].problems.empty());
      EXPECT_NE(entries[i].problems.front().find(cases[i].problem), std::string::npos) << entries[i].problems.front();
    }
  }
  EXPECT_EQ(entries[1].lane, "fp16");
  EXPECT_EQ(entries[9].exempt_why, "a rename, no speed claimed");
  // A range inside the history: only its commits.
  EXPECT_EQ(audit_range(*repository_, commits[0], commits[2], options_).size(), 2u);
  EXPECT_TRUE(audit_range(*repository_, "HEAD", "HEAD", options_).empty());
}

TEST_F(AuditTest, OnlyTheAuditedLanesCount) {
  commit({"kept", {"model/a.cpp"}, "", as_is, AuditVerdict::kept, ""});
  options_.lanes = {"fp32"};
  auto entries = audit_range(*repository_, base_, "HEAD", options_);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].verdict, AuditVerdict::failed);
  EXPECT_NE(entries[0].problems.at(0).find("lane 'fp16'"), std::string::npos);
  options_.lanes = {"fp32", "fp16"};
  EXPECT_EQ(audit_range(*repository_, base_, "HEAD", options_).at(0).verdict, AuditVerdict::kept);
}

TEST_F(AuditTest, RequiredTrailersMustCarryText) {
  commit({"with the trailer", {"model/a.cpp"}, "A5500-effect: fewer DRAM round trips", as_is, AuditVerdict::kept, ""});
  commit({"without it", {"model/a.cpp"}, "Other: x", as_is, AuditVerdict::kept, ""});
  commit({"an exempt one needs none", {"model/a.cpp"}, "Loop-exempt: a fix", nullptr, AuditVerdict::exempt, ""});
  commit({"a fixed one neither", {"driver/d.cpp"}, "", nullptr, AuditVerdict::fixed_only, ""});
  options_.required_trailers = {"A5500-effect"};
  const auto entries = audit_range(*repository_, base_, "HEAD", options_);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].verdict, AuditVerdict::kept);
  EXPECT_EQ(entries[1].verdict, AuditVerdict::failed);
  EXPECT_EQ(entries[1].problems.at(0), "the message lacks the trailer 'A5500-effect: ...'");
  EXPECT_EQ(entries[2].verdict, AuditVerdict::exempt);
  EXPECT_EQ(entries[3].verdict, AuditVerdict::fixed_only);
}

TEST_F(AuditTest, AMergeIsNoExperiment) {
  ASSERT_EQ(git(root(), "switch -q -c side"), 0);
  commit({"side", {"kernels/k.cu"}, "", as_is, AuditVerdict::kept, ""});
  ASSERT_EQ(git(root(), "switch -q main"), 0);
  commit({"main", {"driver/d.cpp"}, "", nullptr, AuditVerdict::fixed_only, ""});
  ASSERT_EQ(git(root(), "merge -q --no-edit side"), 0);
  const std::string merge = repository_->head_commit();
  repository_->write_note(kNotesRef, merge,
                          keep_record(merge, repository_->parents(merge).front(), "fp16").to_json().dump());
  const auto entries = audit_range(*repository_, base_, "HEAD", options_);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.back().commit, merge);  // parents before children
  EXPECT_EQ(entries.back().verdict, AuditVerdict::failed);
  EXPECT_NE(entries.back().problems.at(0).find("a merge"), std::string::npos);
}

TEST_F(AuditTest, RecordsAreCheckedAgainstTheStateDirectory) {
  const std::string id = commit({"kept", {"model/a.cpp"}, "", as_is, AuditVerdict::kept, ""});
  const ExperimentRecord record = keep_record(id, base_, "fp16");
  const fs::path state = scratch_.path() / "state";
  fs::create_directories(state / record.run_dir);
  options_.state_dir = state;
  auto first_problem = [&] {
    auto entries = audit_range(*repository_, base_, "HEAD", options_);
    return entries.at(0).problems.empty() ? std::string() : entries.at(0).problems.front();
  };
  EXPECT_NE(first_problem().find("has no run.json"), std::string::npos);
  write(state / record.run_dir / "run.json", record.to_json().dump());
  EXPECT_NE(first_problem().find("no KEEP row"), std::string::npos);
  StateDirectory(state).append_result(record.tsv_row());
  EXPECT_EQ(first_problem(), "");
  ExperimentRecord other = record;
  other.candidate_value = 1.0;
  write(state / record.run_dir / "run.json", other.to_json().dump());
  EXPECT_NE(first_problem().find("differs from the note's record"), std::string::npos);
}

TEST_F(AuditTest, ABadRangeIsAnInputError) {
  commit({"one", {"driver/d.cpp"}, "", nullptr, AuditVerdict::fixed_only, ""});
  auto kind_of = [&](const std::string& base, const std::string& tip) -> std::optional<dit::ErrorKind> {
    try {
      audit_range(*repository_, base, tip, options_);
    } catch (const dit::Error& error) {
      return error.kind();
    }
    return std::nullopt;
  };
  EXPECT_EQ(kind_of("no-such-revision", "HEAD"), dit::ErrorKind::invalid_argument);
  EXPECT_EQ(kind_of("HEAD", base_), dit::ErrorKind::invalid_argument);  // the tip does not descend from the base
  options_.state_dir = scratch_.path() / "absent";
  EXPECT_EQ(kind_of(base_, "HEAD"), dit::ErrorKind::invalid_argument);
}

}  // namespace
