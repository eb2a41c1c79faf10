// Unit tests of what keeps the judge honest: test-set signatures, file hash lists, the byte
// snapshots of the records, git tree comparison, the scope check and the sandbox's command line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "driver/ctest_results.h"
#include "driver/git_repository.h"
#include "driver/parallel.h"
#include "driver/protection.h"
#include "driver/sandbox.h"
#include "driver/session.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/test_support.h"

namespace fs = std::filesystem;
using namespace dit::ar;

namespace {

SelectedTest listed(const std::string& name, nlohmann::json properties) {
  SelectedTest test;
  test.name = name;
  test.command = {"/b/build/" + name, "--data", "/b/tests/data"};
  test.properties = std::move(properties);
  return test;
}

nlohmann::json gate_properties() {
  return nlohmann::json::parse(R"([{"name": "LABELS", "value": ["quality", "judge"]},
                                   {"name": "WORKING_DIRECTORY", "value": "/b/build"}])");
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

int git(const fs::path& repository, const std::string& arguments) {
  const std::string command = "git -C '" + repository.string() +
                              "' -c user.name=t -c user.email=t@t -c init.defaultBranch=main " + arguments +
                              " >/dev/null 2>&1";
  return std::system(command.c_str());
}

// A new repository in `folder` with one commit (`message`) of every file there.
bool commit_everything(const fs::path& folder, const std::string& message) {
  return git(folder, "init -q") == 0 && git(folder, "add -A") == 0 && git(folder, "commit -q -m " + message) == 0;
}

}  // namespace

TEST(TestSignature, TwoBuildsOfOneTreeCompareEqual) {
  auto a = test_signature({listed("g", gate_properties())}, "/b/build", "/b");
  SelectedTest moved = listed("g", gate_properties());
  moved.command = {"/c/build/g", "--data", "/c/tests/data"};
  moved.properties[1]["value"] = "/c/build";
  auto b = test_signature({moved}, "/c/build", "/c");
  EXPECT_EQ(a, b);
  EXPECT_TRUE(signature_differences(a, b).empty());
  EXPECT_EQ(a[0]["command"][0], "{build_dir}/g");
  EXPECT_EQ(a[0]["command"][2], "{source_dir}/tests/data");
}

TEST(TestSignature, EveryKindOfChangeIsNamed) {
  const auto expected =
      test_signature({listed("g", gate_properties()), listed("u", nlohmann::json::array())}, "/b/build", "/b");
  struct Case {
    const char* what;
    std::vector<SelectedTest> found;
    std::string difference;
  };
  auto will_fail = gate_properties();
  will_fail.push_back({{"name", "WILL_FAIL"}, {"value", true}});
  auto relabelled = gate_properties();
  relabelled[0]["value"] = {"quality"};
  SelectedTest other_command = listed("g", gate_properties());
  other_command.command = {"/b/build/g", "--relaxed"};
  const std::vector<Case> cases{
      {"a property added",
       {listed("g", will_fail), listed("u", nlohmann::json::array())},
       "test g: property WILL_FAIL changed (absent -> true)"},
      {"a label dropped",
       {listed("g", relabelled), listed("u", nlohmann::json::array())},
       "test g: property LABELS changed ([\"quality\",\"judge\"] -> [\"quality\"])"},
      {"another command", {other_command, listed("u", nlohmann::json::array())}, "test g: command changed"},
      {"a test removed", {listed("u", nlohmann::json::array())}, "test g: removed"},
      {"a test added",
       {listed("g", gate_properties()), listed("u", nlohmann::json::array()), listed("x", nlohmann::json::array())},
       "test x: added"},
  };
  for (const auto& c : cases) {
    auto differences = signature_differences(expected, test_signature(c.found, "/b/build", "/b"));
    ASSERT_EQ(differences.size(), 1u) << c.what;
    EXPECT_EQ(differences[0].rfind(c.difference, 0), 0u) << c.what << ": " << differences[0];
  }
}

TEST(TestSignature, JudgeTestsAreLabelled) {
  EXPECT_TRUE(is_judge_test(
      parse_test_listing(nlohmann::json::parse(R"({"kind": "ctestInfo", "tests": [{"name": "g", "command": ["/b/g"],
        "properties": [{"name": "LABELS", "value": ["quality", "judge"]}]}]})"),
                         "listing")[0]));
  EXPECT_FALSE(is_judge_test(listed("u", nlohmann::json::array())));
}

