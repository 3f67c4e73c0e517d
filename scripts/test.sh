#!/usr/bin/env bash
# Installs the packages, builds everything and runs every test (GPU tests skip without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
# The sample images were installed above: tests that need them fail rather than skip without them.
FM_REQUIRE_SAMPLES=1 QT_QPA_PLATFORM=offscreen \
  ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900
