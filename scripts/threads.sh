#!/usr/bin/env bash
# Which --threads pays for a config on this host, measured the way docs/performance.md measures
# it (issue 14's rounds): `wse run CONFIG` at each thread count asked, in rounds, the counts in
# another order each round (so that a host whose speed drifts within minutes weighs on every
# count alike), each run into a fresh directory. It prints every run's host seconds (per step for
# a training config), then per count the median, fastest and slowest, and its speed-up over the
# same round's one-thread run (best, median, worst). Times are the host's, never results: read
# them as ratios within one run of this script.
#
# Beside each count that ran on several workers, what waiting cost it, from its reports' own
# figures (each worker's share of the multi-worker runs spent waiting at the barrier,
# threads_detail.waiting, and those runs' seconds): the speed-up over one thread had no worker
# waited, each keeping its busy time (the run then as long as the busiest worker's busy time), and
# had that busy time also been shared evenly (as long as the workers' mean). Medians over the
# rounds. What neither reaches is not waiting but the work itself costing more on several workers
# (the host's shared parts, the mail across band edges): docs/performance.md, "A bound for two
# workers on this host".
#
# It also checks what the engine promises: every run gives the same results. The report without
# its host fields (threads, host seconds, rates, memory, waiting) and every file the run wrote
# (checkpoints, streams; not the plots) must be the same bytes in every run; if not, the script
# names what differs and exits 1.
#
#   bash scripts/threads.sh [CONFIG [COUNT...]]
#     CONFIG   a run config (default examples/fc_mnist_3steps.yaml: the FC example cut to 3
#              steps, each on the mesh). A training config should be cut to a few steps with
#              training.detail: all, or most of what is timed is not the mesh.
#     COUNT    a thread count, or "default" (--threads left out: the engine chooses). Default:
#              1, 2, 4, ... up to this host's hardware threads, then default.
#   ROUNDS=N   rounds (default 5)
#   WSE=PATH   the wse binary (default this tree's release build, built if missing)
#   OLD=PATH   another wse binary (an older commit's), also run at one thread in each round: its
#              time over this binary's at one thread (1 is added to the counts if missing); its
#              results are compared too, and only reported
#   PROBE=PATH a benchmark that measures a cache line's round trip between two cores (default
#              bench_barrier beside WSE, when it is there and the host has 2 or more hardware
#              threads; PROBE=none: no probe). It runs before and after every run (about 0.2 s
#              each), and each run's line shows both figures. Some hosts have spells in which
#              that round trip is several times its usual (virtual CPUs placed farther apart),
#              and runs on several workers are then slower while one thread is not
#              (docs/performance.md, "Two threads at worst 1.3x one"). The summary splits each
#              count's speed-ups into the runs whose round trips stayed within twice the lowest
#              the script measured, and the others.
#
# Exit code 2 for a usage error (or a config wse refuses), 1 when runs of one binary differ.
# Never run by CI as a timing; a test (ThreadsScript) runs it on a small GEMV for the check.
set -euo pipefail
# Not run from the tree's root: a config's paths (and CONFIG, WSE, OLD) stay the caller's.
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "threads: $1 (usage: bash scripts/threads.sh [CONFIG [COUNT...]]; see the script's header)" >&2; exit 2; }
case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'  # (the header, however long)
    exit 0
    ;;
  -*) usage "unknown option $1" ;;
