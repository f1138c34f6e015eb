#!/usr/bin/env bash
# Speed, tracked like a result: builds the release benchmarks, runs them, and writes
# BENCHMARKS.md (or the file given) with the machine, the date and every figure. The row
# benchmarks (BM_LeanRow, BM_SaturatedRow) carry their ratio to the bare-loop ceiling measured in
# the same process (`of_ceiling`: wavelet hops per second over the ceiling's tile-cycles per
# second; benchmarks/bare_loop.hpp), which compares across machines; the others are read as
# ratios between rows of one run. Google Benchmark's own warnings (e.g. that the Debian package
# of the library was built as DEBUG, which does not time our code) are kept, as lines starting
# with ***. Not run: wse_setup_memory (a memory measurement, docs/performance.md). Never run by
# CI: it times the host. A few minutes. A benchmark that fails (a crash, an exit code, a row
# that skips with an error) is marked in the file, named on stderr, and the script exits 1; the
# file is still written, beside the old one's place: FILE.failed, so the last good results stay.
#
#   bash scripts/bench.sh [FILE]     # FILE: where to write (default BENCHMARKS.md in the tree's root)
set -euo pipefail
case "${1:-}" in
  -h | --help)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "bench: unknown option $1 (bash scripts/bench.sh [FILE])" >&2
    exit 2
    ;;
esac
[ $# -le 1 ] || { echo "bench: one FILE at most, got $# arguments (bash scripts/bench.sh [FILE])" >&2; exit 2; }
# FILE is the caller's path: made absolute before the script moves to the tree's root.
out="$(realpath -m -- "${1:-$(dirname "$0")/../BENCHMARKS.md}")"
# Where FILE goes is checked before the minutes of benchmarks, not after them (the results were
# lost when the final rename failed). The results are written beside it, under a temporary name
# in the same folder, so the rename is atomic (a temporary in /tmp is copied across file systems).
dir="$(dirname -- "$out")"
[ -d "$dir" ] || { echo "bench: $dir: no such folder (for $out)" >&2; exit 2; }
[ -w "$dir" ] || { echo "bench: $dir: not writable (for $out)" >&2; exit 2; }
[ ! -d "$out" ] || { echo "bench: $out is a folder (expected a file to write)" >&2; exit 2; }
cd "$(dirname "$0")/.."
if ! cmake --preset release >/dev/null || ! cmake --build --preset release --target bench_fabric bench_barrier bench_gemv bench_sparse_mac bench_cluster bench_functional >/dev/null; then
  echo "bench: building the benchmarks failed (cmake's output above)" >&2
  exit 1
fi
tmp="$(mktemp "$dir/.$(basename -- "$out").XXXXXX")"
trap 'rm -f "$tmp" "$tmp.run"' EXIT
failed=()
{
  echo "# Benchmarks"
  echo
  echo "Written by \`scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo "Host: $(nproc) hardware threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')."
  echo "One run each; on a shared machine read ratios between rows of the same run (and \`of_ceiling\`), not absolute times."
  echo "In rows timed by the engine's own clock (\`manual_time\`), read Time: CPU is Google Benchmark's main-thread CPU, set-up and the reference loops in, a two-thread run's workers out."
  for b in bench_fabric bench_barrier bench_gemv bench_sparse_mac bench_cluster bench_functional; do
    echo
    echo "## $b"
    echo
    echo '```'
    rc=0
    "./build/release/$b" --benchmark_color=false >"$tmp.run" 2>&1 || rc=$?
    cat "$tmp.run"
    # Google Benchmark exits 0 when a row skips with an error (SkipWithError): its line says
    # ERROR OCCURRED.
    if [ "$rc" -ne 0 ] || grep -q "ERROR OCCURRED" "$tmp.run"; then
      echo "($b failed: exit $rc$(grep -q 'ERROR OCCURRED' "$tmp.run" && echo ', a row skipped with an error'))"
      failed+=("$b")
    fi
    rm -f "$tmp.run"
    echo '```'
  done
} > "$tmp"
chmod 644 "$tmp"  # mktemp makes it 0600; the file is for everyone to read
if [ ${#failed[@]} -gt 0 ]; then
  mv "$tmp" "$out.failed"
  trap - EXIT
  echo "bench: ${failed[*]} failed; results in $out.failed ($out left as it was)" >&2
  exit 1
fi
mv "$tmp" "$out"
trap - EXIT
echo "bench: wrote $out"
