#!/usr/bin/env python3
"""cuBLAS's GEMMs (through PyTorch) at the sizes gpu-check times Vantage's, as the baselines of the same
run: event timing after warm-ups, the median of the launches on random data.

  fp32   f32 in and out, TF32 off: the sgemm ladder's baseline
  tf32   f32 in and out, TF32 on: the tensor-core tf32 GEMM's (mma_tf32)
  bf16   bf16 A (M x K) and B given as Bt (N x K), f32 out where this PyTorch can write it (else bf16
         out, said in the line): the wgmma GEMM's
  int8   s8 A and B, i32 out (torch._int_mm, cuBLASLt's int8 GEMM): the int8 GEMM's (igemm_mma)

usage: cublas_sgemm.py [--mode MODE[,MODE...]] [--reps N] [--flush] [--json] SIZE...
  prints one line per mode and size (M = N = K = SIZE; default mode fp32): the median ms and TFLOP/s, or
  with --json one object per line; --flush zeroes twice the L2 before each launch, as bench_speed does.
"""
import argparse
import json

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", type=int, nargs="+")
    ap.add_argument("--mode", default="fp32", help="fp32, tf32, bf16 or int8, or several separated by commas")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--flush", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    modes = args.mode.split(",")
    for m in modes:
        if m not in ("fp32", "tf32", "bf16", "int8"):
            ap.error(f"unknown mode '{m}' (fp32, tf32, bf16 or int8)")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device="cuda") if args.flush else None
    for mode in modes:
        for n in args.sizes:
            run(mode, n, args, flush)


def run(mode, n, args, flush):
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    out_dtype = None
    if mode == "int8":
        a = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)
        # B column-major (Bt stored N x K, as igemm_wgmma takes it): cuBLASLt's int8 kernels want A
        # row-major and B column-major ("TN"); on a row-major B PyTorch's _int_mm made 118 TOP/s at
        # 4096^3 on an H200 (2026-11-30), a tenth of the tensor cores' rate.
        bt = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)
        b = bt.t()
        c = torch._int_mm(a, b)
        out_dtype = "i32"

        def gemm():
            torch._int_mm(a, b, out=c)
    elif mode == "bf16":
        a = torch.randn(n, n, device="cuda").to(torch.bfloat16)
        bt = torch.randn(n, n, device="cuda").to(torch.bfloat16)
        b = bt.t()  # Bt stored N x K, as Vantage's wgmma GEMM takes it
        try:
            c = torch.mm(a, b, out_dtype=torch.float32)
            out_dtype = "f32"

            def gemm():
                torch.mm(a, b, out_dtype=torch.float32)
        except (TypeError, RuntimeError):
            c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
            out_dtype = "bf16"

            def gemm():
                torch.mm(a, b, out=c)
    else:
        a = torch.randn(n, n, device="cuda", dtype=torch.float32)
        b = torch.randn(n, n, device="cuda", dtype=torch.float32)
        c = torch.empty(n, n, device="cuda", dtype=torch.float32)
        out_dtype = "f32"

        def gemm():
            torch.matmul(a, b, out=c)
    for _ in range(10):
        gemm()
    times = []
    for _ in range(args.reps):
        if flush is not None:
            flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        gemm()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    ms = times[len(times) // 2]
    gemm()
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    got = c if mode not in ("bf16",) or out_dtype == "bf16" else torch.mm(a, b, out_dtype=torch.float32)
    err = ((got.double() - ref).norm() / ref.norm()).item()
    tflops = 2 * n**3 / ms / 1e9
    if args.json:
        print(json.dumps({"mode": mode, "n": n, "ms": ms, "min_ms": times[0], "max_ms": times[-1],
                          "TFLOPs": tflops, "out": out_dtype, "relative_error": err, "reps": args.reps,
                          "flush": args.flush}))
    else:
        print(f"cuBLAS {mode} gemm {n}^3: median {ms:.4f} ms, {tflops * 1e3:.1f} GFLOP/s "
              f"(out {out_dtype}, relative error {err:.2e})")


if __name__ == "__main__":
    main()
