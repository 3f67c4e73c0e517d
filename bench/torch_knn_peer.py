#!/usr/bin/env python3
"""Torch peer of `featmatch-bench knn`: exact kNN by mm + topk on the same shapes (D = 128,
SIFT-like uint8 values), best of fp32 / tf32 / fp16 operands, one JSON line per shape and dtype.

Distances ||q||^2 + ||c||^2 - 2 q.c, computed in query chunks so that the distance block stays
under 4 GiB; timed with CUDA events, median of several runs after a warm-up."""
import json
import sys

import torch

SHAPES = [(8192, 65536, 32), (65536, 65536, 32), (1024, 4194304, 32), (8192, 1048576, 128)]


def sift_like(rows, dim, gen):
    u = torch.rand(rows, dim, generator=gen, device="cuda")
    return torch.clamp(-20.0 * torch.log1p(-u), max=255.0).floor()


def knn(q, c, cn, k):
    chunk = max(1, min(q.shape[0], (1 << 30) // c.shape[0]))
    vals, idx = [], []
    for q0 in range(0, q.shape[0], chunk):
        qq = q[q0:q0 + chunk]
        d = cn[None, :] - 2.0 * (qq @ c.T).float()
        d += (qq.float() ** 2).sum(1, keepdim=True)
        v, i = torch.topk(d, k, dim=1, largest=False, sorted=True)
        vals.append(v)
        idx.append(i)
    return torch.cat(vals), torch.cat(idx)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    name = torch.cuda.get_device_name(0)
    for (nq, n, k) in SHAPES:
        q32 = sift_like(nq, 128, gen)
        c32 = sift_like(n, 128, gen)
        best = None
        for dtype in ("fp32", "tf32", "fp16"):
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            t = torch.float16 if dtype == "fp16" else torch.float32
            q, c = q32.to(t), c32.to(t)
            cn = (c32 ** 2).sum(1)
            try:
                knn(q, c, cn, k)
                torch.cuda.synchronize()
                times = []
                for _ in range(runs):
                    a = torch.cuda.Event(enable_timing=True)
                    b = torch.cuda.Event(enable_timing=True)
                    a.record()
                    knn(q, c, cn, k)
                    b.record()
                    torch.cuda.synchronize()
                    times.append(a.elapsed_time(b))
                times.sort()
                ms = times[len(times) // 2]
            except torch.cuda.OutOfMemoryError:
                ms = float("nan")
            rec = {"bench": "knn_torch", "device": name, "torch": torch.__version__, "q": nq,
                   "n": n, "k": k, "d": 128, "dtype": dtype, "median_ms": round(ms, 4)}
            print(json.dumps(rec), flush=True)
            if ms == ms and (best is None or ms < best[1]):
                best = (dtype, ms)
            del q, c
            torch.cuda.empty_cache()
        print(json.dumps({"bench": "knn_torch_best", "device": name, "q": nq, "n": n, "k": k,
                          "dtype": best[0] if best else None,
                          "median_ms": round(best[1], 4) if best else None}), flush=True)


if __name__ == "__main__":
    main()
