#!/usr/bin/env bash
# scripts/bench.sh, for what it does when a benchmark fails rather than what it times: in a
# scratch copy of the tree with stand-in benchmarks (and a stand-in cmake, so nothing is built), a
# benchmark that crashes, one that is missing and one whose row skips with an error each make the
# script exit 1 naming them, with the results written beside the last good file, which stays as
# it was; when every benchmark runs, the file is written and the script exits 0.
#   bash tests/bench_script_test.sh
set -uo pipefail
# shellcheck source=tests/script_test_lib.sh
source "$(dirname "$0")/script_test_lib.sh"  # src, work, failures, fail()
mkdir -p "$work/tree/scripts" "$work/tree/build/release" "$work/bin"
cp "$src/scripts/bench.sh" "$work/tree/scripts/"
printf '#!/bin/sh\nexit 0\n' >"$work/bin/cmake"
chmod +x "$work/bin/cmake"
ok_bench() { printf '#!/bin/sh\necho "%s ran"\n' "$1" >"$work/tree/build/release/$1"; chmod +x "$work/tree/build/release/$1"; }
for b in bench_fabric bench_barrier bench_gemv bench_sparse_mac bench_cluster bench_functional; do ok_bench "$b"; done
run() { PATH="$work/bin:$PATH" bash "$work/tree/scripts/bench.sh" "$work/results.md" >"$work/out" 2>&1; }

echo "last good" >"$work/results.md"
printf '#!/bin/sh\necho partial\nkill -SEGV $$\n' >"$work/tree/build/release/bench_gemv"
rm "$work/tree/build/release/bench_cluster"
run
rc=$?
[ "$rc" -eq 1 ] || fail "a crashed and a missing benchmark: exit $rc, want 1"
grep -q 'bench: bench_gemv bench_cluster failed' "$work/out" || fail "the failed benchmarks are not named"
[ "$(cat "$work/results.md")" = "last good" ] || fail "the last good results were replaced"
grep -q '(bench_gemv failed: exit 139)' "$work/results.md.failed" || fail "results.md.failed does not mark bench_gemv"
grep -q 'bench_fabric ran' "$work/results.md.failed" || fail "results.md.failed lacks the benchmarks that ran"

ok_bench bench_gemv
ok_bench bench_cluster
printf '#!/bin/sh\necho "BM_Row/W:8   ERROR OCCURRED: '"'"'the row did not deliver'"'"'"\n' >"$work/tree/build/release/bench_fabric"
chmod +x "$work/tree/build/release/bench_fabric"
run
rc=$?
[ "$rc" -eq 1 ] || fail "a row that skipped with an error (Google Benchmark exits 0): exit $rc, want 1"
grep -q '(bench_fabric failed: exit 0, a row skipped with an error)' "$work/results.md.failed" || fail "the skipped row is not marked"

ok_bench bench_fabric
run
rc=$?
[ "$rc" -eq 0 ] || fail "every benchmark ran: exit $rc, want 0"
grep -q '^bench: wrote ' "$work/out" || fail "no 'bench: wrote' line"
grep -q 'bench_functional ran' "$work/results.md" || fail "results.md does not hold the run"

# Where the results go is checked before the benchmarks run (a folder that does not exist made
# the final rename fail after minutes of them, and the results were lost), and one FILE at most.
printf '#!/bin/sh\necho ran >>"%s"\n' "$work/ran" >"$work/tree/build/release/bench_fabric"
PATH="$work/bin:$PATH" bash "$work/tree/scripts/bench.sh" "$work/no_such_folder/results.md" >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "a folder that does not exist: exit $rc, want 2"
grep -q "bench: $work/no_such_folder: no such folder" "$work/out" || fail "the missing folder is not named"
[ ! -e "$work/ran" ] || fail "the benchmarks ran before the output's folder was checked"
PATH="$work/bin:$PATH" bash "$work/tree/scripts/bench.sh" "$work/a.md" "$work/b.md" >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "two FILEs: exit $rc, want 2"
[ ! -e "$work/a.md" ] && [ ! -e "$work/b.md" ] || fail "two FILEs: a file was written"
ok_bench bench_fabric
# The results are written beside FILE and renamed: no temporary is left in its folder.
run
[ -z "$(find "$work" -maxdepth 1 -name '.results.md.*')" ] || fail "a temporary was left beside results.md"

[ "$failures" -eq 0 ] && echo "bench_script_test: ok"
exit $((failures > 0))
