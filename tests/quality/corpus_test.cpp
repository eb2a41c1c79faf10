// Corpus parsing: valid lines, every malformed line named by its line number, and the
// committed corpora themselves (spread of cases, consistency with the contract).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "quality/contract.h"
#include "quality/corpus.h"

namespace dit::quality {
namespace {

const std::string kGood =
    R"({"id": "a", "model": "tiny_a", "image_size": 64, "class_label": 1, "seed": 5, "sampler": "ddpm", "steps": 10, "cfg_scale": 4.0, "critical": true, "vae": "tiny"})";

std::string error_of(const std::string& text) {
  try {
    parse_corpus(text, "corpus.jsonl");
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    return error.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

std::string replaced(std::string line, const std::string& from, const std::string& to) {
  line.replace(line.find(from), from.size(), to);
  return line;
}

TEST(Corpus, ParsesCasesSkippingCommentsAndBlankLines) {
  const Corpus corpus =
      parse_corpus("# header\n\n" + kGood + "\n" + replaced(kGood, "\"a\"", "\"b\"") + "\n", "dir/cases_x.jsonl");
  ASSERT_EQ(corpus.cases.size(), 2u);
  EXPECT_EQ(corpus.name, "cases_x.jsonl");
  const Case& a = corpus.at("a");
  EXPECT_EQ(a.line, 3);
  EXPECT_EQ(a.model, "tiny_a");
  EXPECT_EQ(a.image_size, 64);
  EXPECT_EQ(a.class_label, 1);
  EXPECT_EQ(a.seed, 5u);
  EXPECT_EQ(a.sampler, "ddpm");
  EXPECT_EQ(a.steps, 10);
  EXPECT_DOUBLE_EQ(a.cfg_scale, 4.0);
  EXPECT_TRUE(a.critical);
  EXPECT_EQ(a.vae, "tiny");
  EXPECT_EQ(a.batch, 1);  // the default: the case's image alone
  EXPECT_EQ(corpus.at("b").line, 4);
  EXPECT_EQ(corpus.critical_ids(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(corpus.sha256.size(), 64u);
}

TEST(Corpus, NamesTheLineOfEveryMalformedCase) {
  const std::string prefix = "# comment\n" + kGood + "\n";  // the bad case is on line 3
  struct Bad {
    std::string line, expected;
  };
  const std::vector<Bad> cases = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {replaced(kGood, "\"id\": \"a\", ", ""), "missing field \"id\""},
      {replaced(kGood, "\"a\"", "\"a/b\""), "id \"a/b\""},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "\"steps\": 10", "\"steps\": 0"),
       "\"steps\" must be an integer in [1, 1000]"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "\"steps\": 10", "\"steps\": \"10\""),
       "\"steps\" must be an integer"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "ddpm", "euler"), "sampler must be"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "4.0", "0.5"), "cfg_scale"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "\"critical\": true", "\"critical\": 1"),
       "\"critical\" must be true or false"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "64", "60"), "multiple of 8"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "\"seed\": 5", "\"seed\": -5"),
       "\"seed\" must be a non-negative integer"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "\"tiny\"", "\"big\""), "vae must be"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "}", ", \"stpes\": 3}"), "unknown field \"stpes\""},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "}", ", \"batch\": 0}"), "\"batch\" must be an integer in [1, 64]"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "}", ", \"batch\": 65}"), "\"batch\" must be an integer in [1, 64]"},
      {replaced(replaced(kGood, "\"a\"", "\"b\""), "}", ", \"batch\": 2.5}"), "\"batch\" must be an integer"},
  };
  for (const Bad& bad : cases) {
    const std::string message = error_of(prefix + bad.line + "\n");
    EXPECT_NE(message.find("corpus.jsonl:3: "), std::string::npos) << message;
    EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
  }
}

TEST(Corpus, ReadsABatchedCase) {
  const Corpus corpus = parse_corpus(replaced(kGood, "}", ", \"batch\": 32}") + "\n", "corpus.jsonl");
  EXPECT_EQ(corpus.at("a").batch, 32);
}

TEST(Corpus, RejectsDuplicateIdsNamingBothLines) {
  const std::string message = error_of(kGood + "\n" + kGood + "\n");
  EXPECT_NE(message.find("corpus.jsonl:2: id \"a\" already used on line 1"), std::string::npos) << message;
}

TEST(Corpus, RejectsAnEmptyCorpus) { EXPECT_NE(error_of("# only a comment\n\n").find("no cases"), std::string::npos); }

