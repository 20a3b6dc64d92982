#!/usr/bin/env python3
"""cuBLAS's f32 GEMM (through PyTorch, TF32 off) at the sizes gpu-check times Vantage's sgemm, as the
baseline of the same run: event timing, warm-ups, the median of 50 launches on random data.

usage: cublas_sgemm.py SIZE...        prints one line per size: size, median ms, GFLOP/s
"""
import sys

import torch


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for n in (int(a) for a in sys.argv[1:]):
        a = torch.randn(n, n, device="cuda", dtype=torch.float32)
        b = torch.randn(n, n, device="cuda", dtype=torch.float32)
        c = torch.empty(n, n, device="cuda", dtype=torch.float32)
        for _ in range(10):
            torch.matmul(a, b, out=c)
        times = []
        for _ in range(50):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b, out=c)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        times.sort()
        ms = times[len(times) // 2]
        ref = (a.double() @ b.double())
        err = ((c.double() - ref).norm() / ref.norm()).item()
        print(f"cuBLAS sgemm {n}^3: median {ms:.4f} ms, {2 * n**3 / ms / 1e6:.1f} GFLOP/s (relative error {err:.2e})")


if __name__ == "__main__":
    main()
