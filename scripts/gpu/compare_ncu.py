#!/usr/bin/env python3
"""Compares Vantage's static cost report with Nsight Compute's counters for one launch (issue 12).

usage: compare_ncu.py NCU_CSV REPORT_JSON [SOURCE_CSV]
NCU_CSV is `ncu --csv --metrics ...` output for the launch; REPORT_JSON is `vantage report NAME --json`
for the same sizes. Prints one line per metric (report, ncu, ratio) and exits 1 when a metric the
report calls exact differs from ncu's by more than 1%. Where the report marks loads the compiler may
merge with a neighbour's (AccessCost::compiler_may_merge), ncu's count must lie between the report's
total without them and with them.

SOURCE_CSV, when given, is `ncu --section SourceCounters --page source --print-source sass --csv`
for the same launch: ncu's counters per SASS instruction. Its shared wavefronts (the column "L1
Wavefronts Shared" of the shared loads and stores) are a second reading of the two shared wavefront
metrics. The hardware counter can hold wavefronts that no instruction carries: scan_lookback's
shared stores counted 4 to 5% more there than the sum over its store instructions, varying between
runs, while that sum equalled the report (the H200 run of 2026-11-27, docs/gpu-validation.md). Where
the hardware counter differs and the per-instruction sum agrees, the line says both and the metric
is not counted as differing.

A cp.async copy (LDGSTS) reads global memory and writes shared memory in one instruction; ncu counts
it under its own operation (`..._op_ldgsts`), the report as a global load and a shared store, so the
ldgsts counters are added to those. Other operations ncu reports (atomics, reductions) are printed
for information.
"""
import csv
import json
import sys

METRICS = {
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("global", False, "sectors"),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": ("global", True, "sectors"),
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("global", False, "requests"),
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": ("global", True, "requests"),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ("shared", False, "wavefronts"),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": ("shared", True, "wavefronts"),
    # Shared instructions executed, beside the report's shared requests, for information only: ncu
    # counts a warp's instruction when all its lanes are predicated off (an if-converted guard) and
    # the never-taken `@!PT LDS` ptxas puts before a cp.async, which the kernel as written does not
    # have (the second H100 run, docs/gpu-validation.md).
    "smsp__inst_executed_op_shared_ld.sum": ("shared", False, "requests"),
    "smsp__inst_executed_op_shared_st.sum": ("shared", True, "requests"),
}
INFORMATION = {"smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"}


# ncu's counters that the report counts under another operation's metric.
FOLDED = {
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}


def ncu_values(path):
    values = {}
    with open(path) as f:
        rows = [r for r in csv.reader(line for line in f if line.startswith('"'))]
    if not rows:
        return values
    header = rows[0]
    name_col, value_col = header.index("Metric Name"), header.index("Metric Value")
    for r in rows[1:]:
        try:
            values[r[name_col]] = values.get(r[name_col], 0.0) + float(r[value_col].replace(",", ""))
        except ValueError:
            pass
    return values


def source_values(path):
    """ncu's per-instruction shared wavefronts, summed over the shared loads and over the stores,
    under the two hardware metrics' names."""
    with open(path) as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    header = next((r for r in rows if r and r[0] == "Address"), None)
    if header is None:
        return {}
    try:
        space, op, wf = (header.index(c) for c in ("Address Space", "Access Operation", "L1 Wavefronts Shared"))
    except ValueError:
        return {}
    names = {"Load": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
             "Store": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"}
    out = {name: 0.0 for name in names.values()}
    for r in rows[rows.index(header) + 1:]:
        if len(r) <= max(space, op, wf) or r[space] != "Shared" or r[op] not in names:
            continue
        try:
            out[names[r[op]]] += float(r[wf].replace(",", ""))
        except ValueError:
            pass
    return out


def within(metric, n, lo, hi, merged):
    """Whether ncu's n agrees with the report: inside [lo, hi] for loads the compiler may merge,
    within 1% of hi otherwise."""
    if merged.get(metric):
        return 0.99 * lo <= n <= 1.01 * hi
    ratio = hi / n if n else (1.0 if hi == 0 else float("inf"))
    return abs(ratio - 1.0) <= 0.01


def report_values(path):
    """Per metric: the report's total over the accesses it calls exact and comparable, what the
    accesses the compiler may merge add (an upper bound: a GPU counts at most that), and whether an
    estimate is in it. The shared side of a cp.async copy is left out: ncu counts it under no store."""
    rep = json.load(open(path))
    exact_part, merged_part, estimate = {}, {}, {}
    for a in rep["accesses"]:
        for metric, (space, write, what) in METRICS.items():
            if a["space"] != space or a["write"] != write:
                continue
            if a.get("async_copy") and space == "shared":
                continue
            if what == "requests":
                add = a["requests"]
            elif what == "sectors":
                add = a["requests"] * a["sectors_per_request"]
            else:
                add = a["requests"] * a["wavefronts_per_request"]
            part = merged_part if a.get("compiler_may_merge") else exact_part
            part[metric] = part.get(metric, 0.0) + add
            estimate[metric] = estimate.get(metric, False) or not a["exact"]
    return exact_part, merged_part, estimate


def main():
    raw = ncu_values(sys.argv[1])
    ncu = {m: v for m, v in raw.items() if m in METRICS}
    for m, into in FOLDED.items():
        if raw.get(m):
            ncu[into] = ncu.get(into, 0.0) + raw[m]
            print(f"{m}: {raw[m]:.0f} (added to {into})")
    for m, v in sorted(raw.items()):
        if m not in METRICS and m not in FOLDED and v:
            print(f"{m}: {v:.0f} (not in the report's units)")
    fixed, merged, estimate = report_values(sys.argv[2])
    per_instruction = source_values(sys.argv[3]) if len(sys.argv) > 3 else {}
    bad = 0
    for metric in METRICS:
        lo, hi, n = fixed.get(metric, 0.0), fixed.get(metric, 0.0) + merged.get(metric, 0.0), ncu.get(metric)
        if n is None:
            print(f"{metric}: report {hi:.0f}, ncu (not measured)")
            continue
        # Loads the compiler may merge: the GPU counts between the rest and all of them.
        off = not within(metric, n, lo, hi, merged)
        if merged.get(metric):
            what = f"report {lo:.0f} to {hi:.0f} (loads the compiler may merge), ncu {n:.0f}"
        else:
            ratio = hi / n if n else (1.0 if hi == 0 else float("inf"))
            what = f"report {hi:.0f}, ncu {n:.0f}, ratio {ratio:.4f}"
        if metric in INFORMATION:
            print(f"{metric}: {what} (for information)")
            continue
        p = per_instruction.get(metric)
        if p is not None and (off or p != n):
            what += f"; per instruction {p:.0f}"
            if off and within(metric, p, lo, hi, merged):
                what += f" (the hardware counter's {n - p:+.0f} are in no instruction)"
                off = False
        mark = "" if not off else (" (the report's estimate)" if estimate.get(metric) else " DIFFERENT")
        print(f"{metric}: {what}{mark}")
        bad += off and not estimate.get(metric)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
