#!/usr/bin/env bash
# Speed, tracked like a result: builds the release benchmarks, runs them, and writes
# BENCHMARKS.md (or the file given) with the machine, the date and every figure. The row
# benchmarks (BM_LeanRow, BM_SaturatedRow) carry their ratio to the bare-loop ceiling measured in
# the same process (`of_ceiling`: wavelet hops per second over the ceiling's tile-cycles per
# second; benchmarks/bare_loop.hpp), which compares across machines; the others are read as
# ratios between rows of one run. Google Benchmark's own warnings (e.g. that the Debian package
# of the library was built as DEBUG, which does not time our code) are kept, as lines starting
# with ***. Not run: wse_setup_memory (a memory measurement, docs/performance.md). Never run by
# CI: it times the host. A few minutes.
#
#   bash scripts/bench.sh [FILE]     # FILE: where to write (default BENCHMARKS.md in the tree's root)
set -euo pipefail
case "${1:-}" in
  -h | --help)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "bench: unknown option $1 (bash scripts/bench.sh [FILE])" >&2
    exit 2
    ;;
esac
# FILE is the caller's path: made absolute before the script moves to the tree's root.
out="BENCHMARKS.md"
[ -n "${1:-}" ] && out="$(realpath -m -- "$1")"
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build --preset release --target bench_fabric bench_barrier bench_gemv bench_sparse_mac bench_cluster bench_functional >/dev/null
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
{
  echo "# Benchmarks"
  echo
  echo "Written by \`scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo "Host: $(nproc) hardware threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')."
  echo "One run each; on a shared machine read ratios between rows of the same run (and \`of_ceiling\`), not absolute times."
  for b in bench_fabric bench_barrier bench_gemv bench_sparse_mac bench_cluster bench_functional; do
    echo
    echo "## $b"
    echo
    echo '```'
    "./build/release/$b" --benchmark_color=false 2>&1 || echo "($b failed)"
    echo '```'
  done
} > "$tmp"
chmod 644 "$tmp"  # mktemp makes it 0600; the file is for everyone to read
mv "$tmp" "$out"
trap - EXIT
echo "bench: wrote $out"
