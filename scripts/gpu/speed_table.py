#!/usr/bin/env python3
"""The speed table of one GPU check: Vantage's kernels (bench_speed's JSON) beside their twins, the copy
bandwidth, CUB's scan, reduce, select and histogram (cub_scan's lines) and cuBLAS (cublas_sgemm.py --json lines), with the goals of
the speed-of-light issue checked. Every ratio is of figures measured in the same run.

usage: speed_table.py SPEED.json [SPEED.json ...] [--cub CUB.jsonl] [--cublas CUBLAS.jsonl ...]
  (several SPEED.json: the rows of each, as gpu-check runs some rows alone)
  prints the Markdown table, then one line per goal (MET, MISSED or UNMEASURED) and a last line
  "goals: M of G met"; exits 0 when every row was measured (whatever the goals), 1 otherwise.
"""
import argparse
import json
import sys


def load_lines(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("speed", nargs="+")
    ap.add_argument("--cub")
    ap.add_argument("--cublas", action="append", default=[])
    args = ap.parse_args()
    benchmarks = []
    for path in args.speed:
        with open(path) as f:
            benchmarks += json.load(f).get("benchmarks", [])
    rows, errors = [], []
    for b in benchmarks:
        if b.get("error_occurred") or b.get("skipped"):
            errors.append(f"{b['name']}: {b.get('error_message') or b.get('skip_message')}")
            continue
        if "vantage_ms" not in b:
            continue
        name = b["name"].split("/")  # speed/<example>/<size>/...
        rows.append(dict(b, example=name[1], size=name[2]))
    cub = {r["log2n"]: r for r in load_lines(args.cub)} if args.cub else {}
    cublas = {}
    for path in args.cublas:
        for r in load_lines(path):
            cublas[(r["mode"], r["n"])] = r

    def baseline(r):
        """(name, its ms, the kernel's speed over it) for a row."""
        ex, size = r["example"], r["size"]
        if ex.startswith(("sgemm", "gemm_wgmma", "igemm")) or ex == "mma_tf32":
            mode = ("tf32" if ex == "mma_tf32" else "int8" if ex.startswith("igemm")
                    else "bf16" if ex.startswith("gemm_wgmma") else "fp32")
            c = cublas.get((mode, int(size)))
            if c:
                return f"cuBLAS {mode}" + (" (bf16 out)" if c.get("out") == "bf16" else ""), c["ms"], c["ms"] / r["vantage_ms"]
            return f"cuBLAS {mode}", None, None
        which = {"device_scan": "scan", "device_sum": "reduce", "compact": "select",
                 "byte_histogram": "histogram", "radix_sort": "radix",
                 "radix_sort_onesweep": "radix"}.get(ex, "scan" if ex.startswith("scan_") else None)
        if which:
            log2n = int(size.split("^")[1]) if "^" in size else None
            c = cub.get(log2n)
            if c and f"{which}_ms" in c:
                return f"CUB {which}", c[f"{which}_ms"], c[f"{which}_ms"] / r["vantage_ms"]
            return f"CUB {which}", None, None
        return None, None, None

    out = []
    out.append("| kernel | size | Vantage ms (min–max) | checked accesses | TFLOP/s or GB/s | twin ms | speed of twin "
               "| copy GB/s | of copy | baseline | baseline ms | of baseline |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = f"{r['TFLOPs']:.1f} TFLOP/s" if "TFLOPs" in r else f"{r['GBps']:.0f} GB/s"
        bname, bms, bof = baseline(r)

        def f(key, fmt):
            return fmt.format(r[key]) if key in r else "–"
        out.append(
            f"| {r['example']} | {r['size']} | {r['vantage_ms']:.4f} ({r['vantage_min_ms']:.4f}–{r['vantage_max_ms']:.4f}) "
            f"| {int(r.get('checks', 0))} | {rate} "
            f"| {'twin differs' if r.get('twin_differs') else f('twin_ms', '{:.4f}')} | {f('speed_of_twin', '{:.3f}')} "
            f"| {f('copy_GBps', '{:.0f}')} | {f('of_copy', '{:.3f}')} | {bname or '–'} "
            f"| {'–' if bms is None else f'{bms:.4f}'} | {'–' if bof is None else f'{bof:.3f}'} |")
    print("\n".join(out))
    print()

    goals = []

    def goal(text, value, need, measured=True):
        if not measured or value is None:
            goals.append(("UNMEASURED", text, ""))
        else:
            goals.append(("MET" if value >= need else "MISSED", text, f"{value:.3f} (goal {need})"))

    twins = [r for r in rows if "speed_of_twin" in r]
    worst = min(twins, key=lambda r: r["speed_of_twin"]) if twins else None
    goal("every kernel at least 0.95 of its twin's speed"
         + (f"; slowest: {worst['example']}/{worst['size']}" if worst else ""),
         worst["speed_of_twin"] if worst else None, 0.95)
    sg = [r for r in rows if r["example"].startswith("sgemm") and r["size"] == "4096"]
    best = min(sg, key=lambda r: r["vantage_ms"]) if sg else None
    fp32 = cublas.get(("fp32", 4096))
    goal("the best sgemm at least 0.90 of cuBLAS fp32 at 4096^3" + (f" ({best['example']})" if best else ""),
         fp32["ms"] / best["vantage_ms"] if best and fp32 else None, 0.90)
    for n in (4096, 8192):
        ws = [r for r in rows if r["example"].startswith("gemm_wgmma") and r["size"] == str(n)]
        w = min(ws, key=lambda r: r["vantage_ms"]) if ws else None
        c = cublas.get(("bf16", n))
        goal(f"the best bf16 wgmma GEMM at least 0.90 of cuBLAS bf16 at {n}^3" + (f" ({w['example']})" if w else ""),
             c["ms"] / w["vantage_ms"] if w and c else None, 0.90)
    # The int8 GEMM: the faster of the mma.sync one and the wgmma one.
    igs = [r for r in rows if r["example"].startswith("igemm") and r["size"] == "4096"]
    ig = min(igs, key=lambda r: r["vantage_ms"]) if igs else None
    i8 = cublas.get(("int8", 4096))
    goal("the int8 GEMM at least 0.70 of cuBLAS int8 at 4096^3" + (f" ({ig['example']})" if ig else ""),
         i8["ms"] / ig["vantage_ms"] if ig and i8 else None, 0.70)
    scans = [r for r in rows if r["example"].startswith("scan_") and r["size"] == "n=2^28"]
    s = min(scans, key=lambda r: r["vantage_ms"]) if scans else None
    goal("the scan at 2^28 at least 0.90 of the copy bandwidth" + (f" ({s['example']})" if s else ""),
         s.get("of_copy") if s else None, 0.90)
    goal("the scan at 2^28 at least CUB's speed", cub[28]["scan_ms"] / s["vantage_ms"] if s and 28 in cub else None, 1.0)
    # The device library's device-wide operations against CUB's, at every size (issue 38).
    for ex, which in (("device_scan", "scan"), ("device_sum", "reduce"), ("compact", "select"),
                      ("byte_histogram", "histogram"), ("radix_sort", "radix")):
        for k in (24, 26, 28):
            # The radix sort: the faster of its two forms (three kernels a pass, or one sweep).
            same = [r for r in rows if (r["example"] == ex or (ex == "radix_sort" and r["example"] == "radix_sort_onesweep"))
                    and r["size"] == f"n=2^{k}"]
            r = min(same, key=lambda r: r["vantage_ms"]) if same else None
            c = cub.get(k)
            goal(f"{ex} at 2^{k} at least 0.90 of CUB's {which}",
                 c[f"{which}_ms"] / r["vantage_ms"] if r and c and f"{which}_ms" in c else None, 0.90)
    for t in ("transpose", "transpose_padded", "transpose_async", "stencil", "softmax"):
        r = next((r for r in rows if r["example"] == t), None)
        goal(f"{t} at least 0.85 of the copy bandwidth", r.get("of_copy") if r else None, 0.85)
    for status, text, value in goals:
        print(f"{status:10s} {text}{': ' + value if value else ''}")
    for e in errors:
        print(f"NOT RUN    {e}")
    met = sum(1 for g in goals if g[0] == "MET")
    print(f"goals: {met} of {len(goals)} met; {len(rows)} rows measured, {len(errors)} not")
    return 0 if rows and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
