// Unit tests of the performance gate (driver/performance_gate.h) and of the benchmark JSON it
// reads (driver/benchmark_json.h): the decision rules on fixed samples, perf-request.json, the
// timed-outputs comparison and the untimed-growth rule on data held in memory, and the whole
// gate run against a scripted benchmark that follows the protocol.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "core/sha256.h"
#include "driver/benchmark_json.h"
#include "driver/config.h"
#include "driver/performance_gate.h"
#include "driver/statistics.h"
#include "tests/support/scratch_directory.h"

namespace fs = std::filesystem;
using namespace dit::ar;

namespace {

nlohmann::json lane_document(const std::string& benchmark = "bench/b", const std::string& name = "BM_X") {
  return {{"configure_preset", "c"},
          {"test_presets", nlohmann::json::array({"c"})},
          {"objective", {{"benchmark", benchmark}, {"name", name}}}};
}

Lane test_lane() {
  Lane lane = lane_from_json(lane_document(), "lane");
  lane.name = "l";
  return lane;
}

// One sample per process, as a benchmark with one entry per run gives.
Measurement samples(std::vector<double> values) {
  Measurement measurement;
  measurement.samples = values;
  measurement.process_medians = std::move(values);
  return measurement;
}

bool has_reason_starting(const std::vector<std::string>& reasons, const std::string& start) {
  for (const auto& reason : reasons) {
    if (reason.rfind(start, 0) == 0) return true;
  }
  return false;
}

std::string all(const std::vector<std::string>& reasons) {
  std::string text;
  for (const auto& reason : reasons) text += reason + "\n";
  return text;
}

// --- In-memory outputs ----------------------------------------------------------------------------

OutputFile bytes_file(const std::string& hash) {
  OutputFile file;
  file.sha256 = hash;
  return file;
}

OutputFile tensor_file(const std::string& hash, std::vector<float> values) {
  OutputFile file;
  file.sha256 = hash;
  file.is_safetensors = true;
  dit::Tensor tensor({static_cast<int64_t>(values.size())});
  tensor.data = std::move(values);
  file.tensors["latent"] = std::move(tensor);
  return file;
}

// `count` images of a bench_e2e-like process: a latent file and a PNG each, identical for the
// same index on both sides.
SideOutputs e2e_outputs(int count) {
  SideOutputs side;
  side.timed_iterations = count;
  for (int i = 0; i < count; ++i) {
    const std::string tag = std::to_string(i);
    side.images[i]["latent.safetensors"] = tensor_file("latent-" + tag, {1.0f + i, 2.0f, 3.0f, 4.0f});
    side.images[i]["png"] = bytes_file("png-" + tag);
  }
  return side;
}

// --- Decision rules (moved from driver_core_test) ----------------------------------------------

TEST(PerformanceGate, NeedsTheIntervalAndTheMinimum) {
  Lane lane = test_lane();
  const SequentialRule rule = sequential_rule(lane.max_rounds);
  Measurement best = samples({10, 10.1, 9.9, 10, 10.2, 9.8, 10, 10.1, 9.9});
  Measurement faster = samples({9, 9.1, 8.9, 9, 9.2, 8.8, 9, 9.1, 8.9});
  GateReport kept = evaluate_performance(lane, rule, 5.0, faster, best, std::nullopt);
  EXPECT_TRUE(kept.passed) << all(kept.reasons);
  EXPECT_EQ(kept.details["interval"]["verdict"], "keep-worthy");
  EXPECT_EQ(kept.details["interval"]["rounds"], 9);
  EXPECT_NEAR(kept.details["interval"]["estimate_percent"].get<double>(), 10.0, 0.5);
  EXPECT_GT(kept.details["interval"]["lower_percent"].get<double>(), 2.5);
  EXPECT_EQ(kept.details["rule"]["first_look"], 4);
  EXPECT_EQ(kept.details["rule"]["first_keep_look"], 5);
  EXPECT_GT(kept.details["p_value"].get<double>(), 0.0);  // reported, not decided on
  GateReport too_small = evaluate_performance(lane, rule, 15.0, faster, best, std::nullopt);
  EXPECT_FALSE(too_small.passed);
  EXPECT_NE(too_small.reasons.front().find("improved only 10%"), std::string::npos) << too_small.reasons.front();
  EXPECT_NE(too_small.reasons.front().find("lies below the minimum"), std::string::npos) << too_small.reasons.front();
  GateReport same = evaluate_performance(lane, rule, 1.0, best, best, std::nullopt);
  EXPECT_FALSE(same.passed);
  EXPECT_NE(same.reasons.front().find("improved only 0%"), std::string::npos) << same.reasons.front();
  GateReport slower = evaluate_performance(lane, rule, 1.0, best, faster, std::nullopt);
  EXPECT_FALSE(slower.passed);
  EXPECT_EQ(slower.reasons.front().rfind("median regressed 11.", 0), 0u) << slower.reasons.front();
  GateReport few = evaluate_performance(lane, rule, 1.0, samples({9, 9}), best, std::nullopt);
  EXPECT_FALSE(few.passed);
  EXPECT_NE(few.reasons.front().find("too few samples"), std::string::npos) << few.reasons.front();
}

TEST(PerformanceGate, GuardrailsAgainstTheBaseline) {
  Lane lane = test_lane();
  const SequentialRule rule = sequential_rule(lane.max_rounds);
  Measurement best = samples(std::vector<double>(9, 10.0));
  Measurement faster = samples({8, 8, 8, 8, 8, 8, 8, 8, 8});
  Summary baseline{7.0, 7.0, std::nullopt, 9};  // faster than this candidate: the total p95 guardrail trips
  GateReport total = evaluate_performance(lane, rule, 5.0, faster, best, baseline);
  EXPECT_FALSE(total.passed);
  EXPECT_NE(total.reasons.front().find("against the baseline"), std::string::npos);
  EXPECT_TRUE(evaluate_performance(lane, rule, 5.0, faster, best, std::nullopt).passed);
}

// --- The sequential rule ------------------------------------------------------------------------

// P(U <= rank - 1) for `rounds` and `rounds`: the level of an interval of that rank.
double rank_level(std::size_t rounds, std::size_t rank) {
  const std::vector<double> null = mann_whitney_null_distribution(rounds, rounds);
  double below = 0.0;
  for (std::size_t u = 0; u < rank; ++u) below += null[u];
  return below;
}

TEST(SequentialRule, ScheduleSpendsTheFalseKeepRateOverItsLooks) {
  const SequentialRule rule = sequential_rule(20);
  // The discard side from 4 rounds (1 / C(8, 4) = 1 / 70 <= 0.025); the keep side at 1 / 252 at 5
  // rounds, none at 6 (1 / 924 would leave less than half of 0.01), then even shares for 7 to 20.
  EXPECT_EQ(rule.first_look, 4);
  EXPECT_EQ(rule.first_keep_look, 5);
  EXPECT_EQ(rule.max_rounds, 20);
  ASSERT_EQ(rule.looks.size(), 17u);
  EXPECT_EQ(rule.at(4).keep_rank, 0u);
  EXPECT_EQ(rule.at(4).discard_rank, 1u);
  EXPECT_NEAR(rule.at(5).keep_alpha * 252, 1.0, 1e-8);
  EXPECT_EQ(rule.at(5).keep_rank, 1u);
  EXPECT_EQ(rule.at(6).keep_rank, 0u);
  const double share = (0.01 - 1.0 / 252) / 14;
  double spent = 0.0;
  for (const LookLevels& look : rule.looks) {
    SCOPED_TRACE(look.rounds);
    spent += look.keep_alpha;
    if (look.rounds >= 7) EXPECT_NEAR(look.keep_alpha / share, 1.0, 1e-8);
    const auto rounds = static_cast<std::size_t>(look.rounds);
    // Each interval's rank holds its level and is the widest that does.
    if (look.keep_rank > 0) {
      EXPECT_LE(rank_level(rounds, look.keep_rank), look.keep_alpha);
      EXPECT_GT(rank_level(rounds, look.keep_rank + 1), look.keep_alpha);
    }
    EXPECT_DOUBLE_EQ(look.discard_alpha, 0.025);
    ASSERT_GT(look.discard_rank, 0u);
    EXPECT_LE(rank_level(rounds, look.discard_rank), 0.025);
    EXPECT_GT(rank_level(rounds, look.discard_rank + 1), 0.025);
    EXPECT_GE(look.discard_rank, look.keep_rank);  // never wider than the keep interval
  }
  EXPECT_LE(spent, 0.01 * (1 + 1e-6));  // Bonferroni: the looks together
  EXPECT_GE(spent, 0.01 * (1 - 1e-6));
  EXPECT_EQ(sequential_rule(9).first_keep_look, 5);  // 1 / 252, then 4 even shares of 0.0015
  EXPECT_NEAR(sequential_rule(9).at(6).keep_alpha / ((0.01 - 1.0 / 252) / 4), 1.0, 1e-8);
  EXPECT_EQ(sequential_rule(20, 0.05).first_keep_look, 4);
  EXPECT_THROW(sequential_rule(4), dit::Error);  // 1 / C(8, 4) = 1 / 70 > 0.005
  EXPECT_THROW(sequential_rule(20, 0.0), dit::Error);
  EXPECT_THROW(sequential_rule(20, 0.01, 0.5), dit::Error);
}

TEST(SequentialRule, ShiftIntervalOfRanks) {
  // Differences of {1, 2, 4} and {0, 1}: 1 0 2 1 4 3, sorted 0 1 1 2 3 4.
  ShiftInterval interval = shift_interval({1, 2, 4}, {0, 1}, 2);
  EXPECT_DOUBLE_EQ(interval.estimate, 1.5);
  EXPECT_DOUBLE_EQ(interval.lower, 1.0);
  EXPECT_DOUBLE_EQ(interval.upper, 3.0);
  EXPECT_DOUBLE_EQ(shift_interval({1, 2, 4}, {0, 1}, 3).upper, 2.0);
  EXPECT_THROW(shift_interval({1, 2, 4}, {0, 1}, 4), dit::Error);
  EXPECT_THROW(shift_interval({1}, {}, 1), dit::Error);
  // The null distribution: 3 and 3 give 1 1 2 3 3 3 3 2 1 1 (of 20).
  const std::vector<double> null = mann_whitney_null_distribution(3, 3);
  const std::vector<double> counts{1, 1, 2, 3, 3, 3, 3, 2, 1, 1};
  ASSERT_EQ(null.size(), counts.size());
  for (std::size_t u = 0; u < counts.size(); ++u) EXPECT_NEAR(null[u], counts[u] / 20.0, 1e-15) << u;
  EXPECT_EQ(shift_interval_rank(3, 3, 0.049), 0u);
  EXPECT_EQ(shift_interval_rank(3, 3, 0.05), 1u);
  EXPECT_EQ(shift_interval_rank(3, 3, 0.1), 2u);
  EXPECT_EQ(shift_interval_rank(3, 3, 0.49), 4u);
  // Large samples stay exact in the tails: P(U = 0) = 1 / C(200, 100).
  const std::vector<double> large = mann_whitney_null_distribution(100, 100);
  EXPECT_NEAR(large[0] / std::exp(-std::lgamma(201.0) + 2.0 * std::lgamma(101.0)), 1.0, 1e-9);
  EXPECT_NEAR(large[1] / large[0], 1.0, 1e-9);
  EXPECT_NEAR(large[2] / large[0], 2.0, 1e-9);
}

// A side measured `rounds` times at `value` x (1 + spread x (i - rounds/2) / rounds).
Measurement spread_samples(double value, double spread, int rounds) {
  std::vector<double> values;
  for (int i = 0; i < rounds; ++i) values.push_back(value * (1.0 + spread * (i - rounds / 2.0) / rounds));
  return samples(values);
}

TEST(SequentialRule, LookVerdicts) {
  const SequentialRule rule = sequential_rule(20);
  struct Case {
    std::string name;
    double candidate, spread, minimum;
    Direction direction;
    Verdict verdict;
  };
  // The candidate 3% faster, each side spread over `spread` of its value.
  const std::vector<Case> cases = {
      {"3% faster, tight: keep-worthy at 2%", 97.0, 0.005, 2.0, Direction::lower, Verdict::keep_worthy},
      {"3% faster, tight: cannot reach 4%", 97.0, 0.005, 4.0, Direction::lower, Verdict::cannot_reach_minimum},
      {"3% faster, tight: 3.1% is within the interval", 97.0, 0.005, 3.1, Direction::lower, Verdict::unsettled},
      {"3% faster, wide: the lower end below half of 2%", 97.0, 0.05, 2.0, Direction::lower, Verdict::unsettled},
      {"3% slower: cannot reach 1%", 103.0, 0.005, 1.0, Direction::lower, Verdict::cannot_reach_minimum},
      {"3% higher is better: keep-worthy", 103.0, 0.005, 2.0, Direction::higher, Verdict::keep_worthy},
      {"identical, a minimum of 0: never shown", 100.0, 0.0, 0.0, Direction::lower, Verdict::unsettled},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Look look = look_at(rule, c.direction, c.minimum, spread_samples(c.candidate, c.spread, 9),
                        spread_samples(100.0, c.spread, 9));
    EXPECT_TRUE(look.has_interval);
    EXPECT_TRUE(look.has_discard_interval);
    EXPECT_EQ(look.rounds, 9);
    EXPECT_EQ(look.verdict, c.verdict) << look.to_json().dump();
    EXPECT_LE(look.lower_percent, look.discard_lower_percent);  // the discard interval lies inside
    EXPECT_LE(look.discard_lower_percent, look.estimate_percent);
    EXPECT_LE(look.estimate_percent, look.discard_upper_percent);
    EXPECT_LE(look.discard_upper_percent, look.upper_percent);
    const double improvement = c.direction == Direction::lower ? 100.0 - c.candidate : c.candidate - 100.0;
    EXPECT_NEAR(look.estimate_percent, improvement, 1e-9);
  }
  // Before the first keep look only the discard interval; none before the first look, past
  // max_rounds, with unequal sides or a value <= 0.
  const Look four = look_at(rule, Direction::lower, 1.0, spread_samples(110, 0, 4), spread_samples(100, 0, 4));
  EXPECT_TRUE(four.has_discard_interval);
  EXPECT_FALSE(four.has_interval);
  EXPECT_EQ(four.verdict, Verdict::cannot_reach_minimum);
  const Look faster_four = look_at(rule, Direction::lower, 1.0, spread_samples(90, 0, 4), spread_samples(100, 0, 4));
  EXPECT_EQ(faster_four.verdict, Verdict::unsettled);  // no KEEP before 5 rounds
  EXPECT_FALSE(look_at(rule, Direction::lower, 1.0, spread_samples(90, 0, 3), spread_samples(100, 0, 3)).has_estimate);
  EXPECT_FALSE(
      look_at(rule, Direction::lower, 1.0, spread_samples(90, 0, 21), spread_samples(100, 0, 21)).has_estimate);
  EXPECT_FALSE(look_at(rule, Direction::lower, 1.0, spread_samples(90, 0, 8), spread_samples(100, 0, 9)).has_estimate);
  EXPECT_FALSE(
      look_at(rule, Direction::lower, 1.0, samples({0, 1, 1, 1, 1, 1, 1}), spread_samples(1, 0, 7)).has_estimate);
}

TEST(SequentialRule, MeasuresUntilSettled) {
  const SequentialRule rule = sequential_rule(20);
  // Rounds of values `candidate` and `best` (with a little alternating spread), counting calls.
  auto rounds_of = [&](double candidate_value, double best_value, double minimum, int fail_at = -1,
                       double spread = 0.001) {
    Measurement candidate;
    Measurement best;
    int calls = 0;
    SequentialRun run = measure_sequentially(rule, Direction::lower, minimum, candidate, best,
                                             [&](int round, Measurement& c, Measurement& b) {
                                               EXPECT_EQ(round, calls++);
                                               const double wiggle = round % 2 == 0 ? 1.0 + spread : 1.0 - spread;
                                               c.process_medians.push_back(candidate_value * wiggle);
                                               b.process_medians.push_back(best_value / wiggle);
                                               return round != fail_at;
                                             });
    EXPECT_EQ(run.rounds, calls);
    return run;
  };
  SequentialRun faster = rounds_of(90, 100, 5.0);
  EXPECT_EQ(faster.rounds, 5);
  EXPECT_EQ(faster.stopping_reason, "settled: keep-worthy");
  ASSERT_EQ(faster.looks.size(), 2u);
  EXPECT_EQ(faster.to_json()["looks"][0]["verdict"], "unsettled");  // 4 rounds: no KEEP yet
  EXPECT_EQ(faster.to_json()["looks"][1]["verdict"], "keep-worthy");
  SequentialRun slower = rounds_of(110, 100, 5.0);
  EXPECT_EQ(slower.rounds, 4);
  EXPECT_EQ(slower.stopping_reason, "settled: cannot reach the minimum");
  // A 5% gain, each side spread by 3%, against a 4.9% minimum: at every look a quarter of the
  // pairs show -0.8%, half 5% and a quarter 10.6%, so the estimate (5%) reaches the minimum and
  // the upper ends are above it, while every keep interval's lower end is -0.8%.
  SequentialRun close = rounds_of(95, 100, 4.9, -1, 0.03);
  EXPECT_EQ(close.rounds, 20);
  EXPECT_EQ(close.stopping_reason, "unsettled after max_rounds");
  EXPECT_EQ(close.looks.size(), 17u);
  SequentialRun failed = rounds_of(90, 100, 5.0, 3);
  EXPECT_EQ(failed.rounds, 4);
  EXPECT_EQ(failed.stopping_reason, "round 3 failed its checks");
  EXPECT_TRUE(failed.looks.empty());
  // A round that leaves a side without a value stops the run: no look could use it.
  Measurement candidate;
  Measurement best;
  SequentialRun empty =
      measure_sequentially(rule, Direction::lower, 1.0, candidate, best, [](int, Measurement& c, Measurement&) {
        c.process_medians.push_back(1.0);
        return true;
      });
  EXPECT_EQ(empty.rounds, 1);
  EXPECT_EQ(empty.stopping_reason, "round 0 measured no best sample");
}

TEST(PerformanceGate, SeveralSamplesOfAProcessCountAsOne) {
  Lane lane = test_lane();
  auto entry_of = [](double milliseconds) {
    BenchmarkEntry entry;
    entry.name = "BM_X/manual_time";
    entry.run_name = "BM_X/manual_time";
    entry.run_type = "iteration";
    entry.iterations = 1;
    entry.real_time = milliseconds;
    entry.time_unit = "ms";
    return entry;
  };
  Measurement measurement;
  add_run(measurement, {entry_of(10), entry_of(13), entry_of(11)}, lane);
  add_run(measurement, {entry_of(20)}, lane);
  BenchmarkEntry aggregate = entry_of(99);
  aggregate.run_type = "aggregate";
  add_run(measurement, {aggregate}, lane);  // nothing of the objective: no process value
  EXPECT_EQ(measurement.samples, (std::vector<double>{10, 13, 11, 20}));
  EXPECT_EQ(measurement.process_medians, (std::vector<double>{11, 20}));
}

TEST(PerformanceGate, NoiseIsTheLargerOfMedianShiftAndSpread) {
  Lane lane = test_lane();
  GateReport report = evaluate_noise(lane, samples({10, 10, 10, 10, 10, 10, 10, 10, 10.5}),
                                     samples({10.2, 10.2, 10.2, 10.2, 10.2, 10.2, 10.2, 10.2, 10.2}));
  EXPECT_TRUE(report.passed);
  EXPECT_NEAR(report.details["noise_percent"].get<double>(), 0.2 / 10.2 * 100.0, 1e-9);
}

TEST(PerformanceGate, MinimumIsRaisedToTwiceTheNoise) {
  EXPECT_DOUBLE_EQ(effective_min_improvement_percent(1.0, 0.3), 1.0);
  EXPECT_DOUBLE_EQ(effective_min_improvement_percent(1.0, 0.8), 1.6);
  EXPECT_DOUBLE_EQ(effective_min_improvement_percent(0.0, 0.0), 0.0);
}

TEST(PerformanceGate, NoiseAboveTheCapRefusesTheBaseline) {
  Lane lane = test_lane();
  lane.min_improvement_percent = 1.0;
  lane.max_min_improvement_percent = 10.0;
  struct Case {
    double noise;
    bool refused;
  };
  for (const Case& c : std::vector<Case>{{0.0, false}, {4.9, false}, {5.0, false}, {5.01, true}, {553.0, true}}) {
    auto problem = noise_cap_problem(lane, c.noise);
    EXPECT_EQ(problem.has_value(), c.refused) << c.noise;
    if (problem) {
      EXPECT_NE(problem->find("max_min_improvement_percent"), std::string::npos) << *problem;
      EXPECT_NE(problem->find("dit-ar baseline"), std::string::npos) << *problem;
    }
  }
  // The cap is read from the lane, defaults to 10% (or the lane's own minimum when higher), and
  // may not lie below the minimum.
  nlohmann::json document = lane_to_json(lane, 1.0);
  EXPECT_DOUBLE_EQ(lane_from_json(document, "lane").max_min_improvement_percent, 10.0);
  document.erase("max_min_improvement_percent");
  document["min_improvement_percent"] = 20.0;
  EXPECT_DOUBLE_EQ(lane_from_json(document, "lane").max_min_improvement_percent, 20.0);
  document["max_min_improvement_percent"] = 5.0;
  EXPECT_THROW(lane_from_json(document, "lane"), dit::Error);
}

TEST(PerformanceGate, MaxRoundsIsReadAndBounded) {
  nlohmann::json document = lane_document();
  EXPECT_EQ(lane_from_json(document, "lane").max_rounds, 20);
  document["max_rounds"] = 9;
  const Lane lane = lane_from_json(document, "lane");
  EXPECT_EQ(lane.max_rounds, 9);
  EXPECT_EQ(lane_from_json(lane_to_json(lane, 1.0), "lane").max_rounds, 9);  // as perf-request.json carries it
  struct Case {
    nlohmann::json value;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{{8, "lane.max_rounds: must be at least 9"},
                                         {101, "lane.max_rounds: must be at most 100"},
                                         {12.5, "lane.max_rounds: must be an integer"},
                                         {"20", "lane.max_rounds: must be an integer"},
                                         {4294967316ll, "lane.max_rounds: must be at most"}}) {
    document["max_rounds"] = c.value;
    try {
      lane_from_json(document, "lane");
      ADD_FAILURE() << c.value << " accepted";
    } catch (const dit::Error& error) {
      EXPECT_NE(std::string(error.what()).find(c.message), std::string::npos) << error.what();
    }
  }
}

// --- Timed outputs ------------------------------------------------------------------------------

struct OutputCase {
  std::string name;
  std::function<void(SideOutputs& candidate, SideOutputs& best)> change;
  OutputRule rule;
  bool passes;
  std::string reason_start;  // of a reason, when it fails
  std::size_t compared;      // images compared
};

TEST(TimedOutputs, ComparisonRules) {
  const OutputRule exact{true, 1e-2};
  const OutputRule tolerant{false, 1e-2};
  const std::string differ = "timed outputs differ from the best's";
  const std::string invalid = "timed outputs invalid: the candidate";
  const std::vector<OutputCase> cases = {
      {"identical outputs pass", [](SideOutputs&, SideOutputs&) {}, exact, true, "", 5},
      {"identical outputs pass under a tolerance", [](SideOutputs&, SideOutputs&) {}, tolerant, true, "", 5},
      {"one byte differing in image 3 fails",
       [](SideOutputs& candidate, SideOutputs&) { candidate.images[3]["png"].sha256 = "png-3-one-byte-off"; }, exact,
       false, differ, 5},
      {"a differing PNG is not compared under a tolerance",
       [](SideOutputs& candidate, SideOutputs&) { candidate.images[3]["png"].sha256 = "png-3-one-byte-off"; }, tolerant,
       true, "", 5},
      {"a file the best did not write fails",
       [](SideOutputs& candidate, SideOutputs&) { candidate.images[2]["extra"] = bytes_file("x"); }, exact, false,
       differ, 5},
      {"a missing image fails",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images.erase(2);
         candidate.timed_iterations = 4;
       },
       exact, false, invalid, 4},
      {"a missing last image fails the count", [](SideOutputs& candidate, SideOutputs&) { candidate.images.erase(4); },
       exact, false, invalid, 4},
      {"no images fail",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images.clear();
         candidate.timed_iterations = 0;
       },
       exact, false, invalid, 0},
      {"more timed iterations than images fail",
       [](SideOutputs& candidate, SideOutputs&) { candidate.timed_iterations = 6; }, exact, false, invalid, 5},
      {"more images than timed iterations fail",
       [](SideOutputs& candidate, SideOutputs&) { candidate.timed_iterations = 4; }, exact, false, invalid, 5},
      {"a broken best is named too", [](SideOutputs&, SideOutputs& best) { best.timed_iterations = 7; }, exact, false,
       "timed outputs invalid: the best", 5},
      {"a stray image-* file fails",
       [](SideOutputs& candidate, SideOutputs&) { candidate.unexpected = {"image-07.png"}; }, exact, false, invalid, 5},
      {"more images on one side: the common ones are compared",
       [](SideOutputs& candidate, SideOutputs&) { candidate = e2e_outputs(8); }, exact, true, "", 5},
      {"within the tolerance passes",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images[1]["latent.safetensors"] = tensor_file("other", {2.0f, 2.0f, 3.0f, 4.01f});
       },
       tolerant, true, "", 5},
      {"within the tolerance is still not byte-identical",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images[1]["latent.safetensors"] = tensor_file("other", {2.0f, 2.0f, 3.0f, 4.01f});
       },
       exact, false, differ, 5},
      {"beyond the tolerance fails",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images[1]["latent.safetensors"] = tensor_file("other", {2.0f, 2.0f, 3.0f, 4.5f});
       },
       tolerant, false, differ, 5},
      {"NaN fails any tolerance",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images[1]["latent.safetensors"] =
             tensor_file("other", {2.0f, 2.0f, 3.0f, std::numeric_limits<float>::quiet_NaN()});
       },
       OutputRule{false, 1e9}, false, differ, 5},
      {"a shape change fails",
       [](SideOutputs& candidate, SideOutputs&) {
         candidate.images[0]["latent.safetensors"] = tensor_file("other", {1.0f, 2.0f, 3.0f});
       },
       tolerant, false, differ, 5},
      {"an unreadable safetensors file fails under a tolerance",
       [](SideOutputs& candidate, SideOutputs&) {
         OutputFile broken;
         broken.sha256 = "broken";
         broken.is_safetensors = true;
         broken.unreadable = "header too short";
         candidate.images[0]["latent.safetensors"] = broken;
       },
       tolerant, false, differ, 5},
      {"a missing safetensors file fails under a tolerance",
       [](SideOutputs& candidate, SideOutputs&) { candidate.images[4].erase("latent.safetensors"); }, tolerant, false,
       differ, 5},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SideOutputs candidate = e2e_outputs(5);
    SideOutputs best = e2e_outputs(5);
    c.change(candidate, best);
    OutputComparison comparison = compare_outputs(candidate, best, c.rule);
    EXPECT_EQ(comparison.passed(), c.passes) << all(comparison.reasons);
    EXPECT_EQ(comparison.images_compared, c.compared);
    if (!c.passes) {
      EXPECT_TRUE(has_reason_starting(comparison.reasons, c.reason_start)) << all(comparison.reasons);
    }
  }
}

