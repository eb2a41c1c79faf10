// Weights references ({"path", "sha256"}): in a corpus case and in a gate set, valid ones resolved
// against the naming file's folder and malformed ones named; a referenced file checked by its
// sha256; render.json's record of the weights, and the differences that make a gate refuse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "quality/corpus.h"
#include "quality/gate_sets.h"
#include "quality/store.h"
#include "tests/support/test_support.h"

namespace dit::quality {
namespace {

namespace fs = std::filesystem;

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

const std::string kCase =
    R"({"id": "a", "model": "tiny_b", "image_size": 64, "class_label": 1, "seed": 5, "sampler": "ddim", "steps": 3, "cfg_scale": 4.0, "critical": false, "vae": "tiny")";

std::string case_with(const std::string& fields) { return kCase + fields + "}\n"; }

std::string gate_sets_with(const std::string& weights_field) {
  return R"({"sets": [{"name": "s", "corpus": "c.jsonl", "contract": "c.json", "backend": "cpu", "precision": "fp32", "data_dir": "d")" +
         weights_field + "}]}";
}

template <typename Parse>
std::string error_of(const Parse& parse) {
  try {
    parse();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// A reference in either file: the path as written and what it resolves to beside `base`.
struct Good {
  std::string written, resolved;
};

std::vector<Good> good_paths(const std::string& base) {
  const std::string name = "ckpt-" + std::to_string(dit::test::fresh_seed() % 100000) + ".safetensors";
  return {{name, base + "/" + name},
          {"weights/../" + name, base + "/" + name},
          {"/abs/" + name, "/abs/" + name},
          {"../up/" + name, fs::path(base).parent_path().string() + "/up/" + name}};
}

TEST(WeightsReference, ACorpusCaseResolvesItsPathAgainstTheCorpusFolder) {
  for (const Good& good : good_paths("dir/sub")) {
    for (const bool upper : {false, true}) {
      const std::string hash = dit::test::random_sha256_hex(upper);
      const Corpus corpus =
          parse_corpus(case_with(R"(, "weights": {"path": ")" + good.written + R"(", "sha256": ")" + hash + "\"}"),
                       "dir/sub/cases.jsonl");
      ASSERT_TRUE(corpus.cases.at(0).weights) << good.written;
      EXPECT_EQ(corpus.cases.at(0).weights->path, good.resolved);
      EXPECT_EQ(corpus.cases.at(0).weights->sha256, lowercase(hash));
    }
  }
  EXPECT_FALSE(parse_corpus(case_with(""), "cases.jsonl").cases.at(0).weights);
  EXPECT_FALSE(parse_corpus(case_with(", \"weights_seed\": 3"), "cases.jsonl").cases.at(0).weights);
}

TEST(WeightsReference, AGateSetResolvesItsPathAgainstTheGateSetsFolder) {
  for (const Good& good : good_paths("build/quality")) {
    const std::string hash = dit::test::random_sha256_hex();
    const std::vector<GateSet> sets = parse_gate_sets(
        gate_sets_with(R"(, "weights": {"path": ")" + good.written + R"(", "sha256": ")" + hash + "\"}"),
        "build/quality/gate-sets.json");
    ASSERT_EQ(sets.size(), 1u);
    ASSERT_TRUE(sets[0].weights) << good.written;
    EXPECT_EQ(sets[0].weights->path, good.resolved);
    EXPECT_EQ(sets[0].weights->sha256, hash);
  }
  EXPECT_FALSE(parse_gate_sets(gate_sets_with(""), "gate-sets.json").at(0).weights);
}

// Malformed references, as the value of "weights" in both files.
struct Bad {
  std::string value, expected;
};

std::vector<Bad> bad_references() {
  const std::string hash = dit::test::random_sha256_hex();
  return {
      {"\"ckpt.safetensors\"", "must be an object"},
      {"[\"ckpt.safetensors\", \"" + hash + "\"]", "must be an object"},
      {"7", "must be an object"},
      {"null", "must be an object"},
      {R"({"sha256": ")" + hash + "\"}", "needs \"path\""},
      {R"({"path": "", "sha256": ")" + hash + "\"}", "needs \"path\""},
      {R"({"path": 3, "sha256": ")" + hash + "\"}", "needs \"path\""},
      {R"({"path": "c"})", "needs \"sha256\", 64 hexadecimal digits"},
      {R"({"path": "c", "sha256": ")" + hash.substr(1) + "\"}", "needs \"sha256\", 64 hexadecimal digits"},
      {R"({"path": "c", "sha256": ")" + hash + "0\"}", "needs \"sha256\", 64 hexadecimal digits"},
      {R"({"path": "c", "sha256": ")" + hash.substr(1) + "g\"}", "needs \"sha256\", 64 hexadecimal digits"},
      {R"({"path": "c", "sha256": 12})", "needs \"sha256\", 64 hexadecimal digits"},
      {R"({"path": "c", "sha256": ")" + hash + R"(", "size": 10})", "has an unknown field \"size\""},
  };
}