TEST(FileHashes, ChangesAreNamedAndSkippedFoldersIgnored) {
  dit::test::ScratchDirectory scratch;
  const fs::path root = scratch.path();
  write(root / "a.txt", "a");
  write(root / "sub/b.bin", "b");
  write(root / "Testing/log", "1");
  const FileHashes before = hash_folder(root, {"Testing"});
  EXPECT_EQ(before.size(), 2u);
  write(root / "Testing/log", "2");
  EXPECT_TRUE(describe_changes(before, hash_folder(root, {"Testing"}), "").empty());
  write(root / "sub/b.bin", "B");
  write(root / "new", "n");
  fs::remove(root / "a.txt");
  auto changes = describe_changes(before, hash_folder(root, {"Testing"}), "goldens: ");
  EXPECT_EQ(changes,
            (std::vector<std::string>{"goldens: removed a.txt", "goldens: changed sub/b.bin", "goldens: added new"}));
  EXPECT_EQ(hashes_from_json(to_json(before), "x"), before);
  EXPECT_THROW(hashes_from_json(nlohmann::json::array(), "x"), dit::Error);
  EXPECT_EQ(hash_files(root, {"gone"}).at("gone"), "absent");
}

// for_each_index (driver/parallel.h): every index once, whatever the thread count; the first
// exception comes back to the caller after every started call ended.
TEST(ForEachIndex, CallsEveryIndexOnceAndRethrows) {
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    for (const unsigned threads : {1u, 3u, 8u, 64u}) {
      std::vector<std::atomic<int>> calls(count);
      for_each_index(
          count, [&](std::size_t i) { calls[i].fetch_add(1); }, threads);
      for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(calls[i].load(), 1) << i << " of " << count;
    }
  }
  for (const unsigned threads : {1u, 4u}) {
    std::atomic<int> started{0};
    const auto body = [&](std::size_t i) {
      started.fetch_add(1);
      if (i == 5) throw dit::Error(dit::ErrorKind::io, "file vanished");
    };
    EXPECT_THROW(for_each_index(100, body, threads), dit::Error) << threads;
    // On one thread the indices go in order: none after the failing one starts.
    if (threads == 1) {
      EXPECT_EQ(started.load(), 6);
    }
  }
}

