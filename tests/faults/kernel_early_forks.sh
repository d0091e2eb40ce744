#!/usr/bin/env bash
# Fault 13: `corral run --kernel-locks` must track the processes PROG forks
# in its first milliseconds. It used to track PROG only after spawn()
# returned, at the monitor's next 20 ms poll, so early children were never
# measured (a sweep saw 29 of 51 processes). corral's own threads, tracked
# across the spawn so the kernel adds PROG at fork, must never show up.
# Needs BPF (root, lock:contention_* tracepoints): skipped where refused.
# Usage: kernel_early_forks.sh CORRAL SCRATCH
set -uo pipefail
corral=$1
scratch=$2
children=50

# Forks its children at once; each writes its pid and does ~200 ms of
# kernel work (mmap, touch, munmap).
cat >"$scratch/early_forks.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
int main(int argc, char **argv) {
    int n = atoi(argv[2]);
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 1;
    fprintf(out, "prog %d\n", getpid());
    fflush(out);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            double end = now() + 0.2;
            while (now() < end) {
                size_t len = 64 * 1024;
                char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                    _exit(1);
                for (size_t off = 0; off < len; off += 4096)
                    p[off] = 1;
                munmap(p, len);
            }
            _exit(0);
        }
        fprintf(out, "child %d\n", pid);
    }
    fclose(out);
    int status, bad = 0;
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return bad;
}
EOF
cc -O2 -Wall -Werror -o "$scratch/early_forks" "$scratch/early_forks.c" || exit 1

probe=$("$corral" run --quiet --kernel-locks -- true 2>&1)
if [[ $probe == *"kernel locks unavailable"* ]]; then
    echo "skipped: ${probe#error: }"
    exit 0
fi

fail=0
# Checks the report of one run: which of PROG's processes it tracked, and
# that nothing of corral's own process ($corral_pid) is in it.
check() { # label report pids corral_pid follow
    perl -MJSON::PP -e '
        my ($label, $report, $pids, $corral, $follow) = @ARGV;
        local $/;
        open my $r, "<", $report or die "$label: no report: $!\n";
        my $k = decode_json(<$r>)->{kernel} or die "$label: no kernel report\n";
        open my $p, "<", $pids or die "$label: no pid list: $!\n";
        my (%tracked, $prog, @children);
        $tracked{$_} = 1 for @{ $k->{processes} };
        for (split /\n/, <$p>) {
            my ($what, $pid) = split;
            if ($what eq "prog") { $prog = $pid } else { push @children, $pid }
        }
        my @errors;
        push @errors, "PROG $prog not tracked" unless $tracked{$prog};
        my $seen = grep { $tracked{$_} } @children;
        if ($follow) {
            push @errors, "$seen of " . @children . " children tracked" if $seen != @children;
        } else {
            push @errors, "$seen children tracked without following forks" if $seen;
        }
        push @errors, "corral itself ($corral) among the processes" if $tracked{$corral};
        my $own = grep { $_->{tgid} == $corral } @{ $k->{threads} };
        push @errors, "$own of corral'\''s own threads in the report" if $own;
        if (@errors) { print "FAIL kernel_early_forks: $label: ", join("; ", @errors), "\n"; exit 1 }
        printf "%s: %d of %d processes tracked\n", $label, $seen + 1, @children + 1;
    ' -- "$@"
}

for round in 1 2 3; do
    "$corral" run --quiet --kernel-locks --report "$scratch/early.json" -- \
        "$scratch/early_forks" "$scratch/pids" "$children" &
    corral_pid=$!
    wait $corral_pid || { echo "FAIL kernel_early_forks: run $round exited $?"; fail=1; }
    check "following forks, run $round" "$scratch/early.json" "$scratch/pids" "$corral_pid" 1 || fail=1
done
"$corral" run --quiet --kernel-locks --no-follow-forks --report "$scratch/early.json" -- \
    "$scratch/early_forks" "$scratch/pids" "$children" &
corral_pid=$!
wait $corral_pid || { echo "FAIL kernel_early_forks: --no-follow-forks run exited $?"; fail=1; }
check "--no-follow-forks" "$scratch/early.json" "$scratch/pids" "$corral_pid" 0 || fail=1

[[ $fail == 0 ]] && echo "every process PROG forked at once was tracked ($children children, 3 runs); only PROG with --no-follow-forks; corral's own threads never measured"
exit $fail