esac
config="${1:-$root/examples/fc_mnist_3steps.yaml}"
[ $# -gt 0 ] && shift
[ -f "$config" ] || usage "$config: no such config file"
counts=("$@")
if [ ${#counts[@]} -eq 0 ]; then
  n=$(nproc)
  for ((t = 1; t <= n; t *= 2)); do counts+=("$t"); done
  counts+=(default)
fi
seen=" "
for c in "${counts[@]}"; do
  # (1-4096, as wse's --threads: 4097-9999 passed this test and were refused by wse after the banner.)
  [[ "$c" == default || ( "$c" =~ ^[1-9][0-9]{0,3}$ && "$c" -le 4096 ) ]] || usage "count '$c': expected a thread count (1-4096) or 'default'"
  # A count given twice ran twice a round, and its summary kept one of the two.
  [[ "$seen" == *" $c "* ]] && usage "count '$c' is given twice (each count runs once a round)"
  seen+="$c "
done
rounds="${ROUNDS:-5}"
[[ "$rounds" =~ ^[1-9][0-9]{0,2}$ ]] || usage "ROUNDS='$rounds': expected a number of rounds (1-999)"
wse="${WSE:-$root/build/release/wse}"
if [ -z "${WSE:-}" ] && [ ! -x "$wse" ]; then
  (cd "$root" && cmake --preset release >/dev/null && cmake --build --preset release --target wse >/dev/null)
fi
[ -x "$wse" ] || usage "WSE=$wse: no such executable"
old="${OLD:-}"
[ -z "$old" ] || [ -x "$old" ] || usage "OLD=$old: no such executable"
# OLD is set beside this binary's one-thread run: run one if the counts do not.
if [ -n "$old" ] && ! printf '%s\n' "${counts[@]}" | grep -qx 1; then counts=(1 "${counts[@]}"); fi
command -v python3 >/dev/null || usage "python3 is needed to read the reports (bash scripts/setup.sh installs it)"
probe="${PROBE:-}"
if [ -z "$probe" ]; then
  probe="$(dirname "$wse")/bench_barrier"
  { [ -x "$probe" ] && [ "$(nproc)" -ge 2 ]; } || probe=none
fi
[ "$probe" = none ] || [ -x "$probe" ] || usage "PROBE=$probe: no such executable"
# The host's line round trip between two cores now, in ns ("?" if the probe gave none).
round_trip() {
  [ "$probe" = none ] && { echo "?"; return; }
  local ns
  # (A probe that fails or prints no figure gives "?": the runs go on without it.)
  ns=$({ "$probe" --benchmark_filter='^BM_CycleBarrier' 2>/dev/null || true; } | grep -o 'line_round_trip_ns=[0-9.]*' | head -1 | cut -d= -f2 || true)
  echo "${ns:-?}"
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
runs="$tmp/runs.tsv"
: >"$runs"
# The runs of a round: every count with this binary, and OLD at one thread.
labels=("${counts[@]}")
[ -z "$old" ] || labels+=(old)
echo "threads: $config, ${#labels[@]} runs a round (${labels[*]}), $rounds rounds; $(nproc) hardware threads here"
total=$((rounds * ${#labels[@]})) done_runs=0 began=$(date +%s)
for ((r = 0; r < rounds; ++r)); do
  # Another order each round: rotated by the round, and reversed every other round.
  order=()
  for ((i = 0; i < ${#labels[@]}; ++i)); do order+=("${labels[(i + r) % ${#labels[@]}]}"); done
  if ((r % 2)); then
    rev=()
    for ((i = ${#order[@]} - 1; i >= 0; --i)); do rev+=("${order[i]}"); done
    order=("${rev[@]}")
  fi
  for label in "${order[@]}"; do
    out="$tmp/run"
    rm -rf "$out"
    bin="$wse" args=()
    case "$label" in
      old) bin="$old" args=(--threads 1) ;;
      default) ;;
      *) args=(--threads "$label") ;;
    esac
    rc=0
    before=$(round_trip)
    "$bin" run "$config" "${args[@]}" --out "$out" >"$tmp/log" 2>&1 || rc=$?
    after=$(round_trip)
    if [ "$rc" -ne 0 ]; then
      echo "threads: $bin run $config ${args[*]} failed (exit $rc):" >&2
      tail -20 "$tmp/log" >&2
      exit $((rc == 2 ? 2 : 1))
    fi
    python3 - "$out" "$label" "$((r + 1))" "$before" "$after" >>"$runs" <<'EOF'
import hashlib, json, os, sys
out, label, rnd, before, after = sys.argv[1:6]
report = json.load(open(os.path.join(out, "report.json")))
seconds = report.get("host_seconds_per_step", report.get("host_seconds"))
if seconds is None:
    sys.exit(f"threads: {out}/report.json has no host_seconds: not a report of `wse run`?")
used = report.get("threads", "?")
# What the waiting cost (the summary's bounds), in the unit of `seconds`: the seconds of the runs
# on several workers (a kernel's one run: all of it; a training run's multi_worker_seconds, per
# step as its host_seconds_per_step, and over its wafers run side by side, whose runs it sums,
# as wall time), the least and the mean of the workers' waiting fractions.
detail = report.get("threads_detail") or {}
waiting = detail.get("waiting") or []
lost = {}
if len(waiting) > 1:
    shared = detail.get("multi_worker_seconds", report.get("host_seconds"))
    if "host_seconds_per_step" in report and "multi_worker_seconds" in detail:
        whole = report.get("host_seconds") or 0
        shared = shared * float(seconds) / whole / max(1, detail.get("wafers_at_once", 1)) if whole else None
    if shared is not None and float(seconds) - shared * max(waiting) > 0:
        lost = {"shared": float(shared), "least": min(waiting), "mean": sum(waiting) / len(waiting)}
# What describes the host, not the wafer (how many threads, how long, how much host memory; how
# many tensors the initialization had in flight at once): left out of the comparison.
host = ["threads", "threads_choice", "threads_detail", "host_seconds", "host_seconds_per_step",
        "pe_cycles_per_second", "tile_cycles_per_second", "engine_seconds", "peak_rss_bytes", "time_to_first_loss_seconds",
        "init.seconds", "init.max_in_flight", "init.peak_rss_bytes"]
for path in host:
    *parents, key = path.split(".")
    at = report
    for p in parents:
        at = at.get(p, {}) if isinstance(at, dict) else {}
    if isinstance(at, dict):
        at.pop(key, None)
parts = {"report.json": hashlib.sha256(json.dumps(report, sort_keys=True).encode()).hexdigest()}
for root, _, files in os.walk(out):
    for f in sorted(files):
        rel = os.path.relpath(os.path.join(root, f), out)
        if rel in ("report.json", ".wse-run") or f.endswith(".png"):
            continue
        parts[rel] = hashlib.sha256(open(os.path.join(root, f), "rb").read()).hexdigest()
print("\t".join([rnd, label, repr(float(seconds)), str(used), json.dumps(parts, sort_keys=True), json.dumps(lost), before, after]))
EOF
    # Each run's line, with how far the script is and when it should end (from the runs so far).
    done_runs=$((done_runs + 1))
    left=$(( ($(date +%s) - began) * (total - done_runs) / done_runs ))
    tail -1 "$runs" | awk -F'\t' -v k="$done_runs" -v n="$total" -v eta="$left" \
      '{rt = ($7 == "?" && $8 == "?") ? "" : sprintf("  round trip %s / %s ns", $7 == "?" ? "?" : sprintf("%.0f", $7), $8 == "?" ? "?" : sprintf("%.0f", $8));
        printf "  round %s: %-8s %8.3f s  (threads: %s)%s   [%d/%d runs, ETA %dm%02ds]\n", $1, $2, $3, $4, rt, k, n, eta / 60, eta % 60}'
  done
done

python3 - "$runs" "${counts[@]}" <<'EOF'
import json, statistics, sys
runs_file, counts = sys.argv[1], sys.argv[2:]
runs = []
trip_by = {}  # (label, round) -> the larger of the round trips measured before and after the run
for line in open(runs_file):
    rnd, label, secs, used, parts, lost, before, after = line.rstrip("\n").split("\t")
    runs.append((int(rnd), label, float(secs), used, json.loads(parts), json.loads(lost)))
    trips = [float(x) for x in (before, after) if x != "?"]
    if trips:
        trip_by[(label, int(rnd))] = max(trips)
by = {}
lost_by = {}
for rnd, label, secs, used, parts, lost in runs:
    by.setdefault(label, {})[rnd] = (secs, used, parts)
    if lost:
        lost_by.setdefault(label, {})[rnd] = lost
lowest = min(trip_by.values()) if trip_by else None
base = "1" if "1" in counts else counts[0]
print()
print(f"{'count':<8} {'threads':>7} {'median s':>9} {'fastest':>9} {'slowest':>9}   speed-up over {base} in the same round: best / median / worst")
for label in counts + (["old"] if "old" in by else []):
    rows = by[label]
    secs = [s for s, _, _ in rows.values()]
    used = sorted({u for _, u, _ in rows.values()})
    line = f"{label:<8} {','.join(used):>7} {statistics.median(secs):9.3f} {min(secs):9.3f} {max(secs):9.3f}"
    if label != base:
        ratios = sorted(by[base][r][0] / s for r, (s, _, _) in rows.items())
        line += f"   {ratios[-1]:.2f}x / {statistics.median(ratios):.2f}x / {ratios[0]:.2f}x"
    print(line)
    if label != base and label in lost_by and base == "1":
        # The run as long as its busiest worker's busy time (none waited), then as the mean busy
        # time (shared evenly), over the same round's one-thread run.
        alone, even, share = [], [], []
        for r, l in lost_by[label].items():
            secs = rows[r][0]
            alone.append(by[base][r][0] / (secs - l["shared"] * l["least"]))
            even.append(by[base][r][0] / (secs - l["shared"] * l["mean"]))
            share.append(l["mean"])
        print(f"{'':<8} {'':>7} waiting {100 * statistics.median(share):.0f}% of a worker's time (mean of the workers); "
              f"over {base}, had none waited: {statistics.median(alone):.2f}x, and with even work: {statistics.median(even):.2f}x")
    if label != base and lowest and any(int(u) > 1 for u in used if u.isdigit()):
        # The same speed-ups, split by the host's line round trip around each run: within twice
        # the lowest the script measured, or above (a slow spell of the host's, in which every
        # line the workers pass each other costs that much more).
        def spread(rs):
            ratios = sorted(by[base][r][0] / rows[r][0] for r in rs)
            return f"{ratios[-1]:.2f}x / {statistics.median(ratios):.2f}x / {ratios[0]:.2f}x"
        near = [r for r in rows if (label, r) in trip_by and trip_by[(label, r)] <= 2 * lowest]
        far = [r for r in rows if (label, r) in trip_by and trip_by[(label, r)] > 2 * lowest]
        text = f"{'':<8} {'':>7} host round trip within 2x the lowest ({lowest:.0f} ns): "
        text += f"{len(near)} run(s), {spread(near)}" if near else "no run"
        if far:
            trips = sorted(trip_by[(label, r)] for r in far)
            text += f"; above it ({trips[0]:.0f}-{trips[-1]:.0f} ns): {len(far)} run(s), {spread(far)}"
        print(text)
if "old" in by:
    # (1 is among the counts whenever OLD is set, and every round runs every count.)
    ratios = sorted(by["old"][r][0] / by["1"][r][0] for r in by["old"])
    print(f"OLD over this binary at one thread: {ratios[0]:.2f}-{ratios[-1]:.2f}x, median {statistics.median(ratios):.2f}x "
          "(above 1: this binary is faster)")
# The results: one binary's runs must all agree, file by file.
reference = None
differ = set()
for rnd, label, _, _, parts, _ in runs:
    if label == "old":
        continue
    if reference is None:
        reference = (rnd, label, parts)
        continue
    for name in set(parts) | set(reference[2]):
        if parts.get(name) != reference[2].get(name):
            differ.add(f"{name} (round {rnd}, {label} against round {reference[0]}, {reference[1]})")
print()
if differ:
    print("threads: RESULTS DIFFER between runs of one binary:")
    for d in sorted(differ):
        print("  " + d)
    sys.exit(1)
files = sorted(reference[2])
print(f"results: identical in all {sum(1 for r in runs if r[1] != 'old')} runs ({', '.join(files)})")
if "old" in by:
    same = all(p == reference[2] for _, label, _, _, p, _ in runs if label == "old")
    print(f"OLD's results: {'the same' if same else 'not the same (a binary from before a change in what a run writes?)'}")
EOF
