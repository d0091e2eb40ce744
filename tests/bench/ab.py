#!/usr/bin/env python3
"""A side-by-side A/B of one program: plain (glibc's locks) and under
`corral run` with each set of flags given, every case once per round in a
fresh random order; prints each case's median wall time, its throughput
ratio to plain (plain's wall / its wall), the median CPU time of the
children (user + sys) and its ratio, and the range of wall times.

    tests/bench/ab.py [--rounds R] [--corral PATH] [--case NAME=FLAGS ...]
                      [--json] -- PROG ARGS...

Without --case the cases are `default` (no flags) and `none`
(--policy none). FLAGS are `corral run` flags, space-separated, e.g.
--case 'ticket=--lock ticket'. On a shared 2-core machine the spread of one
program can exceed the effect: read the ranges, compare cases of one run
only.
"""
import argparse
import json
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
    ap.add_argument("--rounds", type=int, default=9, help="rounds, each case once per round (default 9)")
    ap.add_argument("--corral", default="target/release/corral", help="the corral binary")
    ap.add_argument("--case", action="append", default=[], help="NAME=FLAGS: a case under corral run FLAGS")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("prog", nargs=argparse.REMAINDER, help="-- PROG ARGS...")
    args = ap.parse_args()
    prog = args.prog[1:] if args.prog[:1] == ["--"] else args.prog
    if not prog:
        sys.exit("no program given: ab.py [options] -- PROG ARGS...")
    if args.rounds < 1:
        sys.exit(f"--rounds {args.rounds}: expected at least 1")
    cases = {"plain": prog}
    for spec in args.case or ["default=", "none=--policy none"]:
        name, sep, flags = spec.partition("=")
        if not sep or not name or name == "plain":
            sys.exit(f"--case {spec!r}: expected NAME=FLAGS with a NAME other than 'plain'")
        cases[name] = [args.corral, "run", "--quiet", *flags.split(), "--", *prog]
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for r in range(args.rounds):
        order = list(cases)
        random.shuffle(order)
        for k in order:
            c0, t0 = children_cpu(), time.perf_counter()
            done = subprocess.run(cases[k], stdout=subprocess.DEVNULL)
            if done.returncode != 0:
                sys.exit(f"case {k}: exit status {done.returncode}: {' '.join(cases[k])}")
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(children_cpu() - c0)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    base_w, base_c = statistics.median(wall["plain"]), statistics.median(cpu["plain"])
    rows = []
    for k in cases:
        w, c = statistics.median(wall[k]), statistics.median(cpu[k])
        rows.append({"case": k, "wall_s": w, "throughput_ratio": base_w / w, "cpu_s": c,
                     "cpu_ratio": c / base_c if base_c > 0 else None,
                     "wall_min_s": min(wall[k]), "wall_max_s": max(wall[k])})
    if args.json:
        print(json.dumps({"program": prog, "rounds": args.rounds, "cases": rows}, indent=2))
        return
    print(f"{' '.join(prog)}: median of {args.rounds} rounds (random order)")
    print(f"{'case':<12} {'wall s':>8} {'thr':>7} {'cpu s':>8} {'cpu':>7}  wall range")
    for r in rows:
        cr = f"{r['cpu_ratio']:.3f}x" if r["cpu_ratio"] is not None else "-"
        print(f"{r['case']:<12} {r['wall_s']:8.3f} {r['throughput_ratio']:6.3f}x {r['cpu_s']:8.3f} {cr:>7}  "
              f"{r['wall_min_s']:.3f}-{r['wall_max_s']:.3f}")


if __name__ == "__main__":
    main()
