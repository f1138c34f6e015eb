#!/usr/bin/env bash
# Every test under AddressSanitizer + UndefinedBehaviorSanitizer, and the engine's concurrency
# tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan -j2
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
cmake --preset tsan >/dev/null
cmake --build --preset tsan --target determinism_test activity_threads_test init_graph_test cluster_threads_test
ctest --preset tsan
