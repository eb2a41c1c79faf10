// Work over the driver's own files spread over the host's cores: the hashes and comparisons that
// check the judge's build, the best's and the candidate's trees before and after every run (about
// 1,300 source files and a build folder of hundreds of megabytes each time).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dit::ar {

// Calls body(i) for every i in [0, count), on at most `max_threads` threads (the calling one
// among them; the host's cores when fewer), each taking the next index as it finishes one. Returns
// when every call has returned; the first exception a call threw is rethrown then, and no index
// is started after it.
template <class Body>
void for_each_index(std::size_t count, Body&& body, unsigned max_threads = 8) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>({count, cores, std::max(1u, max_threads)});
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto work = [&] {
    for (std::size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < count;) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (auto& helper : helpers) helper.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace dit::ar
