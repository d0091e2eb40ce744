#!/usr/bin/env python3
"""Prints the README's two tables from paper3.csv and paper1.csv: each
policy's throughput as a fraction of the default policy's peak over 1-48
cores, with `/SSC` for the lca policies. Run from this directory after the
two `corral sim` commands of the README."""
import csv
import collections

SHOWN = [32, 48, 256, 1024]


def table(path, policies, title):
    rows = list(csv.DictReader(open(path)))
    tp = collections.defaultdict(dict)
    for r in rows:
        tp[(r["workload"], r["policy"])][int(r["cores"])] = r
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    head = f"| {title} | peak at | {SHOWN[0]}: {' '.join(policies)} | "
    print(head + " | ".join(str(c) for c in SHOWN[1:]) + " |")
    print("|---" * (2 + len(SHOWN)) + "|")
    for w in workloads:
        default = tp[(w, "default")]
        at, peak = max(
            ((c, float(r["throughput"])) for c, r in default.items() if c <= 48),
            key=lambda x: x[1],
        )
        cells = []
        for c in SHOWN:
            vals = []
            for p in policies:
                r = tp[(w, p)][c]
                v = f"{float(r['throughput']) / peak:.2f}"
                if p.startswith("lca"):
                    v += f"/{r['ssc']}"
                vals.append(v)
            cells.append(" ".join(vals))
        print(f"| {w} | {at} | " + " | ".join(cells) + " |")


table("paper3.csv", ["default", "mcs", "lca", "lca-2013"], "workload")
print()
table("paper1.csv", ["default", "lca", "lca-2013"], "workload (paper 1)")
