// A benchmark that always ends in an error: the harness must turn that into a failing exit code
// (tests/bench/CMakeLists.txt checks it), or a broken benchmark would pass its smoke test.
#include <benchmark/benchmark.h>

static void BM_AlwaysFails(benchmark::State& state) {
  for (auto _ : state) {
    state.SkipWithError("the probe fails on purpose");
    break;
  }
}
BENCHMARK(BM_AlwaysFails);
