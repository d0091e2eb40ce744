#!/usr/bin/env bash
# corral run's report says what really happened inside PROG: a static or
# foreign-setuid program runs without corral's library and the report must
# not claim the policy; a program that never makes a second thread runs no
# monitor; thread exits are not counted as decisions.
#   report_truth.sh CORRAL SCRATCH
set -euo pipefail
corral=$1
scratch=$2
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

cat >"$scratch/threads.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long n;
static void *work(void *a) { (void)a; for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&m); n++; pthread_mutex_unlock(&m); } return 0; }
int main(void) { pthread_t t[6]; for (int i = 0; i < 6; i++) pthread_create(&t[i], 0, work, 0);
  for (int i = 0; i < 6; i++) pthread_join(t[i], 0); printf("%ld\n", n); return n != 600000; }
C
cc -O2 -pthread -o "$scratch/threads" "$scratch/threads.c"
cc -O2 -pthread -static -o "$scratch/threads-static" "$scratch/threads.c"

# Static: the library cannot load.
"$corral" run --report "$scratch/static.json" -- "$scratch/threads-static" >/dev/null 2>"$scratch/static.err"
[[ $(field "$scratch/static.json" runtime) == no-stats ]] || fail "static program reported as $(field "$scratch/static.json" runtime)"
grep -q "did not load" "$scratch/static.err" || fail "no line says corral did not load: $(cat "$scratch/static.err")"

# Foreign setuid: the loader ignores LD_PRELOAD (secure execution).
setuid_checked=no
if [[ $(id -u) == 0 ]] && id nobody >/dev/null 2>&1; then
    dir=$(mktemp -d /var/tmp/corral-suid.XXXXXX)
    cp "$scratch/threads" "$dir/threads-suid"
    chown nobody "$dir/threads-suid"
    chmod 4755 "$dir/threads-suid"
    if [[ $(findmnt -no OPTIONS --target "$dir" 2>/dev/null) != *nosuid* ]]; then
        "$corral" run --report "$scratch/suid.json" -- "$dir/threads-suid" >/dev/null 2>&1
        [[ $(field "$scratch/suid.json" runtime) == no-stats ]] || { rm -rf "$dir"; fail "foreign setuid program reported as $(field "$scratch/suid.json" runtime)"; }
        setuid_checked=yes
    fi
    rm -rf "$dir"
fi

# By default a process that never contends stays on glibc's locks: not
# loaded, and the line says why.
"$corral" run --report "$scratch/idle.json" -- /bin/true 2>"$scratch/idle.err"
[[ $(field "$scratch/idle.json" runtime) == no-stats ]] || fail "/bin/true by default reported as $(field "$scratch/idle.json" runtime)"
grep -q "did not load, as PROG did not hand a mutex to a waiting thread 1000 times" "$scratch/idle.err" || fail "no line says why corral did not load: $(cat "$scratch/idle.err")"

# One thread, loaded at the first lock call: no monitor.
"$corral" run --load-after-contended 0 --report "$scratch/one.json" -- /bin/true 2>"$scratch/one.err"
[[ $(field "$scratch/one.json" runtime) == single-threaded ]] || fail "/bin/true reported as $(field "$scratch/one.json" runtime)"

# Threads: monitored; exits are counted apart from decisions.
"$corral" run --load-after-contended 0 --report "$scratch/many.json" -- "$scratch/threads" >/dev/null 2>"$scratch/many.err"
python3 - "$scratch/many.json" "$scratch/many.err" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
assert r["runtime"] == "monitored", r["runtime"]
decisions = sum(e["event"] == "decision" for e in r["decisions"])
exits = sum(e["event"] == "exited" for e in r["decisions"])
assert r["events_left_out"] == 0
assert r["decision_count"] == decisions, (r["decision_count"], decisions)
assert r["exit_count"] == exits and exits >= 6, (r["exit_count"], exits)
said = int(re.search(r"(\d+) decisions", open(sys.argv[2]).read()).group(1))
assert said == decisions, f"summary says {said} decisions, the log has {decisions} (and {exits} exits)"
PY
echo "static: no-stats; setuid checked: $setuid_checked; /bin/true: not loaded by default, single-threaded loaded at once; exits apart from decisions"
