// dit-ar queue add | list, dit-ar work, and the hidden dit-ar worker: several experiments at once
// on one host, each in a worker of its own (its own git worktree, its own candidate and best
// builds under workers/<k>/ of the state directory, its own GPU), judged by the same stages a
// `dit-ar experiment` runs, recorded one at a time by the coordinator in the queue's order.
//
// The coordinator (`work`) holds the state directory's lock for the whole run; each worker is a
// child process (`dit-ar worker`, in a process group of its own, killed by the kernel when the
// coordinator dies: PR_SET_PDEATHSIG) that inherits the lock's descriptor, so that its stage
// supervisors keep the next driver out until they have swept. A worker judges one candidate
// (rebased onto the best of the moment) and writes the record to run.json; it records nothing.
// The coordinator records a verdict only when every earlier item of the queue is decided and the
// best is still the one the verdict was judged against; a verdict judged against an older best
// is thrown away and the candidate rebased onto the new best and judged again (a rebase
// conflict is recorded as CRASH). So the decisions are the ones a single worker taking the
// queue in order makes, whatever the number of workers.
//
// With --slurm each worker is a Slurm job instead: the coordinator's child is `sbatch --wait`,
// which runs the same `dit-ar worker` on a node (without the lock's descriptor, which cannot
// cross hosts) and exits when the job ends, so it is followed like a local worker. Its job id
// goes into the attempt; stopping a worker is scancel, and a coordinator that was killed leaves
// jobs running, which the next one cancels (and waits for) before it removes their worktrees.
// The state directory and the repository must be on a filesystem every node shares.
//
// queue.json (the state directory, written atomically) holds each item, every attempt at it
// (worker, GPU, the best judged against, the commit judged, the run folder, the outcome, the
// Slurm job) and its decision; runs/<id>/worker.json says which worker and GPU judged the run and
// what ran beside its timed stage.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/ctest_gpu.h"
#include "core/error.h"
#include "core/files.h"
#include "driver/ctest_results.h"
#include "driver/environment_capture.h"
#include "driver/exit_codes.h"
#include "driver/lock_file.h"
#include "driver/process.h"
#include "driver/progress.h"
#include "driver/protection.h"
#include "driver/recording.h"
#include "driver/run_guard.h"
#include "driver/sandbox.h"
#include "driver/session.h"
#include "driver/slurm.h"
#include "driver/subcommands.h"
#include "driver/work_git.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

constexpr const char* kQueueRefPrefix = "refs/autoresearch/queue/";
// A candidate whose worker died this often without a verdict stops the coordinator.
constexpr int kMostLostAttempts = 3;

fs::path queue_file(const StateDirectory& state) { return state.root() / "queue.json"; }
fs::path workers_dir(const StateDirectory& state) { return state.root() / "workers"; }
fs::path worker_dir(const StateDirectory& state, int worker) { return workers_dir(state) / std::to_string(worker); }

nlohmann::json load_queue(const StateDirectory& state) {
  const fs::path path = queue_file(state);
  if (!fs::exists(path)) return {{"version", 1}, {"items", nlohmann::json::array()}};
  nlohmann::json queue = read_json_file(path);
  if (!queue.is_object() || !queue.contains("items") || !queue["items"].is_array())
    throw Error(ErrorKind::invalid_file, path.string() + ": not a queue (an object with \"items\")");
  for (auto& item : queue["items"]) {
    if (!item.is_object() || !item.contains("id") || !item["id"].is_string() || !item.contains("commit") ||
        !item["commit"].is_string())
      throw Error(ErrorKind::invalid_file, path.string() + ": an item without \"id\" and \"commit\"");
    if (!item.contains("attempts") || !item["attempts"].is_array()) item["attempts"] = nlohmann::json::array();
    if (!item.contains("decision")) item["decision"] = nullptr;
  }
  return queue;
}

void store_queue(const StateDirectory& state, const nlohmann::json& queue) {
  write_json_atomic(queue_file(state), queue);
}

// Wall-clock seconds since the epoch, and the same as "2026-11-29T19:30:00.123Z".
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
std::string iso_time(double seconds) {
  const std::time_t whole = static_cast<std::time_t>(std::floor(seconds));
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(std::floor((seconds - std::floor(seconds)) * 1000)) % 1000);
  return text;
}
// The inverse of iso_time (also without milliseconds); nothing for another text.
std::optional<double> parse_iso_time(const std::string& text) {
  std::tm utc{};
  int milliseconds = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &utc.tm_year, &utc.tm_mon, &utc.tm_mday, &utc.tm_hour,
                  &utc.tm_min, &utc.tm_sec) != 6)
    return std::nullopt;
  if (const auto dot = text.find('.'); dot != std::string::npos) milliseconds = std::atoi(text.c_str() + dot + 1);
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return static_cast<double>(timegm(&utc)) + milliseconds / 1000.0;
}

void refuse_unjudgeable_class(const Config& config, const Lane& lane, const std::string& classification) {
  if (auto refused = lane.refused_classifications.find(classification); refused != lane.refused_classifications.end())
    refuse("lane " + lane.name + " cannot judge a change classified " + classification + ": " + refused->second,
           "classify the change by what it does to the arithmetic (program.md)");
  if (classification == "quantization" && !config.quantization.allowed)
    refuse("quantization experiments are not allowed in this session (config quantization.allowed is false)",
           "use another classification, or start a session whose config allows quantization");
}

// ---- dit-ar queue add / list ---------------------------------------------------------------------

struct QueueAddOptions {
  std::string classification;
  std::string description;
  std::string commit;
  std::string patch;
};

