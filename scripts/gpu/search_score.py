#!/usr/bin/env python3
"""Scores the tuner's random and model-based searches against the exhaustive sweep of the same run.

gpu-check's `search` part runs `vantage tune NAME --search HOW --samples Q --seed S --fresh` (a quarter
of the space) on the GPU for a few seeds, after the `tune` part swept the whole space into a CSV. For
each search this prints its pick, the pick's time in the sweep over the sweep's best (the search's
own figure is its own measurement; the sweep's is the common yardstick), and a last line with the
median per search. Exit 1 if the model search's median pick is more than 5% slower than the sweep's
best in any space (issue 37: within 5% with a quarter of the measurements), else 0.

usage: search_score.py SWEEP.csv OUT... [--sweep SWEEP2.csv OUT...]
  each OUT is a file of `vantage tune` output named *_{random,model}_SEED.txt
"""
import csv
import re
import statistics
import sys


def sweep_times(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    params = [k for k in rows[0] if k not in ("status", "ms", "compile_ms", "stored", "detail")]
    times = {}
    for r in rows:
        if r["status"] == "ok":
            times[" ".join(f"{p}={r[p]}" for p in sorted(params))] = float(r["ms"])
    return times


def pick(path):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^best: (.*?), [0-9.]+ ms", text, re.M)
    measured = re.search(r"^(\d+) measured now \((\w+) search\)", text, re.M)
    return (m.group(1) if m else None), (int(measured.group(1)) if measured else None)


def main(argv):
    groups, current = [], None
    for a in argv:
        if a == "--sweep":
            current = None
        elif current is None:
            current = (a, [])
            groups.append(current)
        else:
            current[1].append(a)
    if not groups:
        print(__doc__)
        return 2
    failed = False
    summary = []
    for sweep, outs in groups:
        times = sweep_times(sweep)
        best = min(times.values())
        ratios = {"random": [], "model": []}
        for out in outs:
            how = "model" if "_model_" in out else "random"
            config, measured = pick(out)
            ratio = times.get(config) / best if config in times else float("inf")
            ratios[how].append(ratio)
            print(f"{sweep} {out.rsplit('/', 1)[-1]}: measured {measured} of {len(times)}, "
                  f"picked {config}: {ratio:.3f} of the sweep's best")
        within = sum(t <= 1.05 * best for t in times.values())
        line = [f"{sweep.rsplit('/', 1)[-1]} ({len(times)} configurations, {within} within 5%)"]
        for how, r in ratios.items():
            if r:
                line.append(f"{how} median {statistics.median(r):.3f}, {sum(x <= 1.05 for x in r)} of {len(r)} within 5%")
        summary.append("; ".join(line))
        if ratios["model"] and statistics.median(ratios["model"]) > 1.05:
            failed = True
    print(" | ".join(summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
