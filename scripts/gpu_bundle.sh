#!/usr/bin/env bash
# Gathers, on this Debian 12 machine, what a CUDA machine without OpenCV, SQLite or JSON headers
# (the GPU machine of bench/) needs to build and run the whole application there, into
# build-bundle/ (git-ignored), packed into build-bundle/pack/bundle.tar.xz:
#   opencv/  OpenCV 4.6's core, imgproc, imgcodecs, features2d, calib3d and flann as static
#            libraries, built from Debian's own source package (the version the application is
#            built against here), JPEG, PNG and zlib linked in from Debian's static libraries;
#   deps/    SQLite (static), nlohmann-json and CLI11 headers, laid out for CMAKE_PREFIX_PATH;
#   data/    the OpenCV sample photographs the tests and bench/app_gpu_check.sh read.
# bench/app_gpu_check.sh builds the application against it there and runs it on the GPU.
# Usage: scripts/gpu_bundle.sh [--jobs N]   (as root or with sudo; reruns skip what is built)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
if [ "${1:-}" = "--jobs" ]; then JOBS=${2:?}; fi
K=$PWD/build-bundle
W=$K/work

bash scripts/install_deps.sh dpkg-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev libeigen3-dev

# OpenCV's source package, the installed version, through a private source list (the system's
# lists are left as they are).
ver=$(dpkg-query -W -f='${Version}' libopencv-core-dev)
if [ ! -f "$K/opencv/lib/cmake/opencv4/OpenCVConfig.cmake" ]; then
  rm -rf "$W" && mkdir -p "$W/lists/partial" "$W/dl"
  echo "deb-src http://deb.debian.org/debian bookworm main" > "$W/src.list"
  apt_src=(-o "Dir::Etc::SourceList=$W/src.list" -o "Dir::Etc::SourceParts=/dev/null"
           -o "Dir::State::Lists=$W/lists")
  apt-get "${apt_src[@]}" update -qq
  (cd "$W/dl" && apt-get "${apt_src[@]}" source --download-only "opencv=$ver")
  (cd "$W" && dpkg-source -x dl/*.dsc src > /dev/null)
  L=/usr/lib/x86_64-linux-gnu
  off=()
  for w in TBB OPENMP IPP LAPACK OPENCL TIFF WEBP OPENEXR JASPER OPENJPEG GDAL GDCM ITT \
           PROTOBUF QUIRC ADE FFMPEG GSTREAMER V4L GTK QT VA VA_INTEL 1394 OPENVX CUDA VTK; do
    off+=("-DWITH_$w=OFF")
  done
  cmake -S "$W/src" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DBUILD_LIST=core,imgproc,imgcodecs,features2d,calib3d,flann \
    -DCMAKE_INSTALL_PREFIX="$K/opencv" "${off[@]}" -DWITH_EIGEN=ON -DCPU_BASELINE=SSE2 \
    -DBUILD_PNG=OFF -DBUILD_JPEG=OFF -DBUILD_ZLIB=OFF \
    -DJPEG_LIBRARY=$L/libjpeg.a -DPNG_LIBRARY=$L/libpng16.a -DZLIB_LIBRARY=$L/libz.a \
    -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF \
    -DBUILD_JAVA=OFF -DBUILD_opencv_python3=OFF -DBUILD_DOCS=OFF -DOPENCV_GENERATE_PKGCONFIG=OFF \
    > "$K/opencv_configure.log" 2>&1 || { tail -30 "$K/opencv_configure.log"; exit 1; }
  ninja -C "$W/build" -j"$JOBS" install > "$K/opencv_build.log" 2>&1 ||
    { tail -30 "$K/opencv_build.log"; exit 1; }
  # The image libraries beside OpenCV's, named relative to the installed package, so that the
  # bundle builds wherever it lies.
  mkdir -p "$K/opencv/lib/deps"
  cp $L/libjpeg.a $L/libpng16.a $L/libz.a "$K/opencv/lib/deps/"
  # Eigen is in OpenCV's link interface though only its headers were used: left out.
  sed -i -e "s#$L/lib\(jpeg\|png16\|z\)\.a#\${_IMPORT_PREFIX}/lib/deps/lib\1.a#g" \
    -e 's#\\$<LINK_ONLY:Eigen3::Eigen>;##g' -e 's#;\\$<LINK_ONLY:Eigen3::Eigen>##g' \
    "$K/opencv/lib/cmake/opencv4/OpenCVModules.cmake"
  find "$K/opencv/lib" -name '*.a' -exec strip --strip-debug {} +
  rm -rf "$K/opencv/share/opencv4/haarcascades" "$K/opencv/share/opencv4/lbpcascades"
  rm -rf "$W"
fi

# SQLite, nlohmann-json, CLI11.
D=$K/deps
rm -rf "$D" && mkdir -p "$D/include" "$D/lib" "$D/share/cmake"
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h "$D/include/"
cp /usr/lib/x86_64-linux-gnu/libsqlite3.a "$D/lib/"
cp -r /usr/include/nlohmann /usr/include/CLI "$D/include/"
cp -r /usr/share/cmake/nlohmann_json "$D/share/cmake/"

# The sample photographs (images and their ground truth; not the videos).
rm -rf "$K/data" && mkdir -p "$K/data"
find /usr/share/doc/opencv-doc/examples/data -maxdepth 1 -type f \( -name '*.jpg' -o \
  -name '*.png' -o -name '*.xml' -o -name '*.yml' -o -name '*.txt' \) -exec cp {} "$K/data/" \;

# All of it in one file to take along (the folders above are about 60 MiB, the file about 17):
# bench/app_gpu_check.sh unpacks it where build-bundle/ is missing.
mkdir -p "$K/pack"
tar -C "$K" -cJf "$K/pack/bundle.tar.xz" opencv deps data
du -sh "$K/pack/bundle.tar.xz"
echo "gpu_bundle: $K ready (OpenCV $ver); take build-bundle/pack along"