int queue_add(const CommonOptions& options, const QueueAddOptions& add) {
  SessionContext context = open_session_context(options);
  const nlohmann::json session = context.state.load_session();
  const Lane& lane = context.config.lane(session.at("lane"));
  LockFile lock(context.state.lock_file());
  refuse_unjudgeable_class(context.config, lane, add.classification);
  GitRepository& repository = *context.repository;
  const auto best = repository.resolve_reference(kBestRef);
  if (!best) refuse(std::string(kBestRef) + " is missing", "dit-ar baseline records it; run it first");
  if (add.commit.empty() == add.patch.empty())
    refuse("name one candidate: a commit, or --patch FILE",
           "dit-ar queue add --classification C --description D "
           "(<commit> | --patch FILE)");
  std::string commit;
  if (!add.patch.empty()) {
    const std::string text = read_text_file(add.patch, "the patch");
    // A format-patch file's own message, trailers included; a plain diff's, the description's.
    std::optional<std::string> message;
    try {
      message = format_patch_message(text);
    } catch (const Error& error) {
      refuse(add.patch + ": " + error.what(), "queue the commit itself: dit-ar queue add <commit>");
    }
    commit = commit_from_patch(context.root, text, *best,
                               message.value_or(add.description + "\n\ndit-ar queue: from the patch " +
                                                fs::path(add.patch).filename().string() + "\n"));
  } else {
    auto resolved = repository.resolve_revision(add.commit);
    if (!resolved) refuse("no commit '" + add.commit + "' in this repository", "name a commit, a branch or a tag");
    commit = *resolved;
    if (repository.parents(commit).size() != 1)
      refuse("commit " + short_id(commit) + " is not one ordinary commit (it has " +
                 std::to_string(repository.parents(commit).size()) + " parents)",
             "one hypothesis is one commit: squash it onto its parent");
    if (commit == *best || repository.is_descendant_of(*best, commit))
      refuse("commit " + short_id(commit) + " is the best or one of its ancestors", "queue a commit on top of it");
  }
  nlohmann::json queue = load_queue(context.state);
  int number = 0;
  for (const auto& item : queue["items"]) number = std::max(number, std::atoi(item["id"].get<std::string>().c_str()));
  std::ostringstream id;
  id << std::setw(4) << std::setfill('0') << number + 1;
  repository.set_reference(kQueueRefPrefix + id.str(), commit, "dit-ar: queued as " + id.str());
  queue["items"].push_back({{"id", id.str()},
                            {"commit", commit},
                            {"summary", repository.summary(commit)},
                            {"classification", add.classification},
                            {"description", add.description},
                            {"source", add.patch.empty() ? "commit" : "patch"},
                            {"patch", add.patch.empty() ? nlohmann::json(nullptr) : nlohmann::json(add.patch)},
                            {"added", utc_timestamp()},
                            {"attempts", nlohmann::json::array()},
                            {"decision", nullptr}});
  store_queue(context.state, queue);
  print_result_block(std::cout,
                     {{"status", "QUEUED"},
                      {"id", id.str()},
                      {"commit", commit},
                      {"classification", add.classification},
                      {"description", add.description},
                      {"source", add.patch.empty() ? "commit" : "patch"}},
                     options.json);
  return kExitKeep;
}

// "pending", "running", "judged" (a verdict waiting for its turn) or "decided".
std::string item_state(const nlohmann::json& item) {
  if (!item["decision"].is_null()) return "decided";
  if (!item["attempts"].empty()) {
    const std::string outcome = item["attempts"].back().value("outcome", "");
    if (outcome == "running" || outcome == "judged" || outcome == "recording") return outcome;
  }
  return "pending";
}

int queue_list(const CommonOptions& options) {
  SessionContext context = open_session_context(options);
  nlohmann::json queue = load_queue(context.state);
  for (auto& item : queue["items"]) item["state"] = item_state(item);
  if (options.json) {
    std::cout << queue.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitKeep;
  }
  if (queue["items"].empty()) std::cout << "the queue is empty (dit-ar queue add)\n";
  for (const auto& item : queue["items"]) {
    std::string state = item["state"];
    std::string detail;
    if (!item["decision"].is_null()) {
      const auto& decision = item["decision"];
      state = decision.value("status", "?");
      detail = "  " + short_id(decision.value("commit", "")) + " worker " + decision.value("worker", "?") +
               (decision.value("gpu", "").empty() ? "" : ", GPU " + decision.value("gpu", "")) + ", " +
               decision.value("run_dir", "");
    } else if (!item["attempts"].empty() && item["state"] == "running") {
      const auto& attempt = item["attempts"].back();
      detail = "  worker " + std::to_string(attempt.value("worker", 0)) + ", " + attempt.value("run_dir", "");
    }
    std::cout << item["id"].get<std::string>() << "  " << std::left << std::setw(19) << state << " "
              << short_id(item["commit"]) << "  " << item.value("classification", "") << "  \""
              << item.value("description", "") << "\"  (" << item["attempts"].size() << " attempt"
              << (item["attempts"].size() == 1 ? "" : "s") << ")" << detail << "\n";
  }
  return kExitKeep;
}

// ---- dit-ar worker (hidden): one candidate judged in a worker's trees --------------------------

struct WorkerOptions {
  int worker = 0;
  std::string commit;
  std::string best;
  std::string run_dir;  // relative to the state directory
  std::string classification;
  std::string description;
  std::string gpu;
  int lock_fd = -1;
};

// The stages of `dit-ar experiment` between its checks and its recording (experiment_command.cpp,
// run_experiment), in the same order, on the worker's trees: the scope check (REJECTED, nothing
// built), the judge's and the best's builds, the candidate's tree, run_commit, the guard's checks
// and repairs, the decision. Writes the record to run.json; the coordinator records it.
int run_worker(const CommonOptions& options, const WorkerOptions& worker) {
  // The lock's descriptor is inherited for the stage supervisors (forks); no program exec'd
  // below gets it.
  if (worker.lock_fd >= 0) ::fcntl(worker.lock_fd, F_SETFD, FD_CLOEXEC);
  Config config = load_session_config(options);
  const fs::path state_root = config.state_dir;
  const fs::path trees = state_root / "workers" / std::to_string(worker.worker);
  const fs::path checkout = trees / "checkout";
  auto repository_handle = std::make_unique<GitRepository>(checkout);
  SessionContext context{std::move(config), checkout, std::move(repository_handle), StateDirectory(state_root, trees)};
  nlohmann::json session = context.state.load_session();
  const Lane& lane = context.config.lane(session.at("lane"));
  GitRepository& repository = *context.repository;
  const std::string head = repository.head_commit();
  if (head != worker.commit)
    throw Error(ErrorKind::invalid_argument,
                "the worker's worktree holds " + short_id(head) + ", not " + short_id(worker.commit));
  const std::string best = worker.best;
  const fs::path run_dir = context.state.root() / worker.run_dir;

  std::ofstream events(run_dir / "progress.jsonl", std::ios::app);
  ProgressReporter progress(ProgressFormat::json, std::cerr, events, std::cerr);
  ExperimentRecord record;
  record.timestamp = utc_timestamp();
  record.commit = head;
  record.parent = best;
  record.best_before = best;
  record.lane = lane.name;
  record.gpu = gpu_description();
  record.classification = worker.classification;
  record.description = worker.description;
  record.sandbox = sandbox_status().description;
  record.run_dir = worker.run_dir;
  progress.run_started({{"command", "work"},
                        {"worker", worker.worker},
                        {"commit", head},
                        {"summary", repository.summary(head)},
                        {"classification", worker.classification},
                        {"lane", lane.name},
                        {"gpu", record.gpu}},
                       "");

  std::vector<std::string> violations = scope_violations(context, session, best, head);
  if (!violations.empty()) {
    record.status = Status::rejected;
    record.reasons = violations;
    record.quality = "not run";
    write_json_atomic(run_dir / "run.json", record.to_json());
    return kExitKeep;
  }
  // The host: the coordinator ends a stage's process group only where it runs (a Slurm job's
  // processes on another node are Slurm's to end).
  nlohmann::json inflight{{"phase", "running"},        {"kind", "experiment"},        {"commit", head},
                          {"run_dir", record.run_dir}, {"started", record.timestamp}, {"driver_pid", ::getpid()},
                          {"worker", worker.worker},   {"host", host_name()}};
  context.state.store_inflight(inflight);
  const auto request_for_run = [&] {
    RunRequest request = session_run_request(context, lane, run_dir, inflight, progress);
    request.classification = worker.classification;
    request.min_improvement_percent = effective_min_improvement(session, lane);
    return request;
  };
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  write_json_atomic(run_dir / "environment.json", {{"gpu", record.gpu},
                                                   {"timestamp", record.timestamp},
                                                   {"worker", worker.worker},
                                                   {"gpu_index", worker.gpu},
                                                   {"cuda_visible_devices", visible ? visible : ""}});
  judge_candidate(context, lane, session, head, best, request_for_run, true, progress, run_dir, "work", record);
  context.state.clear_inflight();
  return kExitKeep;
}