TEST(WeightsReference, AMalformedReferenceInACorpusIsNamedByItsLine) {
  for (const Bad& bad : bad_references()) {
    const std::string message =
        error_of([&] { parse_corpus("# a comment\n" + case_with(", \"weights\": " + bad.value), "dir/cases.jsonl"); });
    EXPECT_NE(message.find("dir/cases.jsonl:2: field \"weights\" " + bad.expected), std::string::npos)
        << bad.value << "\n"
        << message;
  }
}

TEST(WeightsReference, AMalformedReferenceInAGateSetIsNamedBySet) {
  for (const Bad& bad : bad_references()) {
    const std::string message =
        error_of([&] { parse_gate_sets(gate_sets_with(", \"weights\": " + bad.value), "b/gate-sets.json"); });
    EXPECT_NE(message.find("b/gate-sets.json: set \"s\": field \"weights\" " + bad.expected), std::string::npos)
        << bad.value << "\n"
        << message;
  }
}

TEST(WeightsReference, ACaseNamesACheckpointOrASeedNeverBoth) {
  const std::string message = error_of([&] {
    parse_corpus(case_with(R"(, "weights_seed": 2, "weights": {"path": "c.safetensors", "sha256": ")" +
                           dit::test::random_sha256_hex() + "\"}"),
                 "cases.jsonl");
  });
  EXPECT_NE(message.find("cases.jsonl:1: fields \"weights\" and \"weights_seed\" exclude each other"),
            std::string::npos)
      << message;
}

