#!/usr/bin/env bash
# The whole application on a CUDA machine that lacks OpenCV, SQLite and the JSON headers (the GPU
# machine), built against build-bundle/ (scripts/gpu_bundle.sh, run first on a Debian machine; its
# build-bundle/pack/ brought along with the tree): the CLI and the matcher, app, core and backend
# tests with the GPU present (the tests' `auto` backend is then the GPU, but for searches it
# estimates end before a GPU would have started), then the CLI end to end on the sample
# photographs with --backend cpu, --backend gpu and auto (match, logos eval and query, batch),
# what each wrote compared by bench/app_compare.py (on uint8 SIFT both search exactly: every
# match, model and detection the same), a batch interrupted by SIGINT on the GPU and resumed, and
# bad input on the GPU path.
# Usage: bench/app_gpu_check.sh OUTDIR
set -u -o pipefail
OUT=${1:?outdir}
K=$PWD/build-bundle
B=/tmp/fm-app
if [ ! -f "$K/opencv/lib/cmake/opencv4/OpenCVConfig.cmake" ] && [ -f "$K/pack/bundle.tar.xz" ]; then
  tar -C "$K" -xJf "$K/pack/bundle.tar.xz"
fi
[ -f "$K/opencv/lib/cmake/opencv4/OpenCVConfig.cmake" ] ||
  { echo "no build-bundle/: run scripts/gpu_bundle.sh, take build-bundle/pack"; exit 1; }
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFM_BUILD_GUI=OFF -DCMAKE_PREFIX_PATH="$K/opencv;$K/deps" \
  -DGTEST_SOURCE_DIR=/usr/src/googletest > $OUT/app_build.log 2>&1 &&
  cmake --build $B -j16 --target featmatch fm_core_tests fm_backend_tests fm_matcher_tests \
    fm_app_tests >> $OUT/app_build.log 2>&1 || { tail -40 $OUT/app_build.log; exit 1; }
echo "== build ok"; nvidia-smi -L
export FM_SAMPLE_DATA=$K/data FM_REQUIRE_SAMPLES=1 FM_REQUIRE_GPU=1
F=$B/app/featmatch
D=$K/data
# The four test programs at once (each takes a few of the 16 cores).
for t in fm_core_tests fm_backend_tests fm_matcher_tests fm_app_tests; do
  (timeout 300 $B/tests/$t --gtest_brief=1 > $OUT/app_tests_$t.log 2>&1
   echo "== $t rc=$?" >> $OUT/app_tests_$t.log) &
done
wait
for t in fm_core_tests fm_backend_tests fm_matcher_tests fm_app_tests; do
  grep -E "^== |^\[  (PASSED|FAILED) |tests ran" $OUT/app_tests_$t.log | head -30
  cat $OUT/app_tests_$t.log >> $OUT/app_tests.log && rm -f $OUT/app_tests_$t.log
done

W=/tmp/fm-e2e && rm -rf $W && mkdir -p $W
secs() { awk "BEGIN{printf \"%.3f\", $2 - $1}"; }
R=$OUT/app_gpu.jsonl
: > $R
compare() { python3 bench/app_compare.py "$@" | tee -a $R; }
# `$run BE` six times a backend, the three backends taking turns; a JSON line a backend: the
# fields of $label, the median wall time of the last five runs (the first reads the files from
# disk) and the backend it took (`$took BE`).
time_turns() {
  local label=$1 run=$2 took=$3 i be s e
  local -A t=()
  for i in 1 2 3 4 5 6; do
    for be in cpu gpu auto; do
      s=$(date +%s.%N); $run $be; e=$(date +%s.%N)
      if [ $i -gt 1 ]; then t[$be]="${t[$be]:-} $(secs $s $e)"; fi
    done
  done
  for be in cpu gpu auto; do
    python3 -c "import json,statistics,sys; t=[float(x) for x in sys.argv[4:]]
r=json.loads(sys.argv[1]); r.update({'backend':sys.argv[2],'took':sys.argv[3],
  'median_wall_s':statistics.median(t),'wall_s':t}); print(json.dumps(r))" \
      "$label" $be "$($took $be)" ${t[$be]} >> $R
  done
}
backend_of() {  # the first word of the backend in a report (python expression on j)
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(($2).split()[0])" $1 \
    2>/dev/null
}
# Two images: each pair on each backend and under auto.
match_run() {
  $F match $D/$P1 $D/$P2 --backend $1 --report $W/$1.json > $W/$1.txt 2>&1 ||
    { echo "match $P1 $P2 --backend $1 failed"; cat $W/$1.txt; }
}
match_took() { backend_of $W/$1.json "j['backend']"; }
for pair in "box.png box_in_scene.png" "graf1.png graf3.png" "aloeL.jpg aloeR.jpg" \
            "left01.jpg left02.jpg" "box.png box.png"; do
  set -- $pair
  P1=$1 P2=$2
  time_turns "{\"run\":\"match\",\"pair\":\"$P1 $P2\"}" match_run match_took
  compare match $W/cpu.json $W/gpu.json
done
# RootSIFT (float descriptors): the GPU's exact mode against the CPU's BLAS GEMM.
for be in cpu gpu; do
  $F match $D/graf1.png $D/graf3.png --root-sift --backend $be --report $W/rs_$be.json > /dev/null
