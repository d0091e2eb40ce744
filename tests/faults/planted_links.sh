#!/usr/bin/env bash
# Security (issue 15, case 10; issue 46, row 5): corral runs as root in a
# world-writable /dev/shm. A link or a foreign directory planted where
# corral once wrote (its private directory /dev/shm/corral-<euid>, the
# stats and log files in it) changes nothing: the program's stats are in
# a region corral run lends it, so the run keeps them, nothing outside
# corral's own files changes, and PROG's status passes through.
#   planted_links.sh CORRAL SCRATCH
set -euo pipefail
corral=$1
scratch=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=/dev/shm/corral-$(id -u)
saved=$dir.saved.$$
restore() {
    rm -rf "$dir" 2>/dev/null || rm -f "$dir"
    if [[ -e $saved ]]; then mv "$saved" "$dir"; fi
}
trap restore EXIT

cat >"$scratch/threads.c" <<'C'
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *a) { for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&m); pthread_mutex_unlock(&m); } return a; }
int main(void) { pthread_t t[4]; for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, work, 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0); return 3; }
C
cc -O2 -pthread -o "$scratch/threads" "$scratch/threads.c"

victim=$scratch/victim
mkdir -p "$victim"
echo "precious" >"$victim/file"
snapshot() { (cd "$victim" && find . -printf '%p %s %T@\n' | sort; cat file); }
before=$(snapshot)

# Runs PROG under corral; wants PROG's status 3 and its stats (the
# summary counts its threads) whatever was planted.
check() {
    local what=$1
    set +e
    "$corral" run --load-after-contended 0 -- "$scratch/threads" >"$scratch/out" 2>"$scratch/err"
    local rc=$?
    set -e
    [[ $rc == 3 ]] || fail "$what: exit $rc, want PROG's 3; stderr: $(cat "$scratch/err")"
    grep -q "threads locked" "$scratch/err" ||
        fail "$what: the run lost its stats: $(cat "$scratch/err")"
    [[ $(snapshot) == "$before" ]] || fail "$what: the link's target changed"
}

[[ -e $dir ]] && mv "$dir" "$saved"

# 1. The private directory is a link to someone else's directory.
ln -s "$victim" "$dir"
check "directory link"
rm -f "$dir"

# 2. The private directory exists, made by another user, open to all.
if id nobody >/dev/null 2>&1; then
    mkdir -m 0777 "$dir"
    chown nobody "$dir"
    check "foreign directory"
    [[ -z $(ls -A "$dir") ]] || fail "foreign directory: corral wrote into it: $(ls -A "$dir")"
    rm -rf "$dir"
fi

# 3. Links at the stats and log names of the next pids, inside a real
#    private directory (as a process of the same user could leave them).
mkdir -m 0700 "$dir"
# One process plants them all, so that corral's pid and PROG's follow.
python3 - "$dir" "$victim/file" <<'PY'
import os, sys
d, target = sys.argv[1], sys.argv[2]
last = int(open("/proc/sys/kernel/ns_last_pid").read())
for pid in range(last + 1, last + 400):
    os.symlink(target, f"{d}/stats.{pid}")
    os.symlink(target, f"{d}/events.{pid}.jsonl")
PY
check "file links"
echo "directory link, foreign directory, file links at the next 400 pids: stats kept, target unchanged, PROG's status passed through"