// ---- dit-ar work: the coordinator ----------------------------------------------------------------

struct WorkOptions {
  int workers = 1;
  std::string gpus;
  int max_experiments = 0;  // 0: until the queue is drained
  bool slurm = false;       // each worker a Slurm job (sbatch --wait) instead of a local process
  std::string slurm_arguments;
};

// The file sbatch --parsable's output (the job id) goes to, in the run folder.
constexpr const char* kSlurmJobFile = "slurm-job.txt";

// The job's time limit: the longest an experiment of the lane may take, in whole minutes.
int worker_minutes(const Config& config, const Lane& lane) {
  return static_cast<int>((experiment_limit_seconds(config, lane) + 59) / 60);
}

// The process group a worker's inflight.json names, when its stage runs on this host.
int local_process_group(const fs::path& inflight) {
  const nlohmann::json document = read_json_file(inflight);
  const InflightRun run = parse_inflight(document, inflight.string());
  if (document.is_object() && document.contains("host") && document["host"] != host_name()) return 0;
  return run.process_group;
}

// The GPUs the workers are pinned to: --gpus (a list, or "none"), else CTest's allocation, else
// CUDA_VISIBLE_DEVICES; none on a host that names none (a CPU lane needs none).
std::vector<std::string> worker_gpus(const std::string& option) {
  std::string list = option;
  if (list.empty()) {
    if (auto index =
            ctest_gpu_index(std::getenv("CTEST_RESOURCE_GROUP_COUNT"), std::getenv("CTEST_RESOURCE_GROUP_0_GPUS")))
      return {*index};
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) list = visible;
  }
  if (list == "none") return {};
  std::vector<std::string> gpus;
  std::stringstream items(list);
  for (std::string gpu; std::getline(items, gpu, ',');) {
    if (gpu.empty()) continue;
    if (std::find(gpus.begin(), gpus.end(), gpu) != gpus.end())
      refuse("GPU " + gpu + " is named twice in '" + list + "'", "name each GPU once: --gpus 0,1,2,3");
    gpus.push_back(gpu);
  }
  return gpus;
}

// The descriptor of the lock this process holds on `path`.
int lock_descriptor(const fs::path& path) {
  std::error_code error;
  const fs::path wanted = fs::canonical(path, error);
  for (auto entry = fs::directory_iterator("/proc/self/fd", error); !error && entry != fs::directory_iterator();
       entry.increment(error)) {
    std::error_code ignored;
    if (fs::read_symlink(entry->path(), ignored) == wanted) return std::atoi(entry->path().filename().c_str());
  }
  return -1;
}

struct Slot {
  int worker = 0;
  std::string gpu;  // empty: none
  pid_t pid = 0;    // the running worker, 0 when idle
  std::string item;
  std::size_t attempt = 0;  // index into the item's attempts
  bool cancelled = false;
  bool job_cancelled = false;  // --slurm: scancel was sent for the attempt's job
  double started = 0;
};

// A verdict waiting for its item's turn: the record and the best it was judged against.
struct Verdict {
  ExperimentRecord record;
  std::string best;
  std::size_t attempt = 0;
};

// A stage of a worker's run, from its progress events (run_dir/progress.jsonl).
struct StageSpan {
  std::string stage;
  std::string preset;
  double from = 0;
  std::optional<double> to;
};
std::vector<StageSpan> read_stages(const fs::path& run_dir) {
  std::vector<StageSpan> stages;
  std::ifstream events(run_dir / "progress.jsonl");
  for (std::string line; std::getline(events, line);) {
    nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    if (!event.is_object() || !event.contains("time") || !event["time"].is_string()) continue;
    const auto time = parse_iso_time(event["time"]);
    if (!time) continue;
    const std::string kind = event.value("event", "");
    const std::string stage = event.value("stage", "");
    const std::string preset = event.value("preset", "");
    if (kind == "stage_started") stages.push_back({stage, preset, *time, std::nullopt});
    if (kind == "stage_finished") {
      auto open = std::find_if(stages.rbegin(), stages.rend(),
                               [&](const StageSpan& span) { return span.stage == stage && !span.to; });
      if (open != stages.rend()) open->to = *time;
    }
  }
  return stages;
}

// Whether a judge stage times: the performance gate's part, or a preset whose listing holds a
// test labelled perf.
bool timing_stage(const StageSpan& span, const fs::path& run_dir) {
  if (span.stage.rfind("judge (", 0) != 0) return false;
  if (span.stage.find(", quality)") != std::string::npos) return false;
  if (span.stage.find(", performance)") != std::string::npos) return true;
  const fs::path listing = run_dir / ("tests-" + span.preset + ".json");
  if (span.preset.empty() || !fs::exists(listing)) return false;
  try {
    for (const auto& test : parse_test_listing(read_json_file(listing), listing.string()))
      if (test.has_label("perf")) return true;
  } catch (const Error&) {}
  return false;
}

class Coordinator {
 public:
  // `sbatch`: each worker a Slurm job submitted with it; none: a local child process.
  Coordinator(SessionContext& context, const Lane& lane, const WorkOptions& options, std::vector<std::string> gpus,
              int lock_fd, std::optional<fs::path> sbatch, std::ostream& out)
      : context_(context), lane_(lane), options_(options), lock_fd_(lock_fd), sbatch_(std::move(sbatch)), out_(out) {
    std::istringstream words(options.slurm_arguments);
    for (std::string word; words >> word;) slurm_options_.push_back(word);
    for (int k = 1; k <= options.workers; ++k) {
      Slot slot;
      slot.worker = k;
      if (!gpus.empty()) slot.gpu = gpus[static_cast<std::size_t>(k - 1)];
      slots_.push_back(slot);
    }
    char self[4096] = {};
    const ssize_t size = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (size <= 0) throw Error(ErrorKind::io, "cannot find dit-ar's own executable (/proc/self/exe)");
    executable_ = std::string(self, static_cast<std::size_t>(size));
    queue_ = load_queue(context_.state);
  }

