#!/usr/bin/env bash
# Fault 13: what passes through corral's command line and output as it
# would without corral.
#  - arguments to PROG that are not UTF-8 reach it byte for byte;
#  - a closed pipe on corral's own output ends corral quietly (SIGPIPE or
#    success), never with a panic (SIGABRT, 134).
# Fault 11: a library the user already preloads to interpose pthread locks
# keeps interposing them (corral's library goes after it, not before).
# Fault 5: a configuration the preload rejects (one line) leaves the program
# on corral's locks without a policy: its waiters must park, not spin.
# Usage: passthrough.sh CORRAL SCRATCH
set -uo pipefail
corral=$1
scratch=$2
fail=0
check() { # name want got
    if [[ $2 != "$3" ]]; then echo "FAIL passthrough: $1: want '$2', got '$3'"; fail=1; fi
}

check "non-UTF-8 argument" "ff" "$("$corral" run --quiet -- printf '%s' $'\xff' | od -An -tx1 | tr -d ' ')"

for cmd in "model --a 1000 --s 100 --c 50 --cores 1..1024" "sim --list"; do
    # shellcheck disable=SC2086
    "$corral" $cmd 2>"$scratch/err" | head -c1 >/dev/null
    rc=${PIPESTATUS[0]}
    if [[ $rc != 0 && $rc != 141 ]]; then
        echo "FAIL passthrough: corral $cmd | head: exit $rc"; head -3 "$scratch/err"; fail=1
    fi
done

cat >"$scratch/counter.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
static long calls;
int pthread_mutex_lock(pthread_mutex_t *m) {
    static int (*next)(pthread_mutex_t *);
    if (!next) next = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return next(m);
}
__attribute__((destructor)) static void report(void) { fprintf(stderr, "interposed %ld\n", calls); }
C
cat >"$scratch/locker.c" <<'C'
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int main(void) { for (int i = 0; i < 100; i++) { pthread_mutex_lock(&m); pthread_mutex_unlock(&m); } return 0; }
C
cc -shared -fPIC -O2 -o "$scratch/counter.so" "$scratch/counter.c" -ldl
cc -O2 -pthread -o "$scratch/locker" "$scratch/locker.c"
# corral itself inherits the preload too (and reports 0): the program's line counts.
got=$(LD_PRELOAD="$scratch/counter.so" "$corral" run --quiet -- "$scratch/locker" 2>&1 | grep -o 'interposed [0-9]*' | sort -k2 -n | tail -1)
check "the user's own preload" "interposed 100" "$got"

# 16 threads on one ticket lock, no monitor (its configuration refused).
cat >"$scratch/crowd.c" <<'C'
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long n;
static void *run(void *a) { (void)a; for (int i = 0; i < 20000; i++) { pthread_mutex_lock(&m); for (int k = 0; k < 50; k++) n++; pthread_mutex_unlock(&m); } return 0; }
int main(void) { pthread_t t[16]; for (int i = 0; i < 16; i++) pthread_create(&t[i], 0, run, 0); for (int i = 0; i < 16; i++) pthread_join(t[i], 0); return n != 16L * 20000 * 50; }
C
cc -O2 -pthread -o "$scratch/crowd" "$scratch/crowd.c"
lib=$(dirname "$corral")/libcorral_preload.so
# (set inside, so that `timeout` does not load the library too)
timeout 20 bash -c 'CORRAL_LOCK=ticket CORRAL_SLICE_US=bogus LD_PRELOAD=$0 exec "$1"' "$lib" "$scratch/crowd" 2>"$scratch/err"
check "rejected configuration (exit; timeout is 124)" "0" "$?"
# Preloaded by hand there is no corral run to say it to: nothing is
# written on the program's descriptors (issue 46: its fd 2 may be any file).
check "rejected configuration writes nothing on the program's fd 2" "0" "$(grep -c 'corral' "$scratch/err")"

# A negative number is refused by its flag's own check, not taken for a flag.
"$corral" run --threshold -0.5 -- true 2>"$scratch/err"
check "negative value: exit" "2" "$?"
check "negative value: names its flag" "1" "$(grep -c -- '--threshold' "$scratch/err")"

[[ $fail == 0 ]] && echo "arguments, closed pipes, the user's preload passed through; a rejected configuration parks, silently; negative values checked by their flag"
exit $fail
