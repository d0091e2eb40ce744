#!/usr/bin/env bash
# Issue 46, rows 1, 3 and 5: the program's stats live in a region `corral
# run` makes and lends (a memory file, its room reserved at start), never
# in a shared directory; what corral's library says reaches corral's
# stderr, never a descriptor of the program's.
#  - /dev/shm full: the program's threads died of SIGBUS writing the
#    mapped stats file (rc 135);
#  - another user's /dev/shm/corral-<uid>: runs went without stats, and
#    the refusal was written on the program's fd 2, which a program that
#    closed 0-2 had opened on its own data file;
#  - a file-size limit (`ulimit -f`): the program died of SIGXFSZ.
# Every --lock, both policies. Needs root for the mount namespace (the
# ulimit case runs anywhere).
# Usage: stats_region.sh CORRAL SCRATCH
set -uo pipefail
corral=$1
scratch=$2
fail=0

cat >"$scratch/own_fds.c" <<'C'
// Closes 0-2 and opens its data files on them, then contends (after a
// contended hand-off: a load deferred to one comes mid-run, after the
// reopening).
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long n;
static void *work(void *a) {
    for (int i = 0; i < 200000; i++) {
        pthread_mutex_lock(&m);
        n++;
        pthread_mutex_unlock(&m);
    }
    return a;
}
int main(int argc, char **argv) {
    char path[4096];
    if (argc < 2)
        return 2;
    close(0);
    close(1);
    close(2);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s.%d", argv[1], i);
        if (open(path, O_RDWR | O_CREAT | O_TRUNC, 0600) != i)
            return 10 + i;
    }
    pthread_t t[6];
    // Held while the threads start: they sleep on it, so its release is a
    // contended hand-off (the deferred load comes then at the latest).
    pthread_mutex_lock(&m);
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], 0, work, 0);
    usleep(20000);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], 0);
    for (int i = 0; i < 3; i++)
        if (write(i, "data\n", 5) != 5)
            return 20 + i;
    return n == 6 * 200000 ? 0 : 3;
}
C
cc -O2 -Wall -Werror -pthread -o "$scratch/own_fds" "$scratch/own_fds.c" || exit 1

# The data files hold the program's bytes and nothing else.
data_intact() { # label
    local i
    for i in 0 1 2; do
        if [[ $(cat "$scratch/data.$i" 2>/dev/null) != data ]]; then
            echo "FAIL stats_region: $1: the program's fd $i file holds: $(head -c 300 "$scratch/data.$i" 2>/dev/null)"
            fail=1
        fi
    done
}

# A file-size limit refuses the region: one line, and PROG runs.
out=$(bash -c 'ulimit -f 1; exec "$@"' _ "$corral" run --lock futex -- "$scratch/own_fds" "$scratch/data" 2>&1)
rc=$?
if [[ $rc != 0 || $out != *"cannot reserve the stats region"* ]]; then
    echo "FAIL stats_region: ulimit -f 1: want exit 0 and the region refused in one line, got $rc: $out"
    fail=1
fi
data_intact "ulimit -f 1"

if [[ $(id -u) != 0 ]] || ! unshare -m true 2>/dev/null; then
    [[ $fail == 0 ]] && echo "skipped: not root (no mount namespace); the file-size limit passed"
    exit $fail
fi

# In a mount namespace of its own: a full /dev/shm, or another user's
# corral-<uid> directory there. Each lock loaded at the first call, and
# the parking ones also at the first contended hand-off (after the program
# has reopened 0-2 on its data files).
runs=0
for shm in full planted; do
    for lock in tas ttas ticket ticket-backoff mcs clh k42 futex adaptive; do
        loads="0"
        [[ $lock == futex || $lock == adaptive ]] && loads="0 1"
        for load in $loads; do
            for policy in none lca; do
                label="$shm /dev/shm, --lock $lock --policy $policy --load-after-contended $load"
                out=$(unshare -m bash -c '
                    set -e
                    mount -t tmpfs -o size=8k,mode=1777 tmpfs /dev/shm
                    if [[ $1 == planted ]]; then
                        mkdir /dev/shm/corral-$(id -u)
                        chown 65534 /dev/shm/corral-$(id -u)
                    else
                        dd if=/dev/zero of=/dev/shm/fill bs=1k count=100 2>/dev/null || true
                    fi
                    shift
                    exec "$@"' _ "$shm" "$corral" run --lock "$lock" --policy "$policy" \
                    --load-after-contended "$load" --report "$scratch/report.json" \
                    -- "$scratch/own_fds" "$scratch/data" 2>&1)
                rc=$?
                runs=$((runs + 1))
                if [[ $rc != 0 ]]; then
                    echo "FAIL stats_region: $label: exit $rc: $out"
                    fail=1
                    continue
                fi
                data_intact "$label"
                if [[ $out == *refusing* ]]; then
                    echo "FAIL stats_region: $label: a planted directory still matters: $out"
                    fail=1
                fi
                if ! grep -q '"tid"' "$scratch/report.json"; then
                    echo "FAIL stats_region: $label: no threads in the report: $out"
                    fail=1
                fi
            done
        done
    done
done

# Something said inside the program (policy ca,csf says whether the
# kernel grants the slice extension) reaches corral's stderr.
out=$("$corral" run --policy ca,csf --load-after-contended 0 -- "$scratch/own_fds" "$scratch/data" 2>&1)
rc=$?
data_intact "--policy ca,csf"
if [[ $rc != 0 ]]; then
    echo "FAIL stats_region: --policy ca,csf: exit $rc: $out"
    fail=1
fi
said="nothing said by the library"
[[ $out == *"csf:"* ]] && said="the library's csf line on corral's stderr"

[[ $fail == 0 ]] && echo "full /dev/shm, or a planted corral dir there: $runs runs (every lock, both policies, loaded at once and mid-run) exit 0 with stats, data files untouched; ulimit -f: one line, exit 0; $said"
exit $fail
