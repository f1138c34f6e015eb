#!/usr/bin/env bash
# Quick start (2): install what is missing, build everything, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release -j2
