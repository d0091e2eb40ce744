#!/usr/bin/env python3
"""What an exec-heavy shell loop pays under `corral run` (issue 15's
"1,000 /bin/true <= 1.1x plain"): `sh -c 'for i in $(seq N); do /bin/true;
done'` plain and under `corral run --quiet` with each preload given, in a
fresh random order every round; prints the median wall time and the median
CPU time of the children (user + system, less disturbed by the other work
on a shared machine than wall time) and their ratios to plain.

    tests/bench/exec-loop.py [--loops N] [--rounds R] [--corral PATH]
                             [--preload PATH ...] [--env PRELOAD:KEY=VALUE ...]
                             [--json]

Without --preload the case is corral's own library (next to --corral).
--env adds a variable to the case of that preload (its index, from 0).
Ratios move by 10-20 % with the load of a shared 2-core machine: compare
cases of one run, never across runs.
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loops", type=int, default=1000, help="/bin/true runs per loop (default 1000)")
    ap.add_argument("--rounds", type=int, default=9, help="rounds, each case once per round (default 9)")
    ap.add_argument("--corral", default="target/release/corral", help="the corral binary")
    ap.add_argument("--preload", action="append", default=[], help="a preload to run under (CORRAL_PRELOAD); repeatable")
    ap.add_argument("--env", action="append", default=[], help="INDEX:KEY=VALUE, added to that preload's case")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    if args.loops < 1 or args.rounds < 1:
        sys.exit("--loops and --rounds: expected at least 1")
    if not os.access(args.corral, os.X_OK):
        sys.exit(f"--corral {args.corral}: not an executable (build it: cargo build --release -p corral -p corral-preload)")
    loop = ["sh", "-c", f"for i in $(seq {args.loops}); do /bin/true; done"]
    base = dict(os.environ)
    base.pop("CORRAL_PRELOAD", None)
    cases = {"plain": (loop, base)}
    preloads = args.preload or [None]
    extra = [dict() for _ in preloads]
    for spec in args.env:
        try:
            index, kv = spec.split(":", 1)
            key, value = kv.split("=", 1)
            extra[int(index)][key] = value
        except (ValueError, IndexError):
            sys.exit(f"--env {spec}: expected INDEX:KEY=VALUE with INDEX below {len(preloads)}")
    for i, lib in enumerate(preloads):
        env = {**base, **extra[i]}
        if lib is not None:
            if not os.path.isfile(lib):
                sys.exit(f"--preload {lib}: no such file")
            env["CORRAL_PRELOAD"] = os.path.abspath(lib)
        cases[f"corral run [{i}]"] = ([args.corral, "run", "--quiet", "--"] + loop, env)
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for _ in range(args.rounds):
        order = list(cases)
        random.shuffle(order)
        for k in order:
            argv, env = cases[k]
            c0 = children_cpu()
            t0 = time.perf_counter()
            subprocess.run(argv, check=True, env=env, stderr=subprocess.DEVNULL)
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(children_cpu() - c0)
    pw = statistics.median(wall["plain"])
    pc = statistics.median(cpu["plain"])
    rows = []
    for i, k in enumerate(cases):
        w = statistics.median(wall[k])
        c = statistics.median(cpu[k])
        rows.append({
            "case": k,
            "preload": None if i == 0 else preloads[i - 1],
            "wall_s": w,
            "wall_ratio": w / pw,
            "cpu_s": c,
            "cpu_ratio": c / pc,
        })
    if args.json:
        print(json.dumps({"loops": args.loops, "rounds": args.rounds, "cases": rows}, indent=2))
        return
    print(f"{args.loops} x /bin/true, median of {args.rounds} rounds (random order)")
    print(f"{'case':16s} {'wall s':>8s} {'ratio':>7s} {'cpu s':>8s} {'ratio':>7s}  preload")
    for r in rows:
        print(f"{r['case']:16s} {r['wall_s']:8.3f} {r['wall_ratio']:6.3f}x {r['cpu_s']:8.3f} {r['cpu_ratio']:6.3f}x  {r['preload'] or ''}")


if __name__ == "__main__":
    main()
