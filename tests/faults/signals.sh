#!/usr/bin/env bash
# Faults 9 and 13: `corral run` passes signals and exit status through.
#  - a program killed by a signal makes corral die of the same signal
#    (a shell, systemd or docker then sees what it would see without corral);
#  - SIGTERM/SIGINT sent to corral reach the program and end both the same way;
#  - kill -9 of corral takes the program with it, and leaves no file
#    behind.
# Usage: signals.sh CORRAL SCRATCH
set -uo pipefail
corral=$1
scratch=$2
# How a command ended, as "exit N" or "signal N" (perl-base is essential on Debian).
ended() { perl -e 'system(@ARGV); my $s = $?; print $s & 127 ? "signal " . ($s & 127) : "exit " . ($s >> 8)' -- "$@"; }
fail=0
check() { # name want got
    if [[ $2 != "$3" ]]; then echo "FAIL signals: $1: want '$2', got '$3'"; fail=1; fi
}

for sig in TERM INT SEGV; do
    plain=$(ended sh -c "kill -$sig \$\$")
    under=$(ended "$corral" run --quiet -- sh -c "kill -$sig \$\$")
    check "program killed by SIG$sig" "$plain" "$under"
done
check "exit status" "exit 7" "$(ended "$corral" run --quiet -- sh -c 'exit 7')"

# A signal sent to corral is forwarded; both end as the program would.
for sig in TERM HUP USR1; do
    perl -e '
        my ($sig, @cmd) = @ARGV;
        my $pid = fork // die;
        if (!$pid) { exec @cmd or die }
        select(undef, undef, undef, 0.5);  # the program is running
        kill $sig, $pid;
        waitpid $pid, 0;
        my $s = $?;
        print $s & 127 ? "signal " . ($s & 127) : "exit " . ($s >> 8);
    ' -- "$sig" "$corral" run --quiet -- sleep 30 >"$scratch/got" &
    waiter=$!
    timeout 10 tail --pid=$waiter -f /dev/null
    got=$(cat "$scratch/got")
    check "SIG$sig to corral" "signal $(kill -l "$sig")" "$got"
done

# kill -9 of corral: the program dies with it (as it would if it had been
# killed itself).
"$corral" run --quiet -- sleep 30 &
victim=$!
disown $victim  # no job-control notice when it is killed
sleep 0.5
prog=$(pgrep -P $victim sleep)
kill -9 $victim

sleep 0.3
# A zombie is dead (a container's init may be slow to reap it).
if [[ -n $prog ]] && [[ $(ps -o stat= -p "$prog") != Z* ]] && kill -0 "$prog" 2>/dev/null; then
    echo "FAIL signals: the program outlived corral's kill -9"
    kill -9 "$prog"
    fail=1
fi
# The killed run left no file behind (its stats were in memory it lent).
stale=$(find "/dev/shm/corral-$(id -u)" -maxdepth 1 \( -name "stats.$prog" -o -name "events.$victim.*" \) 2>/dev/null | wc -l)
check "files of the killed run" "0" "$stale"
[[ $fail == 0 ]] && echo "signals passed through; exit status, forwarding, kill -9 leaves nothing behind"
exit $fail