  // What the previous coordinator left: its workers' leftover processes, their worktrees, the
  // attempts that were running (or judged, not recorded); a recorded one becomes its decision.
  void recover() {
    const StateDirectory& state = context_.state;
    cancel_leftover_jobs();
    std::error_code error;
    for (auto entry = fs::directory_iterator(workers_dir(state), error); !error && entry != fs::directory_iterator();
         entry.increment(error)) {
      const fs::path inflight = entry->path() / "inflight.json";
      if (!fs::exists(inflight)) continue;
      try {
        if (kill_process_group(local_process_group(inflight)))
          out_ << "dit-ar: killed the leftover processes of worker " << entry->path().filename().string() << "\n";
      } catch (const Error& damaged) {
        out_ << "dit-ar: ignoring " << damaged.what() << "\n";
      }
      fs::remove(inflight);
    }
    for (const auto& name : remove_worker_worktrees(context_.root))
      out_ << "dit-ar: removed the worktree " << name << " left by a stopped dit-ar work\n";
    bool changed = false;
    for (auto& item : queue_["items"]) {
      if (!item["decision"].is_null()) continue;
      for (auto& attempt : item["attempts"]) {
        const std::string outcome = attempt.value("outcome", "");
        const std::string run_dir = attempt.value("run_dir", "");
        if (!run_dir.empty() && state.has_result_for_run(run_dir)) {
          const ExperimentRecord record =
              ExperimentRecord::from_json(read_json_file(state.root() / run_dir / "run.json"));
          attempt["outcome"] = "recorded";
          item["decision"] = decision_of(record, attempt);
          changed = true;
          out_ << "dit-ar: " << item["id"].get<std::string>() << " was recorded (" << to_string(record.status)
               << ") by a stopped dit-ar work\n";
          break;
        }
        if (outcome == "running" || outcome == "judged" || outcome == "recording") {
          attempt["outcome"] = "interrupted: the coordinator was stopped";
          changed = true;
        }
      }
    }
    if (changed) store_queue(state, queue_);
  }

  // The Slurm jobs of attempts a stopped coordinator left running (its sbatch --wait died with it,
  // its jobs did not): cancelled, and gone, before their worktrees are removed.
  void cancel_leftover_jobs() {
    bool changed = false;
    for (auto& item : queue_["items"]) {
      if (!item["decision"].is_null()) continue;
      for (auto& attempt : item["attempts"]) {
        if (attempt.value("outcome", "") != "running") continue;
        std::string job = attempt.value("slurm_job", "");
        if (job.empty() && attempt.contains("run_dir"))
          job = parsable_job_id(context_.state.root() / attempt["run_dir"].get<std::string>() / kSlurmJobFile);
        if (job.empty()) continue;
        if (auto failure = cancel_slurm_job(job, 120))
          throw Error(ErrorKind::io, "the Slurm job of " + item["id"].get<std::string>() +
                                         ", left by a stopped dit-ar work, is not cancelled: " + *failure);
        out_ << "dit-ar: cancelled Slurm job " << job << " (" << item["id"].get<std::string>()
             << "), left by a stopped dit-ar work\n";
        attempt["slurm_job"] = job;
        changed = true;
      }
    }
    if (changed) store_queue(context_.state, queue_);
  }

