#!/usr/bin/env bash
# Installs every Debian package wse-emu needs to build, test and run. Idempotent, non-interactive;
# run as root (or with sudo available). Only installs what is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost-dev libboost-system-dev            # Asio thread pool
  flatbuffers-compiler libflatbuffers-dev     # flatc at build time, FlatBuffers runtime
  protobuf-compiler libprotobuf-dev           # protoc at build time, libprotobuf: native Perfetto traces
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and microbenchmarks
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libeigen3-dev libpng-dev zlib1g-dev        # zlib: the gzipped IDX dataset files
  dataset-fashion-mnist                       # /usr/share/datasets/fashion-mnist
  python3                                     # tests: an independent safetensors reader
  chromium chromium-driver                    # tests: the HTML viewer in headless Chromium (WebDriver)
  clang-16 libclang-rt-16-dev llvm-16         # fuzzing: libFuzzer + ASan/UBSan runtimes, llvm-symbolizer; llvm-mca
                                              # (clang 16: _Float16 on x86-64, which clang 14 lacks)
  gdb                                         # scripts/hop_mca.sh: steps a hop's path for llvm-mca
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