TEST(Corpus, GpuCorpusSpansTheRequiredSettings) {
  const Corpus corpus = load_corpus(DIT_QUALITY_SOURCE_DIR "/cases.jsonl");
  EXPECT_GE(corpus.cases.size(), 8u);
  std::set<int> sizes, labels;
  std::set<std::string> samplers;
  std::set<double> scales;
  std::set<uint64_t> seeds;
  for (const Case& c : corpus.cases) {
    EXPECT_EQ(c.model, "DiT-XL/2") << c.id;
    EXPECT_EQ(c.vae, "sd") << c.id;
    sizes.insert(c.image_size);
    labels.insert(c.class_label);
    samplers.insert(c.sampler + std::to_string(c.steps));
    scales.insert(c.cfg_scale);
    seeds.insert(c.seed);
  }
  EXPECT_EQ(sizes, (std::set<int>{256, 512}));
  EXPECT_EQ(samplers, (std::set<std::string>{"ddpm250", "ddim50"}));
  EXPECT_EQ(scales, (std::set<double>{1.5, 4.0}));
  EXPECT_EQ(labels.size(), corpus.cases.size());
  EXPECT_EQ(seeds.size(), corpus.cases.size());
  EXPECT_GE(corpus.critical_ids().size(), 2u);
}

TEST(Corpus, CommittedCorporaAgreeWithTheContractsCriticalCases) {
  const Contract contract = load_contract(DIT_QUALITY_SOURCE_DIR "/contract.json");
  for (const char* name : {"cases.jsonl", "cases_cpu.jsonl", "cases_fp16_batch.jsonl"}) {
    const Corpus corpus = load_corpus(std::string(DIT_QUALITY_SOURCE_DIR "/") + name);
    std::vector<std::string> listed = contract.critical_cases_of(corpus.name);
    std::vector<std::string> flagged = corpus.critical_ids();
    std::sort(listed.begin(), listed.end());
    std::sort(flagged.begin(), flagged.end());
    EXPECT_EQ(listed, flagged) << name;
    EXPECT_FALSE(flagged.empty()) << name;
  }
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A lane whose objective times N images a request (BM_E2E_Images/image:S/images:N) is gated by a
// corpus with a critical case of S pixels in a request of N images: the rows a pass the lane makes
// faster are the rows its gate scores against the golden and the fp32 reference, not only
// against the best's outputs.
TEST(Corpus, EveryBatchedLaneIsGatedAtItsBatch) {
  std::map<std::string, std::string> corpus_of_set;
  const std::string cmake = text_of(DIT_QUALITY_SOURCE_DIR "/CMakeLists.txt");
  const std::regex gate(R"(dit_add_gate\(SET ([A-Za-z0-9_-]+) CORPUS ([A-Za-z0-9_.]+))");
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), gate); it != std::sregex_iterator(); ++it)
    corpus_of_set[(*it)[1]] = (*it)[2];
  ASSERT_TRUE(corpus_of_set.count("fp16-batch")) << "quality/CMakeLists.txt declares no fp16-batch gate set";

  const nlohmann::json config = nlohmann::json::parse(text_of(DIT_QUALITY_SOURCE_DIR "/../config/autoresearch.json"));
  const std::regex batched(R"(BM_E2E_Images/image:([0-9]+)/images:([0-9]+))");
  int lanes = 0;
  for (const auto& [name, lane] : config.at("lanes").items()) {
    std::smatch shape;
    const std::string objective = lane.at("objective").at("name").get<std::string>();
    if (!std::regex_search(objective, shape, batched)) continue;
    ++lanes;
    std::string set;
    for (const auto& command : lane.at("record_baseline_commands"))
      for (size_t i = 0; i + 1 < command.size(); ++i)
        if (command[i] == "--set") set = command[i + 1];
    ASSERT_TRUE(corpus_of_set.count(set)) << "lane " << name << " records gate set '" << set << "'";
    const Corpus corpus = load_corpus(std::string(DIT_QUALITY_SOURCE_DIR "/") + corpus_of_set.at(set));
    const bool covered = std::any_of(corpus.cases.begin(), corpus.cases.end(), [&](const Case& c) {
      return c.critical && c.image_size == std::stoi(shape[1]) && c.batch == std::stoi(shape[2]);
    });
    EXPECT_TRUE(covered) << "lane " << name << " times " << objective << " but gate set " << set << " (" << corpus.name
                         << ") has no critical case of that size and batch";
  }
  EXPECT_GE(lanes, 1) << "no lane times a batch of images: the check checked nothing";
}

}  // namespace
}  // namespace dit::quality