// A tree of a few hundred files of fresh random sizes and bytes (the hashing is spread over the
// cores): export writes every file, a second export rewrites only those that differ, and
// compare_tree and hash_folder name exactly the files changed.
TEST(GitTrees, ManyFilesAreComparedAndExportedFileByFile) {
  dit::test::ScratchDirectory scratch;
  const std::uint64_t seed = dit::test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  const fs::path repository_dir = scratch.path() / "repo";
  std::vector<std::string> paths;
  for (int i = 0; i < 300; ++i) {
    const std::string path = "d" + std::to_string(i % 17) + "/f" + std::to_string(i) + ".txt";
    std::string bytes(random() % 20000, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    write(repository_dir / path, bytes);
    paths.push_back(path);
  }
  fs::create_symlink("f0.txt", repository_dir / "d0/link");
  fs::permissions(repository_dir / paths[1], fs::perms::owner_exec, fs::perm_options::add);
  ASSERT_TRUE(commit_everything(repository_dir, "many"));
  GitRepository repository(repository_dir);
  const std::string commit = repository.head_commit();

  const fs::path tree = scratch.path() / "tree";
  repository.export_tree(commit, tree, {"build"});
  EXPECT_TRUE(repository.compare_tree(commit, tree, {"build"}).empty());
  for (const auto& path : paths)
    ASSERT_EQ(dit::read_text_file(tree / path), dit::read_text_file(repository_dir / path)) << path;
  EXPECT_EQ(fs::read_symlink(tree / "d0/link"), "f0.txt");
  EXPECT_NE(fs::status(tree / paths[1]).permissions() & fs::perms::owner_exec, fs::perms::none);
  const FileHashes before = hash_folder(tree, {});
  for (const auto& path : paths) ASSERT_EQ(before.at(path), dit::sha256_file((tree / path).string())) << path;

  // A fresh random handful changed (one byte more), one link retargeted, one mode dropped.
  std::set<std::string> changed;
  while (changed.size() < 12) changed.insert(paths[2 + random() % (paths.size() - 2)]);
  for (const auto& path : changed) write(tree / path, dit::read_text_file(tree / path) + "x");
  fs::remove(tree / "d0/link");
  fs::create_symlink("f2.txt", tree / "d0/link");
  fs::permissions(tree / paths[1], fs::perms::owner_exec, fs::perm_options::remove);
  std::vector<std::string> expected(changed.begin(), changed.end());
  expected.push_back("d0/link");
  expected.push_back(paths[1]);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(repository.compare_tree(commit, tree, {"build"}), expected);
  std::vector<std::string> hashed_changes;
  for (const auto& change : describe_changes(before, hash_folder(tree, {}), "")) hashed_changes.push_back(change);
  EXPECT_EQ(hashed_changes.size(), changed.size() + 1) << "the changed files and the link";

  // The second export rewrites the changed files only: the others keep their inode.
  std::map<std::string, ino_t> inodes;
  for (const auto& path : paths) {
    struct stat info {};
    ASSERT_EQ(::stat((tree / path).c_str(), &info), 0);
    inodes[path] = info.st_ino;
  }
  repository.export_tree(commit, tree, {"build"});
  EXPECT_TRUE(repository.compare_tree(commit, tree, {"build"}).empty());
  for (const auto& path : paths) {
    struct stat info {};
    ASSERT_EQ(::stat((tree / path).c_str(), &info), 0);
    const bool rewritten = changed.count(path) || path == paths[1];
    if (!rewritten) {
      EXPECT_EQ(info.st_ino, inodes[path]) << path << " was rewritten unchanged";
    }
  }
}

TEST(GitTrees, CompareTreeAndSnapshotsSeeWhatARunChanged) {
  dit::test::ScratchDirectory scratch;
  const fs::path repository_dir = scratch.path() / "repo";
  write(repository_dir / "src/a.cpp", "int a;\n");
  write(repository_dir / "tests/t.cmake", "add_test()\n");
  ASSERT_TRUE(commit_everything(repository_dir, "one"));
  GitRepository repository(repository_dir);
  const std::string commit = repository.head_commit();

  const fs::path tree = scratch.path() / "tree";
  repository.export_tree(commit, tree, {"build"});
  write(tree / "build/out.o", "object");
  EXPECT_TRUE(repository.compare_tree(commit, tree, {"build"}).empty());
  write(tree / "tests/t.cmake", "add_test(WILL_FAIL)\n");
  write(tree / "tests/extra.cmake", "x\n");
  fs::permissions(tree / "src/a.cpp", fs::perms::owner_exec, fs::perm_options::add);
  EXPECT_EQ(repository.compare_tree(commit, tree, {"build"}),
            (std::vector<std::string>{"src/a.cpp", "tests/extra.cmake", "tests/t.cmake"}));
  repository.export_tree(commit, tree, {"build"});
  EXPECT_TRUE(repository.compare_tree(commit, tree, {"build"}).empty());
  EXPECT_TRUE(fs::exists(tree / "build/out.o"));

  const fs::path records = scratch.path() / "results.tsv";
  write(records, "header\n");
  repository.set_reference("refs/autoresearch/best", commit, "test");
  Snapshot snapshot;
  snapshot.add_file(records);
  snapshot.add_file(scratch.path() / "absent.json");
  snapshot.add_references(repository, {"refs/autoresearch/*"});
  EXPECT_TRUE(snapshot.changes(repository).empty());
  write(records, "header\nKEEP\n");
  write(scratch.path() / "absent.json", "{}");
  repository.set_reference("refs/autoresearch/discarded/x", commit, "test");
  EXPECT_EQ(snapshot.changes(repository).size(), 3u);
  snapshot.restore(repository);
  EXPECT_TRUE(snapshot.changes(repository).empty());
  EXPECT_EQ(dit::read_text_file(records), "header\n");
  EXPECT_FALSE(fs::exists(scratch.path() / "absent.json"));

  write(repository_dir / "tests/t.cmake", "changed\n");
  write(repository_dir / "tests/planted.cmake", "planted\n");
  repository.restore_paths(commit, {"tests/t.cmake", "tests/planted.cmake"});
  EXPECT_TRUE(repository.dirty_paths().empty());
}

// The check both `dit-ar experiment` and `dit-ar work` make before building: a commit that edits
// only mutable paths passes; one that edits a locked path, the contract or a path outside every
// mutable folder is named, each path once; a folder prefix matches whole components only.
TEST(ScopeCheck, LockedAndOutOfScopePathsAreNamed) {
  dit::test::ScratchDirectory scratch;
  const fs::path repository_dir = scratch.path() / "repo";
  write(repository_dir / "model/a.cpp", "int a;\n");
  write(repository_dir / "quality/gate.cmake", "gate\n");
  write(repository_dir / "quality/contract.json", "{}\n");
  write(repository_dir / "README.md", "readme\n");
  ASSERT_TRUE(commit_everything(repository_dir, "init"));
  SessionContext context{Config{}, repository_dir, std::make_unique<GitRepository>(repository_dir),
                         StateDirectory(scratch.path() / "state")};
  context.config.path = scratch.path() / "elsewhere/autoresearch.json";  // outside the tree: not locked
  context.config.source_dir = repository_dir;
  context.config.mutable_paths = {"model/"};
  context.config.fixed_paths = {"quality/gate.cmake"};
  context.config.contract = "quality/contract.json";
  GitRepository& repository = *context.repository;
  const std::string init = repository.head_commit();
  const nlohmann::json session{{"locks", compute_locks(context.config, repository, init)}};
  EXPECT_TRUE(scope_violations(context, session, init, init).empty());

  write(repository_dir / "model/a.cpp", "int a = 1;\n");
  write(repository_dir / "model/new.cu", "// new\n");
  ASSERT_EQ(git(repository_dir, "add -A"), 0);
  ASSERT_EQ(git(repository_dir, "commit -q -m engine"), 0);
  const std::string engine = repository.head_commit();
  EXPECT_TRUE(scope_violations(context, session, init, engine).empty());

  write(repository_dir / "quality/gate.cmake", "gate, looser\n");
  write(repository_dir / "quality/contract.json", "{\"floors\": {}}\n");
  write(repository_dir / "README.md", "readme, edited\n");
  write(repository_dir / "modelling/b.cpp", "int b;\n");
  ASSERT_EQ(git(repository_dir, "add -A"), 0);
  ASSERT_EQ(git(repository_dir, "commit -q -m everything"), 0);
  const std::string everything = repository.head_commit();
  const std::vector<std::string> violations = scope_violations(context, session, engine, everything);
  const std::vector<std::string> out_of_scope = {"out of scope: README.md is not under a mutable path",
                                                 "out of scope: modelling/b.cpp is not under a mutable path",
                                                 "out of scope: quality/contract.json is not under a mutable path",
                                                 "out of scope: quality/gate.cmake is not under a mutable path"};
  for (const auto& expected : out_of_scope)
    EXPECT_EQ(std::count(violations.begin(), violations.end(), expected), 1) << expected;
  const auto locked = std::count_if(violations.begin(), violations.end(), [](const std::string& line) {
    return line.rfind("locked path quality/gate.cmake changed since init (", 0) == 0 ||
           line.rfind("locked path quality/contract.json changed since init (", 0) == 0;
  });
  EXPECT_EQ(locked, 2);
  EXPECT_EQ(violations.size(), out_of_scope.size() + 2);
}

TEST(Sandbox, PrefixBindsOnlyTheWritableFoldersAndHidesTheRest) {
  const SandboxStatus& status = sandbox_status();
  SandboxView view;
  dit::test::ScratchDirectory scratch;
  view.writable = {scratch.path() / "build"};
  view.hidden = {scratch.path()};
  auto prefix = sandbox_prefix(view);
  if (!status.available) {
    EXPECT_TRUE(prefix.empty()) << status.description;
    GTEST_SKIP() << "no sandbox here: " << status.description;
  }
  ASSERT_FALSE(prefix.empty());
  EXPECT_EQ(prefix.front(), "bwrap");
  EXPECT_EQ(prefix.back(), "--");
  // Inside: the writable folder takes a file, the rest of the file system does not.
  write(scratch.path() / "secret", "golden");
  std::vector<std::string> argv = prefix;
  const std::string script = "echo x > '" + (scratch.path() / "build/ok").string() + "' && ! echo y > '" +
                             (fs::current_path() / "denied").string() + "' 2>/dev/null && ! test -e '" +
                             (scratch.path() / "secret").string() + "'";
  argv.insert(argv.end(), {"sh", "-c", script});
  std::string command;
  for (const auto& argument : argv) command += "'" + argument + "' ";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_TRUE(fs::exists(scratch.path() / "build/ok"));
  EXPECT_FALSE(fs::exists(fs::current_path() / "denied"));
}
