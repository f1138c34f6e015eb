#!/usr/bin/env bash
# Quick start (1): install what is missing, build, and run the default example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target wse
# --overwrite: running the quick start again replaces its previous run in out/ (only what that run wrote).
./build/release/wse run "${1:-examples/gemv.yaml}" --out "${2:-out}" --overwrite
