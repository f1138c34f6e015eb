#!/usr/bin/env bash
# scripts/threads.sh, for what it checks rather than what it times: runs of one binary at any
# thread count agree (a small GEMV with the real wse), a difference in a wafer field is caught and
# named (a stand-in wse whose report depends on --threads), a difference in a host field is not,
# what the workers' waiting cost is worked out as by hand, and usage errors are exit code 2 with
# a message naming what is wrong.
#   bash tests/threads_script_test.sh WSE_BINARY
set -uo pipefail
wse="$1"
# shellcheck source=tests/script_test_lib.sh
source "$(dirname "$0")/script_test_lib.sh"  # src, work, failures, fail()
# expect CODE PATTERN DESCRIPTION -- command...: the command's exit code and a line of its output.
expect() {
  local code="$1" pattern="$2" what="$3"
  shift 4
  "$@" >"$work/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then fail "$what: exit $rc, want $code"; return; fi
  grep -Eq -- "$pattern" "$work/out" || fail "$what: no line matching '$pattern'"
}

cat >"$work/gemv.yaml" <<'EOF'
machine: wse2
mesh: {width: 8, height: 8}
gemv: {rows: 60, cols: 40, seed: 3}
EOF
expect 0 '^results: identical in all 6 runs \(report.json\)$' "the real wse, 1, 2 and default threads" -- \
  env ROUNDS=2 WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2 default
grep -Eq '^2 +2 ' "$work/out" || fail "the summary's row for 2 threads (2 threads used)"
[ "$(grep -c '^  round ' "$work/out")" -eq 6 ] || fail "one line per run"

# A stand-in wse: a report whose "cycles" (a wafer field) or "host_seconds" (a host field)
# depends on --threads, and a result file that does not.
cat >"$work/fake_wse" <<'EOF'
#!/usr/bin/env bash
threads=0 out=""
while [ $# -gt 0 ]; do
  case "$1" in --threads) threads="$2"; shift ;; --out) out="$2"; shift ;; esac
  shift
done
mkdir -p "$out/checkpoints"
echo "weights" >"$out/checkpoints/step_1.safetensors"
if [ "$FAKE" = wafer ]; then
  echo "{\"threads\": $threads, \"host_seconds\": 1.5, \"cycles\": $((100 + threads))}" >"$out/report.json"
elif [ "$FAKE" = kernel ] && [ "$threads" = 2 ]; then
  echo '{"threads": 2, "host_seconds": 2.5, "threads_detail": {"waiting": [0.2, 0.1]}}' >"$out/report.json"
elif [ "$FAKE" = train ] && [ "$threads" = 2 ]; then
  echo '{"threads": 2, "host_seconds": 3.0, "host_seconds_per_step": 1.0,
         "threads_detail": {"waiting": [0.25, 0.05], "multi_worker_seconds": 2.4}}' >"$out/report.json"
elif [ "$FAKE" = wafers ] && [ "$threads" = 2 ]; then
  echo '{"threads": 2, "host_seconds": 3.0, "host_seconds_per_step": 1.0,
         "threads_detail": {"waiting": [0.25, 0.05], "multi_worker_seconds": 4.8, "wafers_at_once": 2}}' >"$out/report.json"
elif [ "$FAKE" = kernel ]; then
  echo '{"threads": 1, "host_seconds": 4.0}' >"$out/report.json"
elif [ "$FAKE" = train ] || [ "$FAKE" = wafers ]; then
  echo '{"threads": 1, "host_seconds": 4.5, "host_seconds_per_step": 1.5}' >"$out/report.json"
else
  echo "{\"threads\": $threads, \"host_seconds\": $((1 + threads)), \"cycles\": 100, \"init\": {\"seconds\": $threads}}" >"$out/report.json"
fi
EOF
chmod +x "$work/fake_wse"
expect 1 '^  report.json \(round 1, 2 against round 1, 1\)$' "a wafer field that depends on the thread count" -- \
  env ROUNDS=1 FAKE=wafer WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
grep -q 'RESULTS DIFFER' "$work/out" || fail "the difference is announced"
expect 0 '^results: identical in all 4 runs \(checkpoints/step_1.safetensors, report.json\)$' "host fields only" -- \
  env ROUNDS=2 FAKE=host WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
expect 0 '^OLD over this binary at one thread: ' "OLD, with 1 added to the counts" -- \
  env ROUNDS=1 FAKE=host WSE="$work/fake_wse" OLD="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 2

# What waiting cost, against hand-worked figures. A kernel: 4.0 s on one thread; 2.5 s on two, the
# workers waiting 20% and 10% of it: had none waited, 2.5 - 2.5 * 0.10 = 2.25 s (1.78x); the busy
# time shared evenly, 2.5 - 2.5 * 0.15 = 2.125 s (1.88x). A training run, per step: 1.5 s on one
# thread; 1.0 s on two, of which 2.4 s of multi-worker runs in 3.0 s of host time (0.8 s a step)
# with the workers waiting 25% and 5%: 1.0 - 0.8 * 0.05 = 0.96 s (1.56x), 1.0 - 0.8 * 0.15 = 0.88 s
# (1.70x).
expect 0 'waiting 15% of a worker.s time \(mean of the workers\); over 1, had none waited: 1\.78x, and with even work: 1\.88x$' \
  "what waiting cost a kernel's run" -- env ROUNDS=1 FAKE=kernel WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