TEST(TimedOutputs, NamesTheFirstDifferingImage) {
  SideOutputs candidate = e2e_outputs(5);
  SideOutputs best = e2e_outputs(5);
  candidate.images[3]["latent.safetensors"].sha256 = "flipped";
  OutputComparison comparison = compare_outputs(candidate, best, OutputRule{});
  ASSERT_EQ(comparison.reasons.size(), 1u);
  EXPECT_NE(comparison.reasons[0].find("1 of 5 images"), std::string::npos) << comparison.reasons[0];
  EXPECT_NE(comparison.reasons[0].find("image-3.latent.safetensors is not byte-identical"), std::string::npos)
      << comparison.reasons[0];
  EXPECT_EQ(comparison.differing, (std::vector<std::uint64_t>{3}));
}

TEST(TimedOutputs, RuleFollowsTheClassification) {
  Objective objective;
  EXPECT_TRUE(output_rule("exact", objective).exact);
  objective.output_tolerance = 0.05;
  for (const char* classification : {"numerical", "approximate", "quantization"}) {
    OutputRule rule = output_rule(classification, objective);
    EXPECT_FALSE(rule.exact) << classification;
    EXPECT_DOUBLE_EQ(rule.tolerance, 0.05);
  }
  EXPECT_DOUBLE_EQ(Objective{}.output_tolerance, 1e-2);
  EXPECT_DOUBLE_EQ(Objective{}.max_untimed_growth_seconds, 0.5);
  // exact: byte-identical unless the lane allows an exact restatement's rounding.
  EXPECT_DOUBLE_EQ(Objective{}.exact_output_tolerance, 0.0);
  objective.exact_output_tolerance = 2e-5;
  const OutputRule exact = output_rule("exact", objective);
  EXPECT_FALSE(exact.exact);
  EXPECT_DOUBLE_EQ(exact.tolerance, 2e-5);
  EXPECT_DOUBLE_EQ(output_rule("numerical", objective).tolerance, 0.05);
}