  // Runs the queue until it is drained (or --max-experiments decisions); returns how many it
  // recorded.
  int run() {
    take_records_copy();
    for (;;) {
      reap();
      follow_jobs();
      record_in_order();
      const bool enough = options_.max_experiments > 0 && recorded_ >= options_.max_experiments;
      if (enough) {
        for (auto& slot : slots_) {
          if (slot.pid && !slot.cancelled) stop(slot);
        }
      }
      if ((failure_ || enough) && busy() == 0) break;
      if (!failure_ && !enough) dispatch();
      // Nothing running and no verdict waiting: every item is decided.
      if (busy() == 0 && verdicts_.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::error_code ignored;
    remove_worker_worktrees(context_.root);
    report_sealed(context_.state, context_.state.seal_undecided_runs());
    if (failure_) throw Error(ErrorKind::io, *failure_);
    return recorded_;
  }

  const nlohmann::json& queue() const { return queue_; }

 private:
  nlohmann::json decision_of(const ExperimentRecord& record, const nlohmann::json& attempt) const {
    return {{"status", to_string(record.status)},
            {"commit", record.commit},
            {"run_dir", record.run_dir},
            {"best_before", record.best_before},
            {"worker", std::to_string(attempt.value("worker", 0))},
            {"gpu", attempt.value("gpu", "")},
            {"recorded", utc_timestamp()}};
  }

  int busy() const {
    return static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& slot) { return slot.pid; }));
  }
  bool in_flight(const std::string& id) const {
    return std::any_of(slots_.begin(), slots_.end(), [&](const Slot& slot) { return slot.pid && slot.item == id; });
  }
  nlohmann::json& item(const std::string& id) {
    for (auto& entry : queue_["items"])
      if (entry["id"] == id) return entry;
    throw Error(ErrorKind::invalid_file, "queue.json lost item " + id);
  }
  std::string best() const { return context_.repository->resolve_reference(kBestRef).value_or(""); }
  void save() { store_queue(context_.state, queue_); }

  void take_records_copy() {
    records_ = Snapshot();
    const StateDirectory& state = context_.state;
    for (const auto& file : {state.session_file(), state.best_file(), state.results_file()}) records_.add_file(file);
    records_.add_references(*context_.repository, {"refs/autoresearch/*", "refs/notes/*"});
  }

  std::string slot_name(const Slot& slot) const {
    return "worker " + std::to_string(slot.worker) + (slot.gpu.empty() ? "" : " (GPU " + slot.gpu + ")");
  }

  // The next undecided items, in the queue's order, each to a free worker.
  void dispatch() {
    int pending_decisions = busy();
    for (auto& slot : slots_) {
      if (slot.pid) continue;
      if (options_.max_experiments > 0 && recorded_ + pending_decisions >= options_.max_experiments) return;
      nlohmann::json* next = nullptr;
      for (auto& entry : queue_["items"]) {
        const std::string id = entry["id"];
        if (entry["decision"].is_null() && !in_flight(id) && !verdicts_.count(id)) {
          next = &entry;
          break;
        }
      }
      if (!next) return;
      start(slot, *next);
      ++pending_decisions;
    }
  }

  void start(Slot& slot, nlohmann::json& entry) {
    const std::string id = entry["id"];
    const std::string current = best();
    const std::string original = entry["commit"];
    const Rebased rebased = rebase_onto(context_.root, original, current);
    const std::string judged = rebased.commit.empty() ? original : rebased.commit;
    const fs::path run_dir = context_.state.create_run_dir(judged);
    const std::string relative = fs::relative(run_dir, context_.state.root()).string();
    nlohmann::json attempt{{"worker", slot.worker},
                           {"gpu", slot.gpu},
                           {"best", current},
                           {"commit", judged},
                           {"rebased", judged != original},
                           {"run_dir", relative},
                           {"started", iso_time(now_seconds())},
                           {"outcome", "running"}};
    if (!rebased.conflicts.empty()) {
      // Nothing to build: the candidate does not apply onto the best.
      ExperimentRecord record;
      record.timestamp = utc_timestamp();
      record.commit = original;
      record.parent = context_.repository->parents(original).front();
      record.best_before = current;
      record.lane = lane_.name;
      record.gpu = "not run";
      record.status = Status::crash;
      record.classification = entry.value("classification", "");
      record.description = entry.value("description", "");
      record.quality = "not run";
      record.sandbox = "not run";
      record.run_dir = relative;
      record.reasons = {"rebase conflict: " + short_id(original) + " does not apply onto the best " +
                        short_id(current) + " (conflicts in " + listed(rebased.conflicts) +
                        "); rebase it onto the best and queue it again"};
      write_json_atomic(run_dir / "run.json", record.to_json());
      attempt["worker"] = 0;
      attempt["gpu"] = "";
      attempt["outcome"] = "judged";
      attempt["status"] = to_string(record.status);
      attempt["ended"] = attempt["started"];
      entry["attempts"].push_back(attempt);
      verdicts_[id] = {record, current, entry["attempts"].size() - 1};
      save();
      out_ << "  " << id << " " << short_id(original) << "  rebase conflict onto the best " << short_id(current) << " ("
           << listed(rebased.conflicts) << "): CRASH\n"
           << std::flush;
      return;
    }
    const fs::path trees = worker_dir(context_.state, slot.worker);
    fs::create_directories(trees);
    settle_slot(slot);
    add_worktree(context_.root, kWorkerWorktreePrefix + std::to_string(slot.worker), trees / "checkout", judged);
    entry["attempts"].push_back(attempt);
    slot.item = id;
    slot.attempt = entry["attempts"].size() - 1;
    slot.cancelled = false;
    slot.job_cancelled = false;
    slot.started = now_seconds();
    save();
    slot.pid = spawn(slot, entry, judged, current, relative);
    entry["attempts"].back()["pid"] = slot.pid;
    save();
    out_ << "  " << id << " " << short_id(judged) << "  " << slot_name(slot) << ": judging on the best "
         << short_id(current) << (judged != original ? " (rebased from " + short_id(original) + ")" : "") << ", "
         << relative << "\n"
         << std::flush;
  }

  // Stops a slot's worker: a local one is killed; a Slurm job is cancelled once its id is known
  // (follow_jobs), and its sbatch --wait then ends with it.
  void stop(Slot& slot) {
    slot.cancelled = true;
    if (!sbatch_) ::kill(-slot.pid, SIGKILL);
    follow_jobs();
  }

  // --slurm: each running attempt's job id, from sbatch's output, into queue.json as soon as
  // sbatch prints it; and the jobs of stopped slots cancelled.
  void follow_jobs() {
    if (!sbatch_) return;
    for (auto& slot : slots_) {
      if (!slot.pid) continue;
      nlohmann::json& attempt = item(slot.item)["attempts"][slot.attempt];
      if (!attempt.contains("slurm_job")) {
        const std::string job =
            parsable_job_id(context_.state.root() / attempt["run_dir"].get<std::string>() / kSlurmJobFile);
        if (job.empty()) continue;
        attempt["slurm_job"] = job;
        save();
      }
      if (slot.cancelled && !slot.job_cancelled) {
        slot.job_cancelled = true;
        if (auto failure = cancel_slurm_job(attempt["slurm_job"], 0))
          out_ << "  " << slot.item << "  " << slot_name(slot) << ": " << *failure << "\n" << std::flush;
      }
    }
  }

  // A worker that died leaves its slot's inflight.json (the process group of the stage it ran):
  // what is left of that group is ended before the slot is used again.
  void settle_slot(const Slot& slot) {
    const fs::path inflight = worker_dir(context_.state, slot.worker) / "inflight.json";
    if (!fs::exists(inflight)) return;
    try {
      const int group = local_process_group(inflight);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (kill_process_group(group) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } catch (const Error&) {}
    std::error_code ignored;
    fs::remove(inflight, ignored);
  }

  pid_t spawn(const Slot& slot, const nlohmann::json& entry, const std::string& commit, const std::string& best,
              const std::string& run_dir) {
    std::vector<std::string> argv{executable_,
                                  "worker",
                                  "--repo",
                                  context_.root.string(),
                                  "--config",
                                  context_.config.path.string(),
                                  "--worker",
                                  std::to_string(slot.worker),
                                  "--commit",
                                  commit,
                                  "--best",
                                  best,
                                  "--run-dir",
                                  run_dir,
                                  "--classification",
                                  entry.value("classification", ""),
                                  "--description",
                                  entry.value("description", ""),
                                  "--gpu",
                                  slot.gpu};
    const fs::path folder = context_.state.root() / run_dir;
    const fs::path log = folder / "worker.log";
    // A Slurm job runs the same worker on a node: without the lock's descriptor (it cannot cross
    // hosts; recover() cancels what a stopped coordinator left), its output appended to the log.
    if (sbatch_)
      argv = sbatch_command(*sbatch_,
                            {"dit-ar-" + entry.value("id", ""), log, context_.state.root(),
                             worker_minutes(context_.config, lane_), lane_.gpu, slurm_options_},
                            argv);
    else
      argv.insert(argv.end(), {"--lock-fd", std::to_string(lock_fd_)});
    std::map<std::string, std::string> overrides;
    if (!slot.gpu.empty()) overrides = {{"CUDA_VISIBLE_DEVICES", slot.gpu}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
    std::vector<std::string> environment;
    for (char** variable = environ; *variable; ++variable) {
      const std::string text = *variable;
      if (!overrides.count(text.substr(0, text.find('=')))) environment.push_back(text);
    }
    for (const auto& [name, value] : overrides) environment.push_back(name + "=" + value);
    std::vector<char*> argv_pointers, environment_pointers;
    for (auto& argument : argv) argv_pointers.push_back(argument.data());
    argv_pointers.push_back(nullptr);
    for (auto& variable : environment) environment_pointers.push_back(variable.data());
    environment_pointers.push_back(nullptr);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw Error(ErrorKind::io, "cannot open " + log.string() + ": " + std::strerror(errno));
    // sbatch --parsable's job id, read by follow_jobs().
    const fs::path job_file = folder / kSlurmJobFile;
    const int out_fd = sbatch_ ? ::open(job_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : log_fd;
    if (out_fd < 0) {
      ::close(log_fd);
      throw Error(ErrorKind::io, "cannot open " + job_file.string() + ": " + std::strerror(errno));
    }
    const pid_t coordinator = ::getpid();
    const pid_t pid = ::fork();
    const auto close_files = [&] {
      ::close(log_fd);
      if (out_fd != log_fd) ::close(out_fd);
    };
    if (pid < 0) {
      close_files();
      throw Error(ErrorKind::io, std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
      if (::getppid() != coordinator) ::_exit(127);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, STDIN_FILENO);
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
      if (lock_fd_ >= 0 && !sbatch_) ::fcntl(lock_fd_, F_SETFD, 0);
      ::execve(argv_pointers[0], argv_pointers.data(), environment_pointers.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);
    close_files();
    return pid;
  }

  // Workers that ended: their verdict, or the attempt lost (the candidate goes back to the queue).
  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (auto& slot : slots_) {
        if (slot.pid != pid) continue;
        finished(slot, status);
        slot.pid = 0;
      }
    }
  }

  void finished(Slot& slot, int status) {
    follow_jobs();
    nlohmann::json& entry = item(slot.item);
    nlohmann::json& attempt = entry["attempts"][slot.attempt];
    const double ended = now_seconds();
    attempt["ended"] = iso_time(ended);
    const fs::path run_dir = context_.state.root() / attempt["run_dir"].get<std::string>();
    const std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exit code " + std::to_string(WEXITSTATUS(status));
    settle_slot(slot);
    write_beside(slot, attempt, run_dir, ended);
    // What a candidate may not change: the session's records and refs (a copy after each of the
    // coordinator's own writes) and the fixed paths of the user's checkout.
    std::vector<std::string> rejections;
    const std::vector<std::string> records = records_.changes(*context_.repository);
    if (!records.empty()) {
      rejections.push_back("the run changed the session's records: " + listed(records));
      records_.restore(*context_.repository);
    }
    std::vector<std::string> fixed;
    for (const auto& path : context_.repository->dirty_paths())
      if (is_fixed_path(context_.config, path)) fixed.push_back(path);
    if (!fixed.empty()) {
      rejections.push_back("the run changed fixed paths in the checkout: " + listed(fixed));
      context_.repository->restore_paths(context_.repository->head_commit(), fixed);
    }
    if (slot.cancelled) {
      attempt["outcome"] = "cancelled: the best moved while it was judged";
      write_json_atomic(run_dir / "interrupted.json", {{"interrupted", true}, {"why", attempt["outcome"]}});
      save();
      return;
    }
    if (fs::exists(run_dir / "run.json")) {
      ExperimentRecord record = ExperimentRecord::from_json(read_json_file(run_dir / "run.json"));
      if (!rejections.empty()) {
        record.status = Status::rejected;
        record.reasons.insert(record.reasons.begin(), rejections.begin(), rejections.end());
        write_json_atomic(run_dir / "run.json", record.to_json());
      }
      attempt["outcome"] = "judged";
      attempt["status"] = to_string(record.status);
      verdicts_[slot.item] = {record, attempt["best"], slot.attempt};
      save();
      out_ << "  " << slot.item << " " << short_id(record.commit) << "  " << slot_name(slot) << ": "
           << to_string(record.status) << " in " << std::fixed << std::setprecision(1) << ended - slot.started << " s\n"
           << std::flush;
      return;
    }
    attempt["outcome"] = "lost: the worker ended without a verdict (" + how + ")";
    write_json_atomic(run_dir / "interrupted.json", {{"interrupted", true}, {"why", attempt["outcome"]}});
    save();
    int lost = 0;
    for (const auto& earlier : entry["attempts"])
      if (earlier.value("outcome", "").rfind("lost", 0) == 0) ++lost;
    out_ << "  " << slot.item << "  " << slot_name(slot) << " ended without a verdict (" << how << "; see "
         << (run_dir / "worker.log").string() << ")" << (lost < kMostLostAttempts ? ": judged again" : "") << "\n"
         << std::flush;
    if (!WIFSIGNALED(status) || lost >= kMostLostAttempts) {
      // An error of the driver or the host (a full disk, a damaged record), not a verdict: stop.
      std::string tail;
      std::ifstream log(run_dir / "worker.log");
      for (std::string line; std::getline(log, line);)
        if (!line.empty() && line[0] != '{') tail = line;
      failure_ = "worker " + std::to_string(slot.worker) + " ended without a verdict on " + slot.item + " (" + how +
                 (tail.empty() ? "" : ": " + tail) + "); see " + (run_dir / "worker.log").string() +
                 "; nothing was recorded for it: run `dit-ar work` again";
    }
  }

  // runs/<id>/worker.json: which worker and GPU judged the run, its timed stages, and what the
  // other workers ran during them (no worker is pinned to CPUs apart from the others).
  void write_beside(const Slot& slot, nlohmann::json& attempt, const fs::path& run_dir, double ended) {
    std::vector<StageSpan> own = read_stages(run_dir);
    nlohmann::json timed = nlohmann::json::array();
    nlohmann::json beside = nlohmann::json::array();
    std::vector<std::string> summary;
    for (const auto& span : own) {
      if (!timing_stage(span, run_dir)) continue;
      const double from = span.from;
      const double to = span.to.value_or(ended);
      timed.push_back({{"stage", span.stage}, {"from", iso_time(from)}, {"to", iso_time(to)}});
      for (const auto& other : slots_) {
        if (other.worker == slot.worker) continue;
        for (const auto& entry : queue_["items"]) {
          for (const auto& neighbour : entry["attempts"]) {
            if (neighbour.value("worker", 0) != other.worker || !neighbour.contains("run_dir")) continue;
            const fs::path neighbour_dir = context_.state.root() / neighbour["run_dir"].get<std::string>();
            // A stage left open by a worker that was killed ended with it.
            double open_until = ended;
            if (neighbour.contains("ended") && neighbour["ended"].is_string())
              open_until = parse_iso_time(neighbour["ended"]).value_or(ended);
            for (const auto& stage : read_stages(neighbour_dir)) {
              const double overlap = std::min(to, stage.to.value_or(open_until)) - std::max(from, stage.from);
              if (overlap <= 0) continue;
              beside.push_back({{"during", span.stage},
                                {"worker", other.worker},
                                {"gpu", neighbour.value("gpu", "")},
                                {"same_gpu", !slot.gpu.empty() && neighbour.value("gpu", "") == slot.gpu},
                                {"item", entry["id"]},
                                {"run_dir", neighbour["run_dir"]},
                                {"stage", stage.stage},
                                {"timing", timing_stage(stage, neighbour_dir)},
                                {"overlap_s", std::round(overlap * 1000) / 1000}});
              std::ostringstream line;
              line << "worker " << other.worker << ": " << stage.stage << " " << std::fixed << std::setprecision(1)
                   << overlap << " s";
              summary.push_back(line.str());
            }
          }
        }
      }
    }
    attempt["beside"] = summary;
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    write_json_atomic(run_dir / "worker.json",
                      {{"worker", slot.worker},
                       {"gpu", slot.gpu},
                       {"cuda_visible_devices", slot.gpu.empty() ? (visible ? visible : "") : slot.gpu},
                       {"item", slot.item},
                       {"commit", attempt.value("commit", "")},
                       {"best", attempt.value("best", "")},
                       {"started", attempt.value("started", "")},
                       {"ended", iso_time(ended)},
                       {"cpus_pinned", false},
                       {"timed_stages", timed},
                       {"beside", beside}});
  }

  // Records the verdicts whose turn it is, in the queue's order: the first undecided item's, when
  // it was judged against the best of now; a verdict on an older best is dropped (judged again).
  void record_in_order() {
    for (;;) {
      nlohmann::json* head = nullptr;
      for (auto& entry : queue_["items"])
        if (entry["decision"].is_null()) {
          head = &entry;
          break;
        }
      if (!head) return;
      const std::string id = (*head)["id"];
      drop_stale_verdicts();
      auto verdict = verdicts_.find(id);
      if (verdict == verdicts_.end()) return;
      if (options_.max_experiments > 0 && recorded_ >= options_.max_experiments) return;
      record(*head, verdict->second);
      verdicts_.erase(verdict);
    }
  }

  void drop_stale_verdicts() {
    const std::string current = best();
    for (auto it = verdicts_.begin(); it != verdicts_.end();) {
      if (it->second.best == current) {
        ++it;
        continue;
      }
      nlohmann::json& entry = item(it->first);
      entry["attempts"][it->second.attempt]["outcome"] =
          "stale: judged on " + short_id(it->second.best) + ", the best is now " + short_id(current);
      out_ << "  " << it->first << " " << short_id(it->second.record.commit) << "  judged on "
           << short_id(it->second.best) << ", but the best moved to " << short_id(current)
           << ": rebased and judged again\n"
           << std::flush;
      it = verdicts_.erase(it);
      save();
    }
  }

  void record(nlohmann::json& entry, const Verdict& verdict) {
    const ExperimentRecord& record = verdict.record;
    nlohmann::json& attempt = entry["attempts"][verdict.attempt];
    attempt["outcome"] = "recording";
    save();
    GitRepository& repository = *context_.repository;
    context_.state.store_inflight({{"phase", "recording"}, {"kind", "experiment"}, {"record", record.to_json()}});
    apply_record(repository, context_.state, record);
    if (record.status == Status::keep) {
      // The session's branch follows the best, when the checkout is as the coordinator left it.
      if (repository.head_commit() == record.best_before && repository.dirty_paths().empty())
        repository.reset_hard(record.commit);
      else
        out_ << "warning: the checkout moved or has edits: the branch was left at "
             << short_id(repository.head_commit()) << "; the best is " << short_id(record.commit) << "\n";
    }
    context_.state.clear_inflight();
    attempt["outcome"] = "recorded";
    entry["decision"] = decision_of(record, attempt);
    save();
    take_records_copy();
    ++recorded_;
    out_ << "  " << entry["id"].get<std::string>() << " " << short_id(record.commit) << "  recorded "
         << to_string(record.status)
         << (record.status == Status::keep ? ": the best is now " + short_id(record.commit) : std::string()) << "\n"
         << std::flush;
    if (record.status == Status::keep) {
      // Every worker judging on the old best judges for nothing: it is stopped, its candidate
      // rebased onto the new best and judged again.
      for (auto& slot : slots_) {
        if (!slot.pid || slot.cancelled) continue;
        if (item(slot.item)["attempts"][slot.attempt].value("best", "") == record.commit) continue;
        stop(slot);
      }
    }
  }

  SessionContext& context_;
  const Lane& lane_;
  WorkOptions options_;
  int lock_fd_;
  std::optional<fs::path> sbatch_;
  std::vector<std::string> slurm_options_;
  std::ostream& out_;
  std::string executable_;
  std::vector<Slot> slots_;
  nlohmann::json queue_;
  std::map<std::string, Verdict> verdicts_;
  Snapshot records_;
  int recorded_ = 0;
  std::optional<std::string> failure_;
};

int run_work(const CommonOptions& options, const WorkOptions& work) {
  SessionContext context = open_session_context(options);
  nlohmann::json session = context.state.load_session();
  const Lane& lane = context.config.lane(session.at("lane"));
  if (work.workers < 1) refuse("--workers must be at least 1", "dit-ar work --workers 4");
  std::optional<fs::path> sbatch;
  if (work.slurm) {
    if (!work.gpus.empty())
      refuse("--gpus names this host's GPUs, and --slurm runs the workers on the cluster's nodes",
             "leave --gpus out: Slurm gives each job of a GPU lane one GPU (--gres=gpu:1)");
    sbatch = find_on_path("sbatch");
    if (!sbatch) refuse("--slurm: sbatch is not on PATH", "install Slurm's client commands, or run without --slurm");
  } else if (!work.slurm_arguments.empty()) {
    refuse("--slurm-args without --slurm", "dit-ar work --slurm --slurm-args \"--partition=gpu\"");
  }
  const std::vector<std::string> gpus = work.slurm ? std::vector<std::string>{} : worker_gpus(work.gpus);
  if (!gpus.empty() && static_cast<int>(gpus.size()) < work.workers)
    refuse(std::to_string(work.workers) + " workers need as many GPUs, and " + std::to_string(gpus.size()) +
               " are named (" + listed(gpus) + "): two workers never time on one GPU",
           "dit-ar work --workers " + std::to_string(gpus.size()) +
               ", or name more GPUs with --gpus (--gpus none: a CPU lane, no GPU)");
  fs::create_directories(context.state.root());
  LockFile lock(context.state.lock_file());
  for (const auto& stale : remove_stale_git_locks(*context.repository, context.state))
    std::cerr << "dit-ar: removed " << stale.string() << ", left by a git update of a driver that was stopped\n";
  restore_interrupted_baseline(context.state);
  recover_interrupted_run(context, std::cerr);
  std::ostream& out = options.json ? std::cerr : std::cout;
  Coordinator coordinator(context, lane, work, gpus, lock_descriptor(context.state.lock_file()), sbatch, out);
  coordinator.recover();
  report_sealed(context.state, context.state.seal_undecided_runs());
  session = context.state.load_session();
  validate_contract(context.config);
  if (!session.contains("baseline"))
    refuse("no baseline recorded for this session", "dit-ar baseline   (on the unmodified code at init)");
  require_branch_and_clean_tree(context, session);
  GitRepository& repository = *context.repository;
  const auto best = repository.resolve_reference(kBestRef);
  if (!best) refuse(std::string(kBestRef) + " is missing", "dit-ar baseline records it; run it first");
  // A coordinator stopped between a KEEP and moving the branch: the branch follows now.
  if (repository.head_commit() != *best && repository.is_descendant_of(*best, repository.head_commit()))
    repository.reset_hard(*best);
  if (repository.head_commit() != *best)
    refuse("HEAD " + short_id(repository.head_commit()) + " is not the best commit " + short_id(*best) +
               " (dit-ar work judges the queue's candidates, not the checkout)",
           "git reset --hard " + std::string(kBestRef) + ", and queue the commit: dit-ar queue add ... <commit>");
  // The judge is built (or verified) once, before any worker starts: the workers share it.
  {
    const fs::path logs = context.state.root() / "work";
    fs::create_directories(logs);
    nlohmann::json unused = nlohmann::json::object();
    ProgressReporter progress(ProgressFormat::text, out, std::cout, std::cerr);
    RunRequest request = session_run_request(context, lane, logs, unused, progress);
    request.on_child = nullptr;
    if (auto failure = ensure_judge_build(context, lane, session, request))
      throw Error(ErrorKind::io, "the judge could not be built: " + *failure);
  }
  out << "dit-ar work: " << work.workers << " worker" << (work.workers == 1 ? "" : "s")
      << (sbatch         ? " as Slurm jobs (" + sbatch->string() + (lane.gpu ? ", a GPU each" : ", no GPU") + ")"
          : gpus.empty() ? " (no GPU)"
                         : " on GPUs " + listed(std::vector<std::string>(gpus.begin(), gpus.begin() + work.workers)))
      << ", lane " << lane.name << ", best " << short_id(*best) << "\n"
      << std::flush;
  const int recorded = coordinator.run();

  const nlohmann::json& queue = coordinator.queue();
  int undecided = 0;
  Fields fields;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& entry : queue["items"]) {
    if (entry["decision"].is_null()) {
      ++undecided;
      continue;
    }
    const auto& decision = entry["decision"];
    fields.push_back({"item", entry["id"].get<std::string>() + " " + decision.value("status", "") + " " +
                                  short_id(decision.value("commit", "")) + " worker " + decision.value("worker", "") +
                                  (decision.value("gpu", "").empty() ? "" : " GPU " + decision.value("gpu", ""))});
    items.push_back({{"id", entry["id"]}, {"decision", decision}});
  }
  fields.insert(fields.begin(), {{"status", undecided ? "STOPPED" : "DRAINED"},
                                 {"recorded", std::to_string(recorded)},
                                 {"undecided", std::to_string(undecided)},
                                 {"workers", std::to_string(work.workers)},
                                 {"best", repository.resolve_reference(kBestRef).value_or("")}});
  print_result_block(std::cout, fields, options.json, {{"items", items}});
  return kExitKeep;
}

}  // namespace

