// The main of CPU benchmark suites: no device probe.
#include "bench/support/bench_support.h"

int main(int argc, char** argv) { return dit::bench::run_main(argc, argv, {}); }
