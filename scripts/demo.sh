#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a result: installs the packages, builds, and
# matches box.png against box_in_scene.png (OpenCV sample data), writing out/box_matches.png and
# out/box_report.json and printing the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
data=/usr/share/doc/opencv-doc/examples/data
mkdir -p out
./build/app/featmatch match "$data/box.png" "$data/box_in_scene.png" \
  --draw out/box_matches.png --report out/box_report.json "$@"