TEST(TimedOutputs, RelativeL2) {
  dit::Tensor reference({4});
  reference.data = {3.0f, 0.0f, 4.0f, 0.0f};  // norm 5
  dit::Tensor candidate = reference;
  EXPECT_DOUBLE_EQ(relative_l2(candidate, reference), 0.0);
  candidate.data[1] = 0.5f;
  EXPECT_NEAR(relative_l2(candidate, reference), 0.1, 1e-12);
  dit::Tensor zero({4});
  EXPECT_DOUBLE_EQ(relative_l2(zero, zero), 0.0);
  EXPECT_TRUE(std::isinf(relative_l2(candidate, zero)));
  candidate.data[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(relative_l2(candidate, reference)));
}

TEST(TimedOutputs, ImageFileNames) {
  using Parsed = std::optional<std::pair<std::uint64_t, std::string>>;
  EXPECT_EQ(parse_image_file_name("image-0.png"), Parsed(std::make_pair(0, "png")));
  EXPECT_EQ(parse_image_file_name("image-12.latent.safetensors"), Parsed(std::make_pair(12, "latent.safetensors")));
  EXPECT_EQ(parse_image_file_name("image-18446744073709551615.x"),
            Parsed(std::make_pair(std::numeric_limits<std::uint64_t>::max(), "x")));
  for (const char* bad : {"image-.png", "image-01.png", "image-1", "image-1.", "image-x.png", "image--1.png",
                          "image-18446744073709551616.x", "picture-1.png", "image-1e3.png"}) {
    EXPECT_EQ(parse_image_file_name(bad), std::nullopt) << bad;
  }
}