TEST(WeightsReference, AFileIsCheckedByTheSha256OfItsBytes) {
  const fs::path dir = fs::path(testing::TempDir()) / ("weights_reference_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::mt19937_64 random(dit::test::fresh_seed());
  std::string bytes(1 + random() % 300000, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  const std::string path = (dir / "ckpt.safetensors").string();
  std::ofstream(path, std::ios::binary) << bytes;
  const std::string actual = sha256_hex(bytes);

  EXPECT_EQ(weights_file_problem({path, actual}), "");
  const std::string other = dit::test::random_sha256_hex();
  const std::string mismatch = weights_file_problem({path, other});
  EXPECT_NE(mismatch.find("weights file " + path + " has sha256 " + actual + ", not the expected " + other),
            std::string::npos)
      << mismatch;
  const std::string missing = weights_file_problem({path + ".missing", actual});
  EXPECT_NE(missing.find("weights file " + path + ".missing does not exist (expected sha256 " + actual + ")"),
            std::string::npos)
      << missing;
  fs::remove_all(dir);
}

RenderManifest manifest_of(const std::optional<WeightsUsed>& weights) {
  RenderManifest manifest{"s", "cases.jsonl", "0", "cpu", "fp32", {}};
  manifest.cases["a"].weights = weights;
  return manifest;
}

TEST(WeightsReference, RenderJsonRecordsTheWeightsAndReadsThemBack) {
  const WeightsUsed checkpoint{
      WeightsReference{"/w/" + dit::test::random_sha256_hex() + ".safetensors", dit::test::random_sha256_hex()}, 0};
  const WeightsUsed seeded{std::nullopt, dit::test::fresh_seed()};
  for (const WeightsUsed& used : {checkpoint, seeded}) {
    const nlohmann::json written = manifest_of(used).to_json();
    const RenderManifest read = RenderManifest::from_json(written, "render.json");
    ASSERT_TRUE(read.cases.at("a").weights);
    EXPECT_EQ(read.cases.at("a").weights->checkpoint, used.checkpoint);
    EXPECT_EQ(read.cases.at("a").weights->seed, used.checkpoint ? 0 : used.seed);
    EXPECT_EQ(written.at("cases").at("a").at("weights"), used.to_json());
  }
  EXPECT_FALSE(RenderManifest::from_json(manifest_of(std::nullopt).to_json(), "render.json").cases.at("a").weights);
  nlohmann::json malformed = manifest_of(seeded).to_json();
  malformed["cases"]["a"]["weights"] = {{"path", "x"}, {"sha256", "not hex"}};
  const std::string message = error_of([&] { RenderManifest::from_json(malformed, "r/render.json"); });
  EXPECT_NE(message.find("r/render.json: cases.a: \"weights\" must be"), std::string::npos) << message;
}

TEST(WeightsReference, AGateRefusesOnlyOtherWeightsThanTheBaselines) {
  const Corpus corpus = parse_corpus(case_with(", \"weights_seed\": 4"), "cases.jsonl");
  const std::string hash = dit::test::random_sha256_hex();
  const WeightsUsed file{WeightsReference{"/judge/src/ckpt.safetensors", hash}, 0};
  const WeightsUsed same_bytes_elsewhere{WeightsReference{"/candidate/src/ckpt.safetensors", hash}, 0};
  const WeightsUsed other_bytes{WeightsReference{"/judge/src/ckpt.safetensors", dit::test::random_sha256_hex()}, 0};
  const WeightsUsed seed_4{std::nullopt, 4}, seed_5{std::nullopt, 5};
  struct Row {
    std::string name;
    std::optional<WeightsUsed> golden, candidate;
    bool differs;
  };
  const std::vector<Row> rows = {
      {"same seed", seed_4, seed_4, false},
      {"another seed", seed_4, seed_5, true},
      {"the same bytes at another path", file, same_bytes_elsewhere, false},
      {"other bytes", file, other_bytes, true},
      {"a checkpoint against seeded weights", seed_4, file, true},
      {"seeded weights against a checkpoint", file, seed_4, true},
      // A golden render.json from before weights were recorded: the corpus's seed, 4.
      {"an unrecorded golden and the corpus's seed", std::nullopt, seed_4, false},
      {"an unrecorded golden and another seed", std::nullopt, seed_5, true},
      {"an unrecorded golden and a checkpoint", std::nullopt, file, true},
  };
  for (const Row& row : rows) {
    const std::vector<std::string> differences =
        weights_differences(corpus, manifest_of(row.golden), manifest_of(row.candidate));
    EXPECT_EQ(!differences.empty(), row.differs) << row.name;
    if (row.differs && !differences.empty()) {
      EXPECT_NE(differences[0].find("case a was rendered from " + row.candidate->describe()), std::string::npos)
          << differences[0];
    }
  }
  EXPECT_NE(file.describe().find("/judge/src/ckpt.safetensors (sha256 " + hash + ")"), std::string::npos);
  EXPECT_NE(seed_5.describe().find("weights_seed 5"), std::string::npos) << seed_5.describe();
}

}  // namespace
}  // namespace dit::quality
