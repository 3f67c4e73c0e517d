#!/usr/bin/env bash
# Screenshots of every view of featmatch-gui, taken under a virtual X server (Xvfb), so a person
# can look at the app without a display. Match view: box.png against box_in_scene.png. Logos
# view: a new library of four sample logos queried with two scenes. Batch view: six sample images
# matched exhaustively. Libraries and databases go to a temporary folder; one PNG per view is
# written to OUT_DIR.
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
samples=(box.png box_in_scene.png opencv-logo.png LinuxLogo.jpg WindowsLogo.jpg graf1.png graf3.png
         left01.jpg left02.jpg)
for f in "${samples[@]}"; do
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
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME=$work/config
export XDG_RUNTIME_DIR=$work/runtime
mkdir -p "$XDG_CONFIG_HOME" "$XDG_RUNTIME_DIR" "$work/batch"
chmod 700 "$XDG_RUNTIME_DIR"
for f in box.png box_in_scene.png graf1.png graf3.png left01.jpg left02.jpg; do
  cp "$data/$f" "$work/batch/"
done

echo "featmatch-gui: writing screenshots to $out"
xvfb-run -a -s "-screen 0 1920x1200x24" \
  "$gui" --screenshot "$out" "$data/box.png" "$data/box_in_scene.png" \
  --logo "$data/box.png" --logo "$data/opencv-logo.png" --logo "$data/LinuxLogo.jpg" \
  --logo "$data/WindowsLogo.jpg" --scene "$data/box_in_scene.png" --scene "$data/graf1.png" \
  --batch-folder "$work/batch"
ls -l "$out"/*.png