TEST(TimedOutputs, ReadsAndDeletesTheImageFilesOfAFolder) {
  dit::test::ScratchDirectory scratch;
  const fs::path dir = scratch.path();
  dit::Tensor latent({1, 2});
  latent.data = {0.25f, -1.0f};
  dit::write_safetensors((dir / "image-0.latent.safetensors").string(), {{"latent", latent}}, {{"case", "image-0"}});
  dit::write_file_atomic(dir / "image-0.png", "png bytes");
  dit::write_file_atomic(dir / "image-1.latent.safetensors", "not a safetensors file");
  dit::write_file_atomic(dir / "benchmark.json", "{}");
  fs::create_symlink(dir / "image-0.png", dir / "image-2.png");

  SideOutputs outputs = read_outputs(dir, 3);
  EXPECT_EQ(outputs.timed_iterations, 3);
  ASSERT_EQ(outputs.images.size(), 2u);
  const OutputFile& read = outputs.images.at(0).at("latent.safetensors");
  EXPECT_TRUE(read.is_safetensors);
  EXPECT_EQ(read.tensors.at("latent").data, latent.data);
  EXPECT_EQ(read.sha256, dit::sha256_file((dir / "image-0.latent.safetensors").string()));
  EXPECT_FALSE(outputs.images.at(0).at("png").is_safetensors);
  EXPECT_FALSE(outputs.images.at(1).at("latent.safetensors").unreadable.empty());
  EXPECT_EQ(outputs.unexpected, (std::vector<std::string>{"image-2.png"}));  // a link is never followed

  delete_outputs(dir);
  std::set<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) left.insert(entry.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"benchmark.json"}));
}

