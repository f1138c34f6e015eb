#!/usr/bin/env bash
# Speed, tracked like a result: builds the release benchmarks, runs them, and writes
# BENCHMARKS.md (or the file given) with the machine, the date and every figure. Each fabric
# figure comes with its ratio to the bare-loop ceiling measured in the same process
# (benchmarks/bare_loop.hpp), which compares across machines; the others are read as ratios
# between rows of one run. Never run by CI: it times the host.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-BENCHMARKS.md}"
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
    "./build/release/$b" --benchmark_color=false 2>/dev/null | grep -v '^\*\*\*' || echo "($b failed)"
    echo '```'
  done
} > "$tmp"
chmod 644 "$tmp"  # mktemp makes it 0600; the file is for everyone to read
mv "$tmp" "$out"
trap - EXIT
echo "bench: wrote $out"
