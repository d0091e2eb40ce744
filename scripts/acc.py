import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r: (r['workload'], int(r['cores']))
tp = collections.defaultdict(dict)
for r in rows:
    tp[key(r)][r['policy']] = float(r.get('throughput') or r.get('ops_per_s') or r.get('ops/s'))
cores = sorted({k[1] for k in tp})
wls = list(dict.fromkeys(k[0] for k in tp))
bad = 0
print("workload      " + "".join(f"{c:>6}" for c in cores))
for w in wls:
    line = f"{w:14s}"
    for c in cores:
        d = tp[(w, c)]
        base = max(d['ticket'], d['qspinlock'])
        ratio = d['lca-qspinlock'] / base if base else 1.0
        mark = "!" if ratio < 0.95 else " "
        bad += ratio < 0.95
        line += f"{ratio:5.2f}{mark}"
    print(line)
print("below 0.95:", bad)