// --- Untimed growth -----------------------------------------------------------------------------

TEST(UntimedGrowth, LimitIsTheAllowanceAndATenthOfTheBest) {
  struct Case {
    std::string name;
    std::vector<double> candidate, best;
    double allowance;
    bool passes;
  };
  const std::vector<Case> cases = {
      {"the same untimed time passes", {2.0, 2.1, 1.9}, {2.0, 2.1, 1.9}, 0.5, true},
      {"less untimed time passes", {1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}, 0.5, true},
      {"growth within the allowance passes", {2.6, 2.7, 2.6}, {2.0, 2.0, 2.0}, 0.5, true},  // 0.6 <= 0.5 + 0.2
      {"growth beyond the allowance fails", {2.8, 2.8, 2.9}, {2.0, 2.0, 2.0}, 0.5, false},  // 0.8 > 0.7
      {"medians, not single outliers", {2.0, 2.0, 9.0}, {2.0, 2.0, 2.0}, 0.5, true},
      {"a zero allowance leaves the tenth", {10.9, 10.9, 10.9}, {10.0, 10.0, 10.0}, 0.0, true},
      {"a zero allowance and a tenth exceeded", {11.2, 11.2, 11.2}, {10.0, 10.0, 10.0}, 0.0, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    UntimedGrowth growth = check_untimed_growth(c.candidate, c.best, c.allowance);
    EXPECT_EQ(growth.passed, c.passes);
    if (!c.passes) {
      EXPECT_EQ(growth.reason.rfind("untimed time grew", 0), 0u) << growth.reason;
    }
    EXPECT_TRUE(growth.passed == growth.reason.empty());
  }
  UntimedGrowth growth = check_untimed_growth({2.8}, {2.0}, 0.5);
  EXPECT_NEAR(growth.growth, 0.8, 1e-12);
  EXPECT_NEAR(growth.limit, 0.7, 1e-12);
}

// --- Benchmark JSON -----------------------------------------------------------------------------

nlohmann::json entry(const std::string& name, std::int64_t iterations, double real_time_ms,
                     std::optional<double> timed_images = std::nullopt, std::optional<double> timed_seconds = {}) {
  nlohmann::json document{{"name", name + "/manual_time"},
                          {"run_name", name + "/manual_time"},
                          {"run_type", "iteration"},
                          {"iterations", iterations},
                          {"real_time", real_time_ms},
                          {"cpu_time", 0.1},
                          {"time_unit", "ms"}};
  if (timed_images) document["timed_images"] = *timed_images;
  if (timed_seconds) document["timed_seconds"] = *timed_seconds;
  return document;
}

TEST(BenchmarkJson, TimedTotalsSumTheObjectiveEntries) {
  nlohmann::json document{{"benchmarks",
                           {entry("BM_X", 3, 10.0),
                            entry("BM_X", 2, 20.0),
                            entry("BM_Other", 100, 1.0),
                            {{"name", "BM_X/manual_time_mean"},
                             {"run_name", "BM_X/manual_time"},
                             {"run_type", "aggregate"},
                             {"iterations", 3},
                             {"real_time", 15.0},
                             {"time_unit", "ms"}}}}};
  std::vector<BenchmarkEntry> entries = parse_benchmark_json(document, "b.json");
  EXPECT_EQ(entries[0].iterations, 3);
  TimedTotals totals = timed_totals(entries, "BM_X");
  EXPECT_EQ(totals.entries, 2u);
  EXPECT_EQ(totals.iterations, 5);
  EXPECT_NEAR(totals.seconds, 3 * 0.010 + 2 * 0.020, 1e-12);
  EXPECT_FALSE(totals.from_counters);
  EXPECT_EQ(timed_totals(entries, "BM_None").iterations, 0);
}

TEST(BenchmarkJson, TimedTotalsPreferTheHarnessCountersWhichIncludeCalibrationRuns) {
  // Two repetitions of 3 iterations after calibration runs of 1 and 10: the harness counts
  // all 17 timed images of the process.
  nlohmann::json document{{"benchmarks", {entry("BM_X", 3, 10.0, 14.0, 0.15), entry("BM_X", 3, 10.0, 17.0, 0.18)}}};
  TimedTotals totals = timed_totals(parse_benchmark_json(document, "b.json"), "BM_X");
  EXPECT_TRUE(totals.from_counters);
  EXPECT_EQ(totals.iterations, 17);
  EXPECT_DOUBLE_EQ(totals.seconds, 0.18);
  // An entry without them: the sums of the entries.
  document["benchmarks"].push_back(entry("BM_X", 3, 10.0));
  totals = timed_totals(parse_benchmark_json(document, "b.json"), "BM_X");
  EXPECT_FALSE(totals.from_counters);
  EXPECT_EQ(totals.iterations, 9);
}

// --- perf-request.json ----------------------------------------------------------------------------

nlohmann::json request_document() {
  return {{"lane", lane_to_json(test_lane(), 2.0)},
          {"mode", "compare"},
          {"min_improvement_percent", 2.0},
          {"classification", "numerical"},
          {"baseline_performance", "/state/baseline/performance.json"},
          {"report", "/state/runs/0003-x/judge/gates/performance.json"},
          {"candidate",
           {{"build_dir", "/state/candidate/src/build/cpu"},
            {"outputs_dir", "/state/runs/0003-x/judge/perf/candidate"},
            {"command_prefix", {"bwrap", "--unshare-net", "--"}},
            {"environment", {{"CUDA_CACHE_PATH", "/state/candidate/cuda-cache"}}}}},
          {"best",
           {{"build_dir", "/state/best/src/build/cpu"},
            {"outputs_dir", "/state/runs/0003-x/judge/perf/best"},
            {"command_prefix", nlohmann::json::array()},
            {"environment", nlohmann::json::object()}}}};
}

TEST(PerfRequest, ReadsEveryField) {
  PerfRequest request = parse_perf_request(request_document(), "perf-request.json");
  EXPECT_EQ(request.lane.objective.name, "BM_X");
  EXPECT_FALSE(request.noise);
  EXPECT_DOUBLE_EQ(request.min_improvement_percent, 2.0);
  EXPECT_EQ(request.classification, "numerical");
  EXPECT_EQ(request.baseline_performance, fs::path("/state/baseline/performance.json"));
  EXPECT_EQ(request.report, fs::path("/state/runs/0003-x/judge/gates/performance.json"));
  EXPECT_EQ(request.candidate.command_prefix, (std::vector<std::string>{"bwrap", "--unshare-net", "--"}));
  EXPECT_EQ(request.candidate.environment.at("CUDA_CACHE_PATH"), "/state/candidate/cuda-cache");
  EXPECT_TRUE(request.best.command_prefix.empty());
  EXPECT_EQ(request.best.build_dir, fs::path("/state/best/src/build/cpu"));

  nlohmann::json minimal = request_document();
  minimal["mode"] = "noise";
  for (const char* key : {"min_improvement_percent", "classification", "baseline_performance"}) minimal.erase(key);
  minimal["candidate"].erase("command_prefix");
  minimal["candidate"].erase("environment");
  request = parse_perf_request(minimal, "perf-request.json");
  EXPECT_TRUE(request.noise);
  EXPECT_EQ(request.classification, "exact");
  EXPECT_EQ(request.baseline_performance, std::nullopt);
  EXPECT_DOUBLE_EQ(request.min_improvement_percent, 2.0);  // the lane's (effective) minimum
  EXPECT_TRUE(request.candidate.command_prefix.empty());
}

TEST(PerfRequest, NamesWhatIsMalformed) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> change;
    std::string message;  // part of the error
  };
  const std::vector<Case> cases = {
      {"not an object", [](nlohmann::json& d) { d = nlohmann::json::array(); }, "must be a JSON object"},
      {"no lane", [](nlohmann::json& d) { d.erase("lane"); }, "lane: missing"},
      {"a bad lane", [](nlohmann::json& d) { d["lane"]["objective"].erase("name"); }, "lane.objective.name"},
      {"a bad mode", [](nlohmann::json& d) { d["mode"] = "fast"; }, "mode: 'fast' is not compare or noise"},
      {"no mode", [](nlohmann::json& d) { d.erase("mode"); }, "mode: missing"},
      {"a bad classification", [](nlohmann::json& d) { d["classification"] = "lossy"; }, "classification: 'lossy'"},
      {"a negative minimum", [](nlohmann::json& d) { d["min_improvement_percent"] = -1; }, "min_improvement_percent"},
      {"a relative report", [](nlohmann::json& d) { d["report"] = "gates/performance.json"; },
       "report: must be an absolute path"},
      {"no best", [](nlohmann::json& d) { d.erase("best"); }, "best: missing"},
      {"no build dir", [](nlohmann::json& d) { d["candidate"].erase("build_dir"); }, "candidate.build_dir: missing"},
      {"a relative outputs dir", [](nlohmann::json& d) { d["best"]["outputs_dir"] = "perf/best"; },
       "best.outputs_dir: must be an absolute path"},
      {"a prefix that is not a list", [](nlohmann::json& d) { d["candidate"]["command_prefix"] = "bwrap"; },
       "candidate.command_prefix: must be a list"},
      {"an environment value that is not a string", [](nlohmann::json& d) { d["candidate"]["environment"]["X"] = 1; },
       "candidate.environment.X: must be a string"},
      {"a misspelt field", [](nlohmann::json& d) { d["candidate"]["command_prefx"] = nlohmann::json::array(); },
       "candidate.command_prefx: unknown field"},
      {"an unknown top-level field", [](nlohmann::json& d) { d["extra"] = 1; }, "extra: unknown field"},
      {"one outputs dir for both", [](nlohmann::json& d) { d["best"]["outputs_dir"] = d["candidate"]["outputs_dir"]; },
       "must differ from candidate.outputs_dir"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json document = request_document();
    c.change(document);
    try {
      parse_perf_request(document, "perf-request.json");
      ADD_FAILURE() << "accepted";
    } catch (const dit::Error& error) {
      EXPECT_NE(std::string(error.what()).find(c.message), std::string::npos) << error.what();
      EXPECT_EQ(std::string(error.what()).rfind("perf-request.json", 0), 0u) << error.what();
    }
  }
}

