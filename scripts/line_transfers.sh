#!/usr/bin/env bash
# Which code moves cache lines between the engine's workers, counted rather than timed: builds
# `wse` with every load and store calling benchmarks/line_transfers.cpp (GCC's kernel-address
# instrumentation in its outline mode: no shadow memory, a call per access), runs CONFIG on
# THREADS workers, and prints per worker the code sites whose accesses would move a line between
# two cores (a read of a line another worker wrote last, a write to a line another worker holds),
# per 1,000 of the run's engine cycles, with the worker the line came from (a read's last writer,
# a write's other holders). A site is the first function outside the standard library at the
# access (an inlined std::atomic's load is its caller's). What a run on
# several workers must move each cycle is the barrier's votes and the mail across band edges
# (fabric/cycle_barrier.hpp, fabric/scheduler.hpp); anything else in the list is a line two
# workers share by accident. The counts are the same on any host (no hardware counters needed),
# but a model: a line stays in a core until another core writes it (no capacity, no prefetch).
#
#   bash scripts/line_transfers.sh [CONFIG [THREADS]]
#     CONFIG   a run config (default examples/fc_mnist_3steps.yaml)
#     THREADS  workers (default 2)
#   TOP=N      sites shown per worker (default 12)
#   bash scripts/line_transfers.sh --symbolize RAW BINARY
#              the table alone, from a counts file (LINE_TRANSFERS_OUT) a run of BINARY wrote
#
# The instrumented build goes to build/line_transfers (about 5 minutes on 2 cores the first
# time; the run itself about 20-50x slower than the release build's). Needs g++ and binutils'
# addr2line (build dependencies already). Exit code 2 for a usage error. Never run by CI as a
# measurement; a test (LineTransfersScript) checks the counting on a small program.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "line_transfers: $1 (usage: bash scripts/line_transfers.sh [CONFIG [THREADS]]; see the script's header)" >&2; exit 2; }

# The table: per index (0 the host, w + 1 worker w), the sites by transfers, each with its
# function and line (addr2line), per 1,000 cycles when CYCLES is given.
symbolize() {  # RAW BINARY [CYCLES]
  python3 - "$1" "$2" "${3:-0}" "${TOP:-12}" <<'EOF'
import re, subprocess, sys
raw, binary, cycles, top = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
index, rows = None, {}
for line in open(raw):
    m = re.match(r'index (\d+) accesses (\d+)', line)
    if m:
        index = int(m.group(1)); rows[index] = []
        continue
    m = re.match(r'site (\S+) 0x([0-9a-f]+) reads (\d+) writes (\d+) from(.*)', line)
    if m and index is not None:
        rows[index].append((m.group(1), int(m.group(2), 16), int(m.group(3)), int(m.group(4)), m.group(5).split()))
where = {}
wanted = sorted({at for r in rows.values() for (mod, at, *_ ) in r[:top] if mod.endswith(binary.split('/')[-1])})
if wanted:
    # With -i, a frame per inlined call (innermost first) after each address (-a): the first one
    # outside the standard library names the code that made the access.
    out = subprocess.run(['addr2line', '-a', '-i', '-f', '-C', '-e', binary] + [hex(a - 1) for a in wanted],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    groups, k = [], 0
    while k < len(out):
        if out[k].startswith('0x'):
            groups.append([]); k += 1; continue
        groups[-1].append((out[k], out[k + 1] if k + 1 < len(out) else '')); k += 2
    for a, frames in zip(wanted, groups):
        own = [f for f in frames if not re.match(r'^(std::|__gnu_cxx::|decltype|void std::|bool std::|[a-z_ ]+ std::)', f[0])] or frames
        fn, loc = own[0]
        fn = re.sub(r'\(.*', '', fn)
        where[a] = f"{fn[-60:]} ({loc.split('/')[-1]})"
def name(i):
    return 'host (outside runs)' if i == 0 else f'worker {i - 1}'
def src(tag):
    k, n = tag.split(':')
    return f"{'nobody' if k == 'none' else name(int(k))} {n}"
for i in sorted(rows):
    r = rows[i]
    reads, writes = sum(x[2] for x in r), sum(x[3] for x in r)
    per = f", {1000 * (reads + writes) / cycles:.0f} per 1,000 cycles" if cycles else ''
    print(f"{name(i)}: {reads} reads and {writes} writes that move a line{per}")
    for mod, at, rd, wr, frm in r[:top]:
        figure = f"{1000 * (rd + wr) / cycles:8.1f}" if cycles else f"{rd + wr:8d}"
        print(f"  {figure}  reads {rd:>9} writes {wr:>9}  {where.get(at, mod + ' ' + hex(at))}  from {', '.join(src(t) for t in frm)}")
EOF
}

case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  --symbolize)
    [ $# -eq 3 ] || usage "--symbolize takes RAW and BINARY"
    [ -f "$2" ] || usage "$2: no such counts file"
    [ -x "$3" ] || usage "$3: no such executable"
    symbolize "$2" "$3"
    exit 0
    ;;
  -*) usage "unknown option $1" ;;
esac
config="${1:-$root/examples/fc_mnist_3steps.yaml}"
threads="${2:-2}"
[ $# -le 2 ] || usage "at most CONFIG and THREADS, got $# arguments"
[ -f "$config" ] || usage "$config: no such config file"
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || usage "THREADS must be a positive whole number, got '$threads'"
[[ "${TOP:-12}" =~ ^[1-9][0-9]*$ ]] || usage "TOP must be a positive whole number, got '${TOP}'"
config="$(realpath -- "$config")"

build="$root/build/line_transfers"
mkdir -p "$build"
hooks="$build/libwse_line_transfers.so"
if [ ! -f "$hooks" ] || [ "$root/benchmarks/line_transfers.cpp" -nt "$hooks" ]; then
  g++ -std=c++20 -O2 -fPIC -shared "$root/benchmarks/line_transfers.cpp" -o "$hooks"
fi
flags="-g -fsanitize=kernel-address --param asan-instrumentation-with-call-threshold=0 --param asan-stack=0 --param asan-globals=0"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ -DWSE_BUILD_TESTS=OFF \
    -DWSE_BUILD_BENCHMARKS=OFF "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$hooks -Wl,-rpath,$build" >/dev/null
fi
echo "line_transfers: building the instrumented wse in $build" >&2
cmake --build "$build" -j2 --target wse >/dev/null
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "line_transfers: running $config on $threads worker(s)" >&2
rc=0
LINE_TRANSFERS_OUT="$out/raw.txt" "$build/wse" run "$config" --threads "$threads" --out "$out/run" >"$out/log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "line_transfers: $build/wse run $config --threads $threads failed (exit $rc):" >&2
  tail -20 "$out/log" >&2
  exit $((rc == 2 ? 2 : 1))
fi
[ -f "$out/raw.txt" ] || { echo "line_transfers: the run wrote no counts ($out/raw.txt)" >&2; exit 1; }
report="$out/run/report.json"
[ -f "$report" ] || report="$(find "$out/run" -name report.json | head -1)"
cycles=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r.get('engine_cycles') or r.get('cycles') or 0)" "$report")
echo "$config at --threads $threads: $cycles engine cycles"
symbolize "$out/raw.txt" "$build/wse" "$cycles"
