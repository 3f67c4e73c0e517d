#!/usr/bin/env bash
set -u
OUT=$1
rm -rf /tmp/src && mkdir -p /tmp/src && cp -r . /tmp/src/ && cd /tmp/src && rm -rf build*
cmake -S . -B /tmp/b -G Ninja -DFM_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGTEST_SOURCE_DIR=/usr/src/googletest > $OUT/build.log 2>&1 &&
cmake --build /tmp/b -j16 --target fm_gpu_tests featmatch-bench >> $OUT/build.log 2>&1 ||
  { tail -40 $OUT/build.log; exit 1; }
echo "== build ok"
T=/tmp/b/tests/fm_gpu_tests
F='*n65536*:*sample_trap*:*mixed_rows*:*big_n1m*:*inf_nan_wide*:*many_rows*'
for m in 4 128; do
  FM_QMS_AHEAD=$m timeout 200 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/tests_$m.log 2>&1
  echo "== tests ahead $m rc=$?"; grep -E "FAILED|PASSED|Failure" $OUT/tests_$m.log | head -12
done
S='*quick_multiselect_k256_mixed_rows:*quick_multiselect_k33_sample_trap_16k:*quick_multiselect_k1000_n65536:*quick_multiselect_k100_n65536:*quick_multiselect_k32_inf_nan_wide'
for m in 0 4; do
FM_QMS_AHEAD=$m timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_filter="$S" --gtest_brief=1 > $OUT/memcheck.log 2>&1
echo "== memcheck ahead $m rc=$?"; tail -2 $OUT/memcheck.log
FM_QMS_AHEAD=$m timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 $T --gtest_filter="$S" --gtest_brief=1 > $OUT/racecheck_$m.log 2>&1
echo "== racecheck ahead $m rc=$?"; tail -2 $OUT/racecheck_$m.log
done
for rep in 1 2; do for m in 0 64 128 256 512; do
  echo "ahead $m"; FM_QMS_AHEAD=$m timeout 60 /tmp/b/bench/featmatch-bench select --rows 8192 --cols 65536 --k 32,128,256,1024 --algos quick-multiselect --runs 15 | grep quick
done; done 2>&1 | tee $OUT/ab.txt
for m in 0 128; do echo "long rows ahead $m"; FM_QMS_AHEAD=$m timeout 60 /tmp/b/bench/featmatch-bench select --rows 1024 --cols 1048576 --k 32,256 --algos quick-multiselect --runs 10 | grep quick; done
M='gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum'
for m in 0 128; do echo "ncu ahead $m"; FM_QMS_AHEAD=$m timeout 120 ncu --clock-control none -k regex:'Qms' --launch-skip 3 \
    --launch-count 3 --metrics "$M" /tmp/b/bench/featmatch-bench select --rows 8192 \
    --cols 65536 --k 256 --algos quick-multiselect --runs 2 2>&1 | grep -E "Qms|duration|dram__|lts"; done
