#!/usr/bin/env bash
# scripts/hop_mca.sh on paths worked out by hand: a program whose traced function `hop` is a chain
# of N dependent additions to one register and a return, called in a loop (a decrement, a branch,
# the call). From one entry of `hop` to the next the path is N + 4 instructions, two of them
# memory operands (the call's store of its return address, the return's load), and each
# repetition waits for the one before it through that register alone: llvm-mca must predict N
# cycles a repetition (the chain's length: an addition takes one cycle on every x86 core it
# models), and no fewer for the resources alone. Checked for N = 3 and N = 7 on two core models.
# Then the script's usage errors (exit code 2).
#   bash tests/hop_mca_script_test.sh
set -uo pipefail
# shellcheck source=tests/script_test_lib.sh
source "$(dirname "$0")/script_test_lib.sh"  # src, work, failures, fail()

build_chain() {  # N -> $work/chainN, whose hop adds 1 to %rax N times
  local n="$1" adds=""
  for ((k = 0; k < n; ++k)); do adds+="  add \$1, %rax"$'\n'; done
  cat >"$work/chain$n.cpp" <<EOF
asm(R"(
  .text
  .globl hop
  .type hop, @function
hop:
$adds  ret
  .size hop, .-hop
  .globl spin
  .type spin, @function
spin:
  mov \$20000, %r8
1:
  call hop
  dec %r8
  jnz 1b
  ret
  .size spin, .-spin
)");
extern "C" void spin();
int main() { spin(); return 0; }
EOF
  g++ -O1 "$work/chain$n.cpp" -o "$work/chain$n" || { echo "FAIL: the chain program ($n) does not build"; exit 1; }
}

for n in 3 7; do
  build_chain "$n"
  for mcpu in znver4 skylake; do
    FUNC=hop ARGS="" SKIP=100 MCPU="$mcpu" KEEP="$work/path$n.s" bash "$src/scripts/hop_mca.sh" "$work/chain$n" >"$work/out" 2>&1 ||
      { fail "chain of $n on $mcpu: exit $?"; continue; }
    python3 - "$work/out" "$n" "$mcpu" <<'EOF' || failures=$((failures + 1))
import re, sys
text, n, mcpu = open(sys.argv[1]).read(), int(sys.argv[2]), sys.argv[3]
def figure(name):
    m = re.search(rf'^\s+{name}\s+([\d.]+)', text, re.M)
    return float(m.group(1)) if m else None
got = {k: figure(k) for k in ('instructions a hop', 'memory operands a hop', 'predicted cycles a hop', 'resources alone')}
bad = []
if got['instructions a hop'] != n + 4: bad.append(f"{got['instructions a hop']} instructions, want {n + 4}")
if got['memory operands a hop'] != 2: bad.append(f"{got['memory operands a hop']} memory operands, want 2")
if got['predicted cycles a hop'] is None or abs(got['predicted cycles a hop'] - n) > 0.1:
    bad.append(f"{got['predicted cycles a hop']} cycles predicted, want {n} (the chain)")
if got['resources alone'] is None or got['resources alone'] > got['predicted cycles a hop']:
    bad.append(f"resources alone {got['resources alone']}, want at most the prediction")
if bad:
    print(f"FAIL: chain of {n} on {mcpu}: " + '; '.join(bad)); print(text)
    sys.exit(1)
EOF
  done
  # The path as llvm-mca read it: the chain, the return as a load, the loop, the call as a store.
  grep -c '^add' "$work/path$n.s" | grep -qx "$n" || { cp "$work/path$n.s" "$work/out"; fail "chain of $n: the kept path has not $n additions"; }
  grep -q '^movq -8(%rsp), %r11$' "$work/path$n.s" && grep -q '^movq %r11, -8(%rsp)$' "$work/path$n.s" ||
    { cp "$work/path$n.s" "$work/out"; fail "chain of $n: the kept path has no return's load or call's store"; }
done

expect_usage() {  # PATTERN DESCRIPTION -- args... (environment in ENVS)
  local pattern="$1" what="$2"
  shift 3
  env ${ENVS:-} bash "$src/scripts/hop_mca.sh" "$@" >"$work/out" 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || { fail "$what: exit $rc, want 2"; return; }
  grep -Eq -- "$pattern" "$work/out" || fail "$what: no line matching '$pattern'"
}
expect_usage 'unknown option --fast' "an unknown option" -- --fast
expect_usage 'one binary at most' "two binaries" -- "$work/chain3" "$work/chain7"
expect_usage 'no such executable' "a missing binary" -- "$work/none"
ENVS="SKIP=many" expect_usage 'SKIP must be a whole number' "SKIP not a number" -- "$work/chain3"
ENVS="MCPU=pentium9" expect_usage "does not know the core model 'pentium9'" "an unknown core model" -- "$work/chain3"
bash "$src/scripts/hop_mca.sh" --help >"$work/out" 2>&1 && grep -q "^What a wavelet's hop costs the host's core" "$work/out" || fail "--help: not the header"
# A function the program never calls twice: the script says so and exits 1, not 0.
FUNC=main ARGS="" SKIP=0 bash "$src/scripts/hop_mca.sh" "$work/chain3" >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "a function entered once: exit $rc, want 1"

[ "$failures" -eq 0 ] && echo "hop_mca script: all checks passed"
exit $((failures > 0))
