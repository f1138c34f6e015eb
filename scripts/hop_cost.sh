#!/usr/bin/env bash
# What a wavelet's hop costs, counted rather than timed: instructions and simulated cache misses
# per hop of the saturated 512-router row (bench_fabric's BM_SaturatedRow, one thread), under
# valgrind's callgrind with its cache model, collected inside Wafer::run only; the same for the
# lean row (BM_LeanRow, benchmarks/lean_row.hpp: the row's rules without the engine), inside
# LeanRow::run; then the row run east to west (BM_SaturatedRowWest: its hops' credits go back
# late, Router::kLateNote). The counts do not depend on the host's load, so on a noisy machine they compare
# two binaries where wall times cannot (docs/performance-history.md, eleventh round). The cache
# model is fixed, not the host's: a 32 KiB 8-way first level and a 512 KiB 8-way last level (one
# core of the EPYC hosts this was tuned on), 64-byte lines; it ignores prefetch instructions.
#
#   bash scripts/hop_cost.sh                 # this tree's release bench_fabric (built if missing)
#   bash scripts/hop_cost.sh OTHER/bench_fabric   # another build's, e.g. an older commit's
#
# Needs valgrind (not a build dependency: apt-get install valgrind). Never run by CI.
set -euo pipefail
# OTHER/bench_fabric is the caller's path: made absolute before the script moves to the tree's root.
case "${1:-}" in
  -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "hop_cost: unknown option $1 (bash scripts/hop_cost.sh [OTHER/bench_fabric])" >&2
    exit 2
    ;;
esac
[ $# -le 1 ] || { echo "hop_cost: one bench_fabric at most, got $# arguments (bash scripts/hop_cost.sh [OTHER/bench_fabric])" >&2; exit 2; }
other=""
[ -n "${1:-}" ] && other="$(realpath -m -- "$1")"
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null; then
  echo "hop_cost: valgrind is not installed (apt-get install valgrind)" >&2
  exit 2
fi
bin="${other:-build/release/bench_fabric}"
if [ -z "$other" ] && [ ! -x "$bin" ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release --target bench_fabric >/dev/null
fi
if [ ! -x "$bin" ]; then
  echo "hop_cost: $bin: no such executable (expected a bench_fabric binary)" >&2
  exit 2
fi
width=512 wavelets=20000
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
count() {  # count NAME FILTER TOGGLE
  valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=524288,8,64 \
    --toggle-collect="$3" --callgrind-out-file="$tmp/out" \
    "$bin" --benchmark_filter="$2" --benchmark_format=json \
    >"$tmp/json" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  python3 - "$tmp/out" "$tmp/json" "$width" "$wavelets" "$bin" "$1" <<'EOF'
import json, sys
out, js, width, wavelets, binary, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
events = totals = None
for line in open(out):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith("summary:") or line.startswith("totals:"):
        totals = [int(v) for v in line.split()[1:]]
bench = json.load(open(js))["benchmarks"]
if not events or not totals or not bench or not totals[0]:
    sys.exit(f"hop_cost: no counts for the {name} (did the benchmark run? is it a bench_fabric binary that has it?)")
runs = sum(b["iterations"] for b in bench)
hops = width * wavelets * runs
c = dict(zip(events, totals))
per = lambda k: c.get(k, 0) / hops
print(f"hop_cost: {binary}: {name}, {width} routers, {wavelets} wavelets, {runs} run(s), one thread")
print(f"  instructions a hop          {per('Ir'):8.1f}")
print(f"  data reads / writes a hop   {per('Dr'):8.1f} / {per('Dw'):.1f}")
print(f"  L1 data misses a hop        {per('D1mr') + per('D1mw'):8.2f}  ({per('D1mr'):.2f} read + {per('D1mw'):.2f} write; 32 KiB model)")
print(f"  last-level misses a hop     {per('DLmr') + per('DLmw'):8.3f}  (512 KiB model)")
EOF
}
count "saturated row" "^BM_SaturatedRow/W:$width/K:$wavelets/threads:1/" 'wse::Wafer::run*'
# (A bench_fabric from before the lean row has none: its count says so, and the script ends there.)
count "lean row" "^BM_LeanRow/W:$width/K:$wavelets/" 'wse::bench::LeanRow::run*'
# (The row run east to west last: a bench_fabric from before the fifty-sixth round has none.)
count "saturated row west" "^BM_SaturatedRowWest/W:$width/K:$wavelets/threads:1/" 'wse::Wafer::run*'
