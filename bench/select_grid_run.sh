#!/usr/bin/env bash
# The select grid on the GPU machine: every algorithm (featmatch-bench select --json), the
# torch.topk peer in the same call, quick multi-select and auto in two more processes, and the
# read kernels of bench/micro/read_shapes.cu. Usage: bench/select_grid_run.sh OUTDIR
set -u -o pipefail
OUT=${1:?outdir}
B=/tmp/grid_build
cmake -S . -B $B -G Ninja -DFM_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGTEST_SOURCE_DIR=/usr/src/googletest > $OUT/build.log 2>&1 &&
  cmake --build $B -j16 --target featmatch-bench >> $OUT/build.log 2>&1 ||
  { tail -30 $OUT/build.log; exit 1; }
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/gpu.txt
S=$B/bench/featmatch-bench
$S select --json --runs 15 > $OUT/select_grid.jsonl
python3 bench/torch_topk_peer.py > $OUT/select_torch.jsonl
for i in 1 2; do
  $S select --json --runs 15 --algos quick-multiselect,auto >> $OUT/select_again.jsonl
done
nvcc -arch=sm_90 -O3 bench/micro/read_shapes.cu -o /tmp/read_shapes &&
  /tmp/read_shapes 15 > $OUT/read_shapes.jsonl
python3 bench/select_table.py $OUT/select_grid.jsonl $OUT/select_torch.jsonl > $OUT/table.md
cat $OUT/table.md
