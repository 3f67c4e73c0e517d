#!/usr/bin/env python3
"""Peer for `featmatch-bench select`: torch.topk (smallest k, sorted) on the same shapes, timed
with CUDA events (median), beside a read of the same matrix (x.sum()). One JSON object per line.
--quick: fewer shapes and k; --ties: every value one of 256 levels, as `featmatch-bench select
--data ties` (the lines then carry "data": "ties"); --rows R,R.. --cols N,N.. --k K,K..: those
shapes and k instead (k past a row's length left out)."""
import json
import sys

import torch


def median_ms(fn, runs=15, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def main():
    shapes = [(8192, c) for c in (8192, 16384, 32768, 65536)] + [(1024, 1 << 20)]
    ks = [32, 64, 128, 256, 512, 1024]
    if "--quick" in sys.argv:
        shapes = [(8192, 65536), (1024, 1 << 20)]
        ks = [32, 256, 1024]
    def listed(flag):
        i = sys.argv.index(flag) if flag in sys.argv else -1
        return [int(v) for v in sys.argv[i + 1].split(",")] if i >= 0 else None
    if listed("--rows") or listed("--cols"):
        shapes = [(r, c) for r in (listed("--rows") or [8192])
                  for c in (listed("--cols") or [65536])]
    ks = listed("--k") or ks
    ties = "--ties" in sys.argv
    extra = {"data": "ties"} if ties else {}
    dev = torch.cuda.get_device_name(0)
    for rows, cols in shapes:
        x = torch.rand(rows, cols, device="cuda", dtype=torch.float32)
        if ties:
            x = torch.floor(x * 256.0) / 256.0
        read_ms = median_ms(lambda: x.sum())
        gb = rows * cols * 4 / 1e9
        print(json.dumps({"bench": "select", "peer": "torch", "device": dev, "rows": rows,
                          "N": cols, "algo": "torch.sum", "median_ms": round(read_ms, 4),
                          "GBps": round(gb / read_ms * 1e3, 1), **extra}), flush=True)
        for k in ks:
            if k > cols:
                continue
            ms = median_ms(lambda: torch.topk(x, k, dim=1, largest=False, sorted=True))
            print(json.dumps({"bench": "select", "peer": "torch", "device": dev, "rows": rows,
                              "N": cols, "k": k, "algo": "torch.topk",
                              "torch": torch.__version__, "median_ms": round(ms, 4),
                              "GBps": round(gb / ms * 1e3, 1), **extra}), flush=True)
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
