#!/usr/bin/env bash
# What a wavelet's hop costs the host's core, predicted rather than timed: steps one steady-state
# hop of the saturated 512-router row (bench_fabric's BM_SaturatedRow, one thread) instruction by
# instruction under gdb, from an entry of Router::ingest_hop to its next (the hop, then the
# engine loop's way to the next tile's), and hands that path, repeated, to llvm-mca with a model
# of the host's core (-mcpu=native). It prints the path's instructions and memory operands, the
# cycles llvm-mca predicts each repetition takes, and what the core's resources alone would allow
# (the block reciprocal throughput) with the busiest of them.
#
# Unlike a wall time the prediction does not move with the host's load, and unlike an instruction
# count (scripts/hop_cost.sh) it sees what bounds the hop: on the Zen 4 hosts of issue 14, the
# address generation of its memory operands (docs/performance.md, "Where it stands"). A change
# that cuts loads but makes the function save more registers shows up here as what it is. The
# model is llvm-mca's: every load hits the first-level cache, branches go as traced (predicted),
# a call is a store and a return a load, and loads and stores do not alias. On the sixty-first
# round's host it predicted 33.6 cycles a hop at 8c474e3, where the row measured about 35.
#
#   bash scripts/hop_mca.sh                       # this tree's release bench_fabric (built if missing)
#   bash scripts/hop_mca.sh OTHER/bench_fabric    # another build's, e.g. an older commit's
#   MCPU=NAME   llvm-mca's core model (default native: the host's; e.g. znver4, sapphirerapids)
#   KEEP=FILE   also write the path there as llvm-mca's input (edit it to ask "what if")
#   SKIP=N      calls of the function let go by before the traced one (default 30000: the row full)
#   FUNC=NAME and ARGS='...'  another function and program arguments (any binary with symbols:
#               the test traces a program of its own)
#
# Needs gdb and llvm-mca (scripts/setup.sh installs both). Exit code 2 for a usage error. Never
# run by CI as a measurement; a test (HopMcaScript) checks it on a path worked out by hand.
set -euo pipefail
usage() { echo "hop_mca: $1 (usage: bash scripts/hop_mca.sh [OTHER/bench_fabric]; see the script's header)" >&2; exit 2; }
case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*) usage "unknown option $1" ;;
esac
[ $# -le 1 ] || usage "one binary at most, got $# arguments"
other=""
[ -n "${1:-}" ] && other="$(realpath -m -- "$1")"
keep=""
[ -n "${KEEP:-}" ] && keep="$(realpath -m -- "$KEEP")"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[[ "${SKIP:-30000}" =~ ^[0-9]+$ ]] || usage "SKIP must be a whole number, got '${SKIP}'"
command -v gdb >/dev/null || usage "gdb is not installed (bash scripts/setup.sh installs it)"
mca="$(command -v llvm-mca-16 || command -v llvm-mca || true)"
[ -n "$mca" ] || usage "llvm-mca is not installed (bash scripts/setup.sh installs llvm-16)"
bin="${other:-build/release/bench_fabric}"
if [ -z "$other" ] && [ ! -x "$bin" ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release --target bench_fabric >/dev/null
fi
[ -x "$bin" ] || usage "$bin: no such executable"
func="${FUNC:-wse::Router::ingest_hop}"
args="${ARGS:---benchmark_filter=^BM_SaturatedRow/W:512/K:20000/threads:1/ --benchmark_min_time=0.001}"
mcpu="${MCPU:-native}"
printf 'nop\n' | "$mca" -mcpu="$mcpu" - >/dev/null 2>&1 || usage "llvm-mca does not know the core model '$mcpu' (MCPU; $mca -mcpu=help lists them)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The trace: the function's breakpoint let go by SKIP times, then enough steps for two entries
# (a hop of the row is about 115 instructions; the steps stop at the program's end if sooner).
steps=1200
cat >"$tmp/trace.gdb" <<EOF
set pagination off
set confirm off
set print asm-demangle off
set disassembly-flavor att
break $func
run $args
ignore 1 ${SKIP:-30000}
continue
delete
set logging file $tmp/trace.txt
set logging overwrite on
set logging redirect on
set logging enabled on
set \$i = 0
while \$i < $steps
  x/i \$pc
  stepi
  set \$i = \$i + 1
end
set logging enabled off
kill
quit
EOF
gdb -q -batch -x "$tmp/trace.gdb" "$bin" >"$tmp/gdb.log" 2>&1 || true
[ -s "$tmp/trace.txt" ] || { echo "hop_mca: gdb traced nothing (did $func run $((${SKIP:-30000} + 2)) times?); its log:" >&2; tail -20 "$tmp/gdb.log" >&2; exit 1; }

python3 - "$tmp" "$mca" "$mcpu" "$bin" "$func" "${SKIP:-30000}" "$keep" <<'EOF'
import os, re, subprocess, sys
tmp, mca, mcpu, binary, func, skip, keep = sys.argv[1:8]
# "=> 0xADDR <symbol+off>:\tinstruction", the symbol mangled (no brackets in it): the function's
# entries are its lines without an offset, their symbol the function's name mangled (its last
# part after its length, as in _ZN3wse6Router10ingest_hopEm...) or a C function's own.
ins = []
for line in open(f'{tmp}/trace.txt'):
    m = re.match(r'=> 0x[0-9a-f]+ <([^>]*)>:\s*(.*)', line.strip())
    if m: ins.append((m.group(1), m.group(2)))
leaf = func.split('::')[-1]
own = re.compile(rf'^{re.escape(leaf)}$|{len(leaf)}{re.escape(leaf)}E')
entries = [i for i, (sym, _) in enumerate(ins) if '+' not in sym and own.search(sym)]
if len(entries) < 2:
    sys.exit(f"hop_mca: the trace holds {len(entries)} entry of {func} in {len(ins)} steps, not two: no whole path to predict")
path = ins[entries[0]:entries[1]]
# What llvm-mca reads: AT&T assembly without addresses. A branch goes to one label (taken or
# not, it is one instruction of the path); an indirect jump is a nop (its target is the path's
# next line); a call stores the return address and a return loads it; a push or pop is a store
# or a load beside them; %rip-relative operands (jump tables, globals) become plain loads.
out = []
for _, x in path:
    x = re.sub(r'\s+#.*$', '', x).strip()
    x = re.sub(r'\s+<[^>]*>$', '', x)
    op = x.split()[0] if x else ''
    if op == 'call' or op.startswith('call'):
        x = 'movq %r11, -8(%rsp)'
    elif op.startswith('ret'):
        x = 'movq -8(%rsp), %r11'
    elif op.startswith('j'):
        x = 'nop' if '*' in x else f'{op} .Lpath'
    elif op.startswith('push'):
        x = f'movq {x.split()[1]}, -16(%rsp)'
    elif op.startswith('pop'):
        x = f'movq -16(%rsp), {x.split()[1]}'
    x = re.sub(r'-?0x[0-9a-f]+\(%rip\)', '64(%rbx)', x)
    x = re.sub(r'\bnopw?l?\s+.*', 'nop', x) if op.startswith('nop') else x
    out.append(x)
text = '.Lpath:\n' + '\n'.join(out) + '\n'
open(f'{tmp}/path.s', 'w').write(text)
if keep:  # (under a temporary name, renamed: a reader never finds half a file)
    open(keep + '.tmp', 'w').write(text)
    os.replace(keep + '.tmp', keep)
iterations = 300
r = subprocess.run([mca, f'-mcpu={mcpu}', f'-iterations={iterations}', '-bottleneck-analysis', f'{tmp}/path.s'],
                   capture_output=True, text=True)
if r.returncode != 0:
    sys.exit("hop_mca: llvm-mca refused the path:\n" + r.stderr[-2000:])
rep = r.stdout
def field(name):
    m = re.search(rf'^{name}:\s+([\d.]+)', rep, re.M)
    return float(m.group(1)) if m else None
cycles, rthroughput = field('Total Cycles'), field('Block RThroughput')
if cycles is None or rthroughput is None:
    sys.exit("hop_mca: no cycle figures in llvm-mca's report:\n" + rep[:2000])
memory = sum(1 for x in out if '(' in x and not x.startswith(('lea', 'nop')))
# The resource pressure table: each resource's busy share over the run.
pressure = {}
m = re.search(r'Resource pressure per iteration:\n(.*?)\n(.*?)\n', rep, re.S)
if m:
    names = [n.strip('[]') for n in m.group(1).split()]
    index = dict(re.findall(r'^\[(\d+(?:\.\d+)?)\]\s+-\s+(\S+)', rep, re.M))
    for k, v in zip(names, m.group(2).split()):
        if v != '-' and k in index:
            pressure[index[k]] = float(v) / (cycles / iterations)
busiest = sorted(pressure.items(), key=lambda kv: -kv[1])[:4]
bound = re.search(r'Throughput Bottlenecks:.*?Resource Pressure\s+\[\s*([\d.]+)%\s*\].*?Data Dependencies:\s+\[\s*([\d.]+)%\s*\]', rep, re.S)
where = f"{func} after {skip} calls" if func != 'wse::Router::ingest_hop' else f"saturated row, 512 routers, one thread, the hop after {skip}"
print(f"hop_mca: {binary}: {where}; llvm-mca -mcpu={mcpu}")
print(f"  instructions a hop          {len(out):6d}")
print(f"  memory operands a hop       {memory:6d}  (a call's store and a return's load included)")
print(f"  predicted cycles a hop      {cycles / iterations:8.1f}  ({iterations} repetitions of the traced path)")
print(f"  resources alone             {rthroughput:8.1f}  (block reciprocal throughput)")
if busiest:
    print("  busiest resources           " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in busiest))
if bound:
    print(f"  cycles with backend pressure from resources {bound.group(1)}%, from data dependencies {bound.group(2)}%")
if keep:
    print(f"  path written to {keep}")
EOF
