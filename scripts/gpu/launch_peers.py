#!/usr/bin/env python3
"""Launch overhead of the peers, measured the way bench_launch measures Vantage: the same axpby
kernel (the cubin Vantage generated, where a peer can load one), 256 launches on one stream, then a
synchronize; the time per launch is the batch time over 256. Median of 21 batches after 5 warm-up
batches. Peers missing on the machine are reported as missing, never estimated.

The cubin's entry takes what every Vantage kernel takes after the user's parameters: each buffer's
length (x, y, z) and the error word a failed check writes; the peers pass them, and the error word must
stay 0. Each peer runs in a process of its own, so one that crashes is reported and the rest measured.

usage: launch_peers.py DIR_WITH_AXPBY_CUBIN OUT_JSON
"""
import json
import statistics
import subprocess
import sys
import time

BATCH = 256
REPS = 21
WARMUP = 5
N = 256


def time_batches(launch, sync):
    for _ in range(WARMUP):
        for _ in range(BATCH):
            launch()
        sync()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(BATCH):
            launch()
        sync()
        times.append((time.perf_counter() - t0) / BATCH * 1e6)
    return statistics.median(times)


def cupy_raw(d):
    import cupy as cp
    entry = open(f"{d}/axpby.entry").read().strip()
    mod = cp.RawModule(path=f"{d}/axpby.cubin")
    fn = mod.get_function(entry)
    x = cp.ones(N, dtype=cp.float32)
    y = cp.ones(N, dtype=cp.float32)
    z = cp.zeros(N, dtype=cp.float32)
    err = cp.zeros(1, dtype=cp.uint64)
    args = (cp.int32(N), cp.float32(2.0), cp.float32(3.0), x, y, z, cp.int64(N), cp.int64(N), cp.int64(N), err)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        us = time_batches(lambda: fn((1,), (256,), args), stream.synchronize)
    assert float(z[0]) == 5.0 and float(z[N - 1]) == 5.0, "CuPy's launch computed the wrong value"
    assert int(err[0]) == 0, "CuPy's launch set the error word"
    return us


def cuda_core(d):
    try:  # cuda.core moved out of `experimental` in its 0.4 release
        import cuda.core as cc
        cc.Device
    except (ImportError, AttributeError):
        import cuda.core.experimental as cc
    import cupy as cp  # buffers; cuda.core takes their device pointers
    import numpy as np
    dev = cc.Device()
    dev.set_current()
    entry = open(f"{d}/axpby.entry").read().strip()
    data = open(f"{d}/axpby.cubin", "rb").read()
    # cuda.core's API has moved between releases: try the newer spelling first.
    code = cc.ObjectCode.from_cubin(data) if hasattr(cc.ObjectCode, "from_cubin") else cc.ObjectCode(data, "cubin")
    kernel = code.get_kernel(entry)
    stream = dev.create_stream()
    x = cp.ones(N, dtype=cp.float32)
    y = cp.ones(N, dtype=cp.float32)
    z = cp.zeros(N, dtype=cp.float32)
    err = cp.zeros(1, dtype=cp.uint64)
    args = (np.int32(N), np.float32(2.0), np.float32(3.0), x.data.ptr, y.data.ptr, z.data.ptr, np.int64(N),
            np.int64(N), np.int64(N), err.data.ptr)
    try:
        config = cc.LaunchConfig(grid=1, block=256)
        cc.launch(stream, config, kernel, *args)
        go = lambda: cc.launch(stream, config, kernel, *args)
    except TypeError:
        config = cc.LaunchConfig(grid=1, block=256, stream=stream)
        go = lambda: cc.launch(kernel, config, *args)
    us = time_batches(go, stream.sync)
    assert float(z[0]) == 5.0 and float(z[N - 1]) == 5.0, "cuda.core's launch computed the wrong value"
    assert int(err[0]) == 0, "cuda.core's launch set the error word"
    return us


def numba_cuda(_d):
    # Numba compiles its own kernel: the same computation, not the same cubin.
    from numba import cuda
    import numpy as np

    @cuda.jit
    def axpby(n, a, b, x, y, z):
        i = cuda.grid(1)
        if i < n:
            z[i] = a * x[i] + b * y[i]

    x = cuda.to_device(np.ones(N, dtype=np.float32))
    y = cuda.to_device(np.ones(N, dtype=np.float32))
    z = cuda.device_array(N, dtype=np.float32)
    stream = cuda.stream()
    k = axpby[1, 256, stream]
    us = time_batches(lambda: k(np.int32(N), np.float32(2.0), np.float32(3.0), x, y, z), stream.synchronize)
    assert float(z.copy_to_host()[0]) == 5.0, "Numba's launch computed the wrong value"
    return us


PEERS = {"cupy_rawkernel": cupy_raw, "cuda_core": cuda_core, "numba_cuda": numba_cuda}


def one(name, d):
    """Measures one peer in this process and prints its result as JSON (run by main in a child)."""
    try:
        result = {"us_per_launch": PEERS[name](d)}
    except Exception as e:  # a missing or failing peer is reported, not guessed
        result = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(result), flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        one(sys.argv[2], sys.argv[3])
        return
    d, out = sys.argv[1], sys.argv[2]
    results = {}
    for name in PEERS:
        try:
            p = subprocess.run([sys.executable, __file__, "--one", name, d], capture_output=True, text=True,
                               timeout=120)
            lines = p.stdout.strip().splitlines()
            results[name] = json.loads(lines[-1]) if p.returncode == 0 and lines else {
                "error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}"}
        except subprocess.TimeoutExpired:
            results[name] = {"error": "did not finish in 120 s"}
        print(name, results[name], flush=True)
    json.dump(results, open(out, "w"), indent=2)
    # 2: some peer could not be measured (it is reported as such, not as a failure of Vantage's).
    sys.exit(0 if all("us_per_launch" in r for r in results.values()) else 2)


if __name__ == "__main__":
    main()
