#!/usr/bin/env bash
# Fault 26: libcorral_shim.so preloaded with a CORRAL_SHIM_TARGET that is
# not corral's full library. An empty value made dlopen return the program
# itself, whose pthread_mutex_lock is the shim's own: every lock call then
# jumped to itself for ever (the program spun at 100% CPU). The shim
# itself, another copy of it, a library without corral's functions, or one
# whose pthread functions are found in the shim must leave the program on
# glibc's locks, with its result and exit status. Preloaded by hand, the
# shim writes nothing on the program's descriptors (issue 46: its fd 2 may
# be any file); under corral run, its line reaches corral's stderr.
# Usage: shim_target.sh CORRAL SCRATCH
set -uo pipefail
corral=$1
scratch=$2
shim=$(dirname "$corral")/libcorral_shim.so
fail=0

cat >"$scratch/locker.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long n;
static void *work(void *a) {
    (void)a;
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&m); n++; pthread_mutex_unlock(&m); }
    return 0;
}
int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("%ld\n", n);
    return 7;
}
C
cc -O2 -pthread -o "$scratch/locker" "$scratch/locker.c" || exit 1
cp "$shim" "$scratch/copy-of-shim.so"
# Has corral's ops but no pthread functions: its own look-ups of them find
# the shim it depends on.
cat >"$scratch/leans-on-shim.c" <<'C'
#include <string.h>
void corral_preload_mutex_ops(void *out) { memset(out, 0, 3 * sizeof(void *)); }
C
cc -shared -fPIC -o "$scratch/leans-on-shim.so" "$scratch/leans-on-shim.c" \
    -L"$(dirname "$shim")" -Wl,--no-as-needed -l:libcorral_shim.so -Wl,-rpath,"$(dirname "$shim")" || exit 1

# name, target, whether a line must say that the target is not loaded
while IFS='|' read -r name target says; do
    LD_PRELOAD=$shim CORRAL_SHIM_TARGET=$target timeout 20 "$scratch/locker" \
        >"$scratch/out" 2>"$scratch/err"
    rc=$?
    if [[ $rc == 124 ]]; then
        echo "FAIL shim_target: $name: still running after 20 s (a lock call that never returns)"
        fail=1
        continue
    fi
    if [[ $rc != 7 || $(cat "$scratch/out") != 400000 ]]; then
        echo "FAIL shim_target: $name: exit $rc, printed '$(cat "$scratch/out")' (want 7 and 400000)"
        fail=1
    fi
    if grep -q "corral" "$scratch/err"; then
        echo "FAIL shim_target: $name: corral wrote on the program's fd 2: $(head -c 300 "$scratch/err")"
        fail=1
    fi
    # Under corral run (the target beside a copy of the shim), the line
    # says it, on corral's own stderr.
    if [[ $says == yes && -e $target ]]; then
        rm -rf "$scratch/beside"
        mkdir "$scratch/beside"
        cp "$shim" "$scratch/beside/libcorral_shim.so"
        cp "$target" "$scratch/beside/libcorral_preload.so"
        CORRAL_PRELOAD=$scratch/beside/libcorral_preload.so timeout 20 "$corral" run \
            --load-after-contended 0 -- "$scratch/locker" >"$scratch/out" 2>"$scratch/err"
        rc=$?
        if [[ $rc != 7 ]] || ! grep -q "runs on glibc's locks" "$scratch/err"; then
            echo "FAIL shim_target: $name under corral run: exit $rc, no line says the program runs on glibc's locks: $(head -c 300 "$scratch/err")"
            fail=1
        fi
    fi
done <<EOF
empty||no
the shim itself|$shim|yes
a copy of the shim|$scratch/copy-of-shim.so|yes
a library without corral's functions|libm.so.6|yes
a file that is not there|$scratch/none.so|yes
a library whose pthread functions are the shim's|$scratch/leans-on-shim.so|no
EOF
[[ $fail == 0 ]] && echo "empty, the shim itself, a copy of it, libm, no file, a library leaning on the shim: glibc's locks, result and status kept, nothing on the program's fd 2; under corral run the line on corral's stderr"
exit $fail