TEST(PerfRequest, BenchmarkCommandFollowsTheProtocol) {
  PerfRequest request = parse_perf_request(request_document(), "perf-request.json");
  request.lane.objective.arguments = {"--benchmark_filter=^BM_X$"};
  const fs::path round_dir = request.candidate.outputs_dir / "4";
  EXPECT_EQ(
      benchmark_command(request.candidate, request.lane, round_dir, 18446744073709551615ull),
      (std::vector<std::string>{
          "bwrap", "--unshare-net", "--", "/state/candidate/src/build/cpu/bench/b", "--benchmark_filter=^BM_X$",
          "--benchmark_out=/state/runs/0003-x/judge/perf/candidate/4/benchmark.json", "--benchmark_out_format=json",
          "--request-seed=18446744073709551615", "--outputs-dir=/state/runs/0003-x/judge/perf/candidate/4"}));
}

// --- The whole gate against a scripted benchmark ----------------------------------------------

// A benchmark that follows the protocol: three timed images per process, each a function of the
// request seed and its index (plus FAKE_SALT, to make one side differ), a benchmark JSON
// reporting FAKE_MS per iteration, FAKE_SLEEP seconds of untimed work. It records
// "<side> <seed>" in FAKE_TRACE, and fails when a DIT_* variable reached it, when the
// candidate's prefix was not applied, or when the best's outputs are still on disk while the
// candidate runs.
constexpr const char* kFakeBenchmark = R"(#!/bin/sh
for a in "$@"; do
  case "$a" in
    --benchmark_out=*) out="${a#--benchmark_out=}" ;;
    --request-seed=*) seed="${a#--request-seed=}" ;;
    --outputs-dir=*) dir="${a#--outputs-dir=}" ;;
  esac
