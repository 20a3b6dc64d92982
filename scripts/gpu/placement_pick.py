#!/usr/bin/env python3
"""Checks the placement advice (issue 12, docs/report.md) against measured times.

usage: placement_pick.py CPU_JSON GPU_JSON
CPU_JSON is `vantage_bench_report --benchmark_filter=BM_PlacementCpu --benchmark_format=json` from a
build with the CPU backend; GPU_JSON the same program's BM_PlacementGpu on the GPU (the bundle has no
CPU backend, so the CPU side is measured where the bundle was built, on the host whose figures the
advice's CPU model holds). For each point of the sweep it prints the two measured times (the GPU's
with its copies), the two estimates, the device the advice picks and the one measured faster.

A point is right when the advice picks the device measured faster, or when the two measured times
are within 20% of each other (either pick costs little). Exits 1 when a point is wrong or when a GPU
estimate is off its measured time by more than 2x; 2 when the inputs have no points in common.
"""
import json
import sys

TIE = 1.2


def points(path, prefix):
    out = {}
    for b in json.load(open(path)).get("benchmarks", []):
        name = b.get("name", "")
        if not name.startswith(prefix) or b.get("error_occurred") or b.get("run_type") == "aggregate":
            continue
        key = "/".join(name.split("/")[1:3])  # <kernel>/<log2 size>
        out[key] = b
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    cpu = points(sys.argv[1], "BM_PlacementCpu/")
    gpu = points(sys.argv[2], "BM_PlacementGpu/")
    keys = sorted(set(cpu) & set(gpu), key=lambda k: tuple(int(x) for x in k.split("/")))
    if not keys:
        print("no point measured on both devices", file=sys.stderr)
        return 2
    wrong = off = 0
    print(f"{'point':26} {'cpu ms':>9} {'gpu ms':>9} {'cpu est':>9} {'gpu est':>9}  advice  faster  verdict")
    for k in keys:
        c, g = cpu[k], gpu[k]
        # Both sides' median launch (an older CPU_JSON has only real_time, the mean, in ms).
        cpu_ms, gpu_ms = c.get("measured_ms", c["real_time"]), g["measured_ms"]
        cpu_est, gpu_est = c["estimate_ms"], g["estimate_ms"]
        advice = "GPU" if gpu_est < cpu_est else "CPU"
        faster = "GPU" if gpu_ms < cpu_ms else "CPU"
        tie = max(cpu_ms, gpu_ms) <= TIE * min(cpu_ms, gpu_ms)
        ok = advice == faster or tie
        ratio = gpu_est / gpu_ms if gpu_ms > 0 else float("inf")
        far = not (0.5 <= ratio <= 2.0)
        wrong += not ok
        off += far
        verdict = ("right" if advice == faster else "tie") if ok else "WRONG"
        if far:
            verdict += f", GPU estimate {ratio:.2f}x"
        print(f"{g.get('label', k):26.26} {cpu_ms:9.4f} {gpu_ms:9.4f} {cpu_est:9.4f} {gpu_est:9.4f}  "
              f"{advice:6}  {faster:6}  {verdict}")
    print(f"{len(keys)} points: {len(keys) - wrong} picked right (or ties), {wrong} wrong; "
          f"{off} GPU estimates off by more than 2x")
    return 1 if wrong or off else 0


if __name__ == "__main__":
    sys.exit(main())