done
compare match $W/rs_cpu.json $W/rs_gpu.json
# Stored features matched on the GPU.
$F extract $D/graf1.png $D/graf3.png --out $W/fmf > /dev/null &&
  $F match $W/fmf/graf1.png.fmf $W/fmf/graf3.png.fmf --backend gpu --report $W/fmf.json > /dev/null
echo "== fmf match rc=$?"

# Logo retrieval: the generated evaluation set on both backends.
for be in cpu gpu; do
  timeout 300 $F logos eval --seed 1 --scenes 200 --backend $be --quiet --data $D \
    --report $W/logos_$be.json --markdown $W/logos_$be.md > /dev/null 2>&1
  echo "== logos eval $be rc=$?"
done
compare logos $W/logos_cpu.json $W/logos_gpu.json

# Logo queries: a library of three sample logos; one scene on each backend and under auto, taking
# turns, six runs each (median of the last five; auto chooses at the first scene by the work of
# all scenes given), then every sample photograph as a scene on both backends.
L=$W/logos.db
$F logos add $L $D/box.png $D/opencv-logo.png $D/LinuxLogo.jpg > /dev/null
query_run() {
  $F logos query $L $D/box_in_scene.png --backend $1 --json > $W/q1_$1.json 2> $W/q1_$1.err ||
    { echo "logos query --backend $1 failed"; cat $W/q1_$1.err; }
}
query_took() { backend_of $W/q1_$1.json "j[0]['backend']"; }
time_turns '{"run":"logos query, one scene"}' query_run query_took
compare query $W/q1_cpu.json $W/q1_gpu.json
compare query $W/q1_cpu.json $W/q1_auto.json
for be in cpu gpu auto; do
  s=$(date +%s.%N)
  $F logos query $L $D/*.jpg $D/*.png --backend $be --json > $W/qa_$be.json 2> /dev/null
  rc=$?; e=$(date +%s.%N)
  took=$(backend_of $W/qa_$be.json "j[0]['backend']")
  printf '{"run":"logos query, every sample","backend":"%s","took":"%s","rc":%s,"wall_s":%s}\n' \
    "$be" "$took" $rc "$(secs $s $e)" >> $R
done
compare query $W/qa_cpu.json $W/qa_gpu.json

# Batch: the sample photographs (exhaustive pairs) on both backends; on the GPU also stopped by
# SIGINT after 4 s and run again to the end, which must give the same database.
mkdir -p $W/imgs && cp $D/*.jpg $D/*.png $W/imgs/ 2>/dev/null
for be in cpu gpu; do
  s=$(date +%s.%N)
  timeout 300 $F batch $W/imgs --db $W/$be.db --backend $be --quiet --summary $W/batch_$be.json \
    > $W/batch_$be.txt 2>&1
  rc=$?; e=$(date +%s.%N)
  printf '{"run":"batch","backend":"%s","rc":%s,"wall_s":%s}\n' "$be" $rc "$(secs $s $e)" >> $R
done
compare batch $W/cpu.db $W/gpu.db
# Under auto: the 91 images (the GPU where its searches are estimated past a GPU's start) and two
# small ones (the CPU), what each took and its wall time.
mkdir -p $W/two && cp $D/box.png $D/box_in_scene.png $W/two/
for job in imgs two; do
  s=$(date +%s.%N)
  timeout 300 $F batch $W/$job --db $W/auto_$job.db --quiet --summary $W/batch_auto_$job.json \
    > /dev/null 2>&1
  rc=$?; e=$(date +%s.%N)
  printf '{"run":"batch auto","images":"%s","took":"%s","rc":%s,"wall_s":%s}\n' "$job" \
    "$(backend_of $W/batch_auto_$job.json "j['backend']")" $rc "$(secs $s $e)" >> $R
done
compare batch $W/gpu.db $W/auto_imgs.db
$F batch $W/imgs --db $W/int.db --backend gpu --quiet > $W/int1.txt 2>&1 &
p=$!; sleep 4; kill -INT $p; wait $p; rc1=$?
$F batch $W/imgs --db $W/int.db --backend gpu --quiet > $W/int2.txt 2>&1; rc2=$?
echo "{\"run\":\"batch interrupted\",\"rc_first\":$rc1,\"rc_resumed\":$rc2}" >> $R
compare batch $W/gpu.db $W/int.db

# Bad input on the GPU path: each must fail with its reason, not crash.
bad() {
  $F "$@" > $W/bad.txt 2>&1; rc=$?
  echo "== rc=$rc: featmatch $*" | sed "s#$D/##g"; tail -2 $W/bad.txt | sed "s#$D/##g"
}
bad match $D/box.png $D/box_in_scene.png --backend gpu --device 7
bad match $D/box.png $D/box_in_scene.png --backend gpu --k 100000 --ratio 1
bad match $D/box.png $W/fmf/graf1.png.fmf --backend gpu --root-sift
head -c 1000 $D/graf1.png > $W/trunc.png
bad match $W/trunc.png $D/graf3.png --backend gpu
mkdir -p $W/empty && bad batch $W/empty --db $W/empty.db --backend gpu
cp $W/logos_gpu.md $OUT/logos_eval_gpu.md
echo "== done"; cat $R