done
if env | grep -q '^DIT_'; then echo "a DIT_ variable leaked" >&2; exit 9; fi
if [ "$FAKE_SIDE" = candidate ]; then
  [ "$PREFIXED" = 1 ] || { echo "no command prefix" >&2; exit 8; }
  if ls "$FAKE_BEST_OUTPUTS"/*/image-* >/dev/null 2>&1; then echo "the best's outputs are readable" >&2; exit 7; fi
fi
echo "$FAKE_SIDE $seed" >> "$FAKE_TRACE"
for i in 0 1 2; do printf 'seed %s image %s%s' "$seed" "$i" "$FAKE_SALT" > "$dir/image-$i.bin"; done
sleep "${FAKE_SLEEP:-0}"
printf '{"benchmarks": [{"name": "BM_Fake/manual_time", "run_name": "BM_Fake/manual_time", "run_type": "iteration", "iterations": 3, "real_time": %s, "cpu_time": 1, "time_unit": "ms"}]}' "$FAKE_MS" > "$out"
)";

class ScriptedGate : public testing::Test {
 protected:
  void SetUp() override {
    const fs::path build = scratch_.path() / "build";
    fs::create_directories(build / "bench");
    binary_ = build / "bench" / "fake.sh";
    std::ofstream(binary_) << kFakeBenchmark;
    fs::permissions(binary_, fs::perms::owner_all);
    trace_ = scratch_.path() / "trace.txt";
    nlohmann::json lane = lane_document("bench/fake.sh", "BM_Fake");
    lane["objective"]["max_untimed_growth_seconds"] = 0.1;
    request_ = parse_perf_request({{"lane", lane},
                                   {"mode", "compare"},
                                   {"min_improvement_percent", 5.0},
                                   {"classification", "exact"},
                                   {"report", (scratch_.path() / "judge" / "gates" / "performance.json").string()},
                                   {"candidate",
                                    {{"build_dir", build.string()},
                                     {"outputs_dir", (scratch_.path() / "judge" / "perf" / "candidate").string()},
                                     {"command_prefix", {"env", "PREFIXED=1"}},
                                     {"environment", {{"FAKE_SIDE", "candidate"}, {"FAKE_MS", "8"}}}}},
                                   {"best",
                                    {{"build_dir", build.string()},
                                     {"outputs_dir", (scratch_.path() / "judge" / "perf" / "best").string()},
                                     {"environment", {{"FAKE_SIDE", "best"}, {"FAKE_MS", "10"}}}}}},
                                  "request");
    for (PerfSide* side : {&request_.candidate, &request_.best}) {
      side->environment["FAKE_TRACE"] = trace_.string();
      side->environment["FAKE_BEST_OUTPUTS"] = request_.best.outputs_dir.string();
    }
    ::setenv("DIT_SECRET_OF_THE_JUDGE", "1", 1);
  }
  void TearDown() override { ::unsetenv("DIT_SECRET_OF_THE_JUDGE"); }

  GateReport run() {
    std::uint64_t next = 1000;
    return run_performance_gate(request_, scratch_.path() / "judge" / "gates" / "perf-gate.log",
                                [&] { return next += 7; });
  }
  std::vector<std::string> trace() const {
    std::vector<std::string> lines;
    std::ifstream in(trace_);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string log() const { return dit::read_text_file(scratch_.path() / "judge" / "gates" / "perf-gate.log"); }

  dit::test::ScratchDirectory scratch_;
  fs::path binary_;
  fs::path trace_;
  PerfRequest request_;
};

TEST_F(ScriptedGate, PassesAFasterCandidateWithTheSameOutputs) {
  GateReport report = run();
  EXPECT_TRUE(report.passed) << all(report.reasons) << log();
  // 8 ms against 10 ms every round: settled at the rule's first keep look, 5 rounds.
  const nlohmann::json& sequential = report.details["sequential"];
  EXPECT_EQ(sequential["rounds_used"], 5);
  EXPECT_EQ(sequential["stopping_reason"], "settled: keep-worthy");
  EXPECT_EQ(sequential["rule"]["max_rounds"], 20);
  EXPECT_EQ(sequential["looks"].size(), 2u);
  EXPECT_NEAR(report.details["interval"]["lower_percent"].get<double>(), 20.0, 1e-9);
  EXPECT_NEAR(report.details["interval"]["upper_percent"].get<double>(), 20.0, 1e-9);
  // ABBA, one fresh seed per round shared by both sides.
  std::vector<std::string> lines = trace();
  ASSERT_EQ(lines.size(), 10u) << log();
  for (int round = 0; round < 5; ++round) {
    const std::string seed = std::to_string(1000 + 7 * (round + 1));
    const std::string first = round % 2 == 0 ? "candidate " : "best ";
    const std::string second = round % 2 == 0 ? "best " : "candidate ";
    EXPECT_EQ(lines[2 * round], first + seed);
    EXPECT_EQ(lines[2 * round + 1], second + seed);
    EXPECT_EQ(report.details["rounds"][round]["seed"].get<std::uint64_t>(), 1000u + 7 * (round + 1));
    EXPECT_EQ(report.details["rounds"][round]["outputs"]["images_compared"], 3);
    EXPECT_GT(report.details["rounds"][round]["candidate"]["wall_seconds"].get<double>(), 0.0);
  }
  EXPECT_EQ(report.details["outputs"]["images_compared"], 15);
  // The image files are read and deleted; the benchmark JSON stays.
  for (const PerfSide* side : {&request_.candidate, &request_.best}) {
    for (const auto& entry : fs::recursive_directory_iterator(side->outputs_dir)) {
      EXPECT_NE(entry.path().filename().string().rfind("image-", 0), 0u) << entry.path();
    }
    EXPECT_TRUE(fs::exists(side->outputs_dir / "4" / "benchmark.json"));
    EXPECT_FALSE(fs::exists(side->outputs_dir / "5"));
  }
}

TEST_F(ScriptedGate, StopsOnceACandidateCannotReachTheMinimum) {
  request_.candidate.environment["FAKE_MS"] = "10";
  GateReport report = run();
  EXPECT_FALSE(report.passed);
  ASSERT_FALSE(report.reasons.empty());
  EXPECT_EQ(report.reasons.front().rfind("median improved only 0% (10 vs 10 ms; minimum 5%)", 0), 0u)
      << all(report.reasons);
  EXPECT_EQ(report.details["sequential"]["rounds_used"], 4);
  EXPECT_EQ(report.details["sequential"]["stopping_reason"], "settled: cannot reach the minimum");
  EXPECT_EQ(trace().size(), 8u);
}

TEST_F(ScriptedGate, TheNoiseRunMeasuresTheLanesRepetitions) {
  request_.noise = true;
  request_.candidate.environment["FAKE_MS"] = "10";
  GateReport report = run();
  EXPECT_TRUE(report.passed) << all(report.reasons) << log();
  EXPECT_EQ(trace().size(), 18u);
  EXPECT_EQ(report.details["sequential"]["rounds_used"], 9);
  EXPECT_EQ(report.details["sequential"]["stopping_reason"], "fixed rounds (A/A: the lane's repetitions)");
  EXPECT_DOUBLE_EQ(report.details["noise_percent"].get<double>(), 0.0);
}

TEST_F(ScriptedGate, StopsAtTheFirstRoundWhoseOutputsDiffer) {
  request_.candidate.environment["FAKE_SALT"] = " (cached)";
  GateReport report = run();
  EXPECT_FALSE(report.passed);
  ASSERT_FALSE(report.reasons.empty());
  EXPECT_EQ(report.reasons.front().rfind("timed outputs differ from the best's", 0), 0u) << all(report.reasons);
  EXPECT_NE(report.reasons.front().find("(round 0, seed 1007)"), std::string::npos) << report.reasons.front();
  EXPECT_EQ(trace().size(), 2u);
  EXPECT_EQ(report.details["rounds"].size(), 1u);
}

TEST_F(ScriptedGate, FailsWhenTheUntimedPartGrows) {
  request_.candidate.environment["FAKE_SLEEP"] = "0.3";
  GateReport report = run();
  EXPECT_FALSE(report.passed);
  EXPECT_TRUE(has_reason_starting(report.reasons, "untimed time grew")) << all(report.reasons);
  EXPECT_FALSE(report.details["untimed"]["passed"].get<bool>());
}

TEST_F(ScriptedGate, AFailingBenchmarkCannotBeMeasured) {
  request_.candidate.command_prefix = {"env", "PREFIXED=0"};
  EXPECT_THROW(run(), dit::Error);
  request_.candidate.command_prefix = {"env", "PREFIXED=1"};
  request_.best.build_dir = scratch_.path() / "no-such-build";
  EXPECT_THROW(run(), dit::Error);
}

}  // namespace
