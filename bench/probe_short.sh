#!/usr/bin/env bash
set -u
OUT=${1:?out}
B=/tmp/fm-gpu
cmake -S . -B $B -G Ninja -DFM_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGTEST_SOURCE_DIR=/usr/src/googletest > $OUT/build.log 2>&1 &&
  cmake --build $B -j16 --target fm_gpu_tests featmatch-bench >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "== build ok"
T=$B/tests/fm_gpu_tests
timeout 200 $T --gtest_filter='*merge_queue*:*auto*' --gtest_brief=1 > $OUT/tests.log 2>&1
echo "== tests rc=$?"; grep -E "FAILED|PASSED|Failure" $OUT/tests.log | head -8
BB="$B/bench/featmatch-bench select --json --runs 15 --algos merge-queue,quick-multiselect"
for rep in 1 2; do
  timeout 200 $BB --rows 1000,8192 --cols 128,256,384,512,768 --k 65,100,128,200,256,512 >> $OUT/bench.jsonl
done
echo "== bench done"
python3 - $OUT/bench.jsonl <<'PY'
import sys, json, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    try: r = json.loads(line)
    except Exception: continue
    if 'k' not in r: continue
    d[(r['rows'], r['N'], r['k'], r['algo'])].append(r['median_ms'])
for (r, n, k) in sorted(set(x[:3] for x in d)):
    m = d[(r,n,k,'merge-queue')]; q = d[(r,n,k,'quick-multiselect')]
    print(r, n, k, 'mq', m, 'qms', q, 'mq/qms %.2f' % (sum(m) / sum(q)))
PY
