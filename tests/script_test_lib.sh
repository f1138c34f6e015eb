# What the scripts' tests (tests/*_script_test.sh) share, sourced at their start: `src`, the
# tree's root; `work`, a scratch directory removed at exit; `failures`, counted by fail(), which
# names the check and shows the output it read ($work/out).
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $1"; echo "--- output:"; cat "$work/out"; echo "---"; failures=$((failures + 1)); }