void add_work_commands(CLI::App& app, CommonOptions& options) {
  CLI::App* queue = app.add_subcommand(
      "queue",
      "The candidates `dit-ar work` judges: commits on branches, or patches, each with its classification "
      "and description (the state directory's queue.json)");
  queue->require_subcommand(1);
  auto add = std::make_shared<QueueAddOptions>();
  CLI::App* add_command =
      queue->add_subcommand("add",
                            "Queue one candidate: a commit (one ordinary commit; it is rebased onto the best "
                            "when judged) or --patch FILE (a unified diff, made a commit on the best now)");
  add_candidate_options(*add_command, add->classification, add->description, "What kind of change it is (program.md)");
  add_command->add_option("commit", add->commit, "The candidate commit (a branch, tag or id)");
  add_command->add_option("--patch", add->patch, "The candidate as a patch file instead of a commit");
  add_common_options(*add_command, options, true);
  add_command->callback([&options, add] { finish_with(queue_add(options, *add)); });
  CLI::App* list_command = queue->add_subcommand("list", "Each item: pending, running, judged or its decision");
  add_common_options(*list_command, options, true);
  list_command->callback([&options] { finish_with(queue_list(options)); });

  auto work = std::make_shared<WorkOptions>();
  CLI::App* work_command = app.add_subcommand(
      "work",
      "Judge the queue with N workers at once, each in its own git worktree and build folders and on its own GPU: "
      "every candidate against the current best, the decisions recorded in the queue's order (a candidate judged on "
      "a best that has since moved is rebased and judged again; a rebase conflict is CRASH). Exit 0 when the queue "
      "is drained or --max-experiments decisions are recorded, 2 setup or input error.");
  work_command->add_option("--workers", work->workers, "How many experiments run at once")->capture_default_str();
  work_command->add_option("--gpus", work->gpus,
                           "The GPUs, one a worker: a list of device indices (0,1,2,3), or none (a CPU lane); "
                           "default: CTest's allocation, else CUDA_VISIBLE_DEVICES, else none");
  work_command->add_option("--max-experiments", work->max_experiments,
                           "Stop after recording this many decisions (0: drain the queue)");
  work_command->add_flag("--slurm", work->slurm,
                         "Run each worker as a Slurm job (sbatch --wait; a GPU lane's asks --gres=gpu:1): the state "
                         "directory and the repository must be on a filesystem every node shares (dit-ar doctor "
                         "--slurm checks)");
  work_command->add_option("--slurm-args", work->slurm_arguments,
                           "More sbatch options for every job, split at spaces (--slurm-args \"--partition=gpu\")");
  add_common_options(*work_command, options, true);
  work_command->callback(
      [&options, work] { finish_with(with_file_errors_named([&] { return run_work(options, *work); })); });

  auto worker = std::make_shared<WorkerOptions>();
  CLI::App* worker_command = app.add_subcommand("worker", "(internal: one candidate judged for dit-ar work)");
  worker_command->group("");
  worker_command->add_option("--worker", worker->worker)->required();
  worker_command->add_option("--commit", worker->commit)->required();
  worker_command->add_option("--best", worker->best)->required();
  worker_command->add_option("--run-dir", worker->run_dir)->required();
  worker_command->add_option("--classification", worker->classification)->required();
  worker_command->add_option("--description", worker->description)->required();
  worker_command->add_option("--gpu", worker->gpu);
  worker_command->add_option("--lock-fd", worker->lock_fd);
  add_common_options(*worker_command, options, false);
  worker_command->callback(
      [&options, worker] { finish_with(with_file_errors_named([&] { return run_worker(options, *worker); })); });
}

}  // namespace dit::ar
