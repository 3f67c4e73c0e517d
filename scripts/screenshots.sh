#!/usr/bin/env bash
# Screenshots of every view of featmatch-gui, taken under a virtual X server (Xvfb), so a person
# can look at the app without a display: loads two sample images, matches them, and writes one
# PNG per view.
#
#   scripts/screenshots.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR defaults to ./build, OUT_DIR to BUILD_DIR/screenshots. Images come from
# FM_SAMPLE_DATA (default: the OpenCV sample data of the opencv-doc package).
set -euo pipefail

build=${1:-build}
out=${2:-$build/screenshots}
data=${FM_SAMPLE_DATA:-/usr/share/doc/opencv-doc/examples/data}
gui=$build/app/featmatch-gui

if [[ ! -x $gui ]]; then
  echo "screenshots.sh: $gui not found; build it first: ninja -C $build featmatch-gui" >&2
  exit 1
fi
for f in box.png box_in_scene.png; do
  if [[ ! -f $data/$f ]]; then
    echo "screenshots.sh: sample image $data/$f not found (set FM_SAMPLE_DATA)" >&2
    exit 1
  fi
done
if ! command -v xvfb-run > /dev/null; then
  echo "screenshots.sh: xvfb-run not found (apt-get install xvfb)" >&2
  exit 1
fi

mkdir -p "$out"
# A private settings folder: the screenshots show the defaults, not someone's saved settings.
settings=$(mktemp -d)
trap 'rm -rf "$settings"' EXIT
export XDG_CONFIG_HOME=$settings
export XDG_RUNTIME_DIR=$settings

echo "featmatch-gui: writing screenshots to $out"
xvfb-run -a -s "-screen 0 1920x1200x24" \
  "$gui" --screenshot "$out" "$data/box.png" "$data/box_in_scene.png"
ls -l "$out"/*.png
