#!/usr/bin/env bash
# Every reader's libFuzzer target (fuzz/) for a bounded time under AddressSanitizer +
# UndefinedBehaviorSanitizer, built with Debian's clang 16 (preset "fuzz"). Starts from the
# checked-in corpus (fuzz/corpus/<target>, read only: new inputs go under build/fuzz/run) and fails
# on any crash, sanitizer report, leak, timeout or out-of-memory; the input that did it is left in
# build/fuzz/run/<target>/artifacts/. Prints executions, coverage and features per target.
#   WSE_FUZZ_SECONDS=N   seconds per target (default 25)
#   bash scripts/fuzz.sh [target...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
seconds=${WSE_FUZZ_SECONDS:-25}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(run_config machine_preset weight_stream gradient_stream activity_dump pftrace safetensors idx)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
work=build/fuzz/run
rm -rf "$work"
rows=()
for t in "${targets[@]}"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  # -seed: the same mutations each run (the count still depends on the machine's speed);
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: the readers refuse past 256 MiB.
  if ! "build/fuzz/fuzz/fuzz_$t" "$dir/corpus" "fuzz/corpus/$t" -max_total_time="$seconds" -seed=1 -max_len=8192 \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" >"$dir/log" 2>&1; then
    echo "fuzz: $t FAILED; its input is in $dir/artifacts/, the report:"
    tail -60 "$dir/log"
    exit 1
  fi
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$dir/log")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$dir/log" | tail -1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$done_line")
  seeds=$(find "fuzz/corpus/$t" -type f | wc -l)
  rows+=("$(printf '| %-16s | %10s | %6s | %8s | %5s | %6s |' "$t" "$execs" "$cov" "$ft" "$seeds" "$corp")")
  echo "fuzz: $t: $execs executions in ${seconds} s, cov $cov, ft $ft, no crash"
done
echo
echo "| target           | executions |  cov   | features | seeds | corpus |"
echo "|------------------|-----------:|-------:|---------:|------:|-------:|"
printf '%s\n' "${rows[@]}"