expect 0 'waiting 15% of a worker.s time \(mean of the workers\); over 1, had none waited: 1\.56x, and with even work: 1\.70x$' \
  "what waiting cost a training run, per step" -- env ROUNDS=1 FAKE=train WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
# Two wafers side by side: multi_worker_seconds sums both wafers' runs (4.8 s in 3.0 s of host
# time), whose waiting overlaps: the same 0.8 s a step of wall time as above, the same bounds.
expect 0 'had none waited: 1\.56x, and with even work: 1\.70x$' "wafers side by side" -- \
  env ROUNDS=1 FAKE=wafers WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
# The real wse's two-thread runs report their waiting: the line is there.
expect 0 'had none waited: [0-9.]+x, and with even work: [0-9.]+x$' "the real wse's waiting, read" -- \
  env ROUNDS=1 WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2

# The host's line round trip around each run (PROBE): a stand-in probe that gives 100 ns, except
# around the fourth run (round 2's two-thread run: round 2 runs 1 then 2), where it gives 400 ns.
# That run is split off as in a slow spell, with its own speed-up (a kernel: 4.0 s over 2.5 s).
cat >"$work/fake_probe" <<'EOF'
#!/usr/bin/env bash
n=$(( $(cat "$PROBE_COUNT" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$PROBE_COUNT"
if [ "$n" -ge 7 ]; then ns=400; else ns=100; fi
echo "BM_CycleBarrier/iterations:5  33 ms  33 ms  5 barrier_ns=64 line_round_trip_ns=$ns of_round_trip=0.6"
EOF
chmod +x "$work/fake_probe"
expect 0 'host round trip within 2x the lowest \(100 ns\): 1 run\(s\), 1\.60x / 1\.60x / 1\.60x; above it \(400-400 ns\): 1 run\(s\), 1\.60x / 1\.60x / 1\.60x$' \
  "runs split by the host's round trip" -- env ROUNDS=2 FAKE=kernel PROBE="$work/fake_probe" PROBE_COUNT="$work/probe_count" \
  WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
grep -q '^  round 2: 2 .*round trip 400 / 400 ns' "$work/out" || fail "each run's line shows the round trips around it"
grep -q '^  round 1: 1 .*round trip 100 / 100 ns' "$work/out" || fail "each run's line shows the round trips around it (one thread)"
expect 0 '^results: identical' "no probe" -- env ROUNDS=1 FAKE=kernel PROBE=none WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
grep -q 'round trip' "$work/out" && fail "PROBE=none: no round trip shown"
# A probe that fails without a figure: the runs go on, with no round trip shown.
printf '#!/usr/bin/env bash\necho "no benchmark here" >&2\nexit 1\n' >"$work/broken_probe"
chmod +x "$work/broken_probe"
expect 0 '^results: identical in all 2 runs' "a probe that fails" -- \
  env ROUNDS=1 FAKE=kernel PROBE="$work/broken_probe" WSE="$work/fake_wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2
grep -q 'round trip' "$work/out" && fail "a failing probe: no round trip shown"

# Usage errors.
expect 2 'nowhere.yaml: no such config file' "a missing config" -- \
  env WSE="$wse" bash "$src/scripts/threads.sh" "$work/nowhere.yaml"
expect 2 "count 'zero': expected a thread count" "a count that is not one" -- \
  env WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 zero
expect 2 "count '2' is given twice" "a count given twice (its summary kept one run of the two)" -- \
  env WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml" 1 2 2
expect 2 "ROUNDS='0': expected a number of rounds" "no rounds" -- \
  env ROUNDS=0 WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml"
expect 2 "OLD=$work/none: no such executable" "a missing OLD" -- \
  env OLD="$work/none" WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml"
expect 2 "PROBE=$work/none: no such executable" "a missing PROBE" -- \
  env PROBE="$work/none" WSE="$wse" bash "$src/scripts/threads.sh" "$work/gemv.yaml"
printf 'machine: wse2\nmesh: {width: 0, height: 8}\ngemv: {rows: 6, cols: 4}\n' >"$work/bad.yaml"
expect 2 'failed \(exit 2\)' "a config wse refuses: its exit code and message" -- \
  env WSE="$wse" bash "$src/scripts/threads.sh" "$work/bad.yaml" 1
grep -q 'bad.yaml' "$work/out" || fail "wse's message, naming the config, is shown"

if [ "$failures" -ne 0 ]; then
  echo "threads_script_test: $failures failure(s)"
  exit 1
fi
echo "threads_script_test: all passed"
