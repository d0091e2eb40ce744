#!/usr/bin/env bash
# Issue 46 row 6: the program dies with `corral run` without a
# parent-death signal of its own (tests/faults/pdeathsig_unset.c checks it
# sees none). corral's watcher process kills it instead:
#  - kill -9 of corral while the program runs ends the program (a dynamic
#    one, which loads corral's library, and a static one, which does not),
#    and the watcher, within a short bound;
#  - kill -9 of corral at any moment of the start (before, while and after
#    the program execs) leaves nothing of the run behind;
#  - a normal run leaves no watcher; while it ran, the watcher was in a
#    process group of its own (no terminal signals), held none of corral's
#    or the program's descriptors, and was named so that `pkill corral`
#    and `pkill -f corral` do not reach it.
# Usage: die_with_corral.sh CORRAL SCRATCH
set -uo pipefail
corral=$1
scratch=$2
fail=0
say_fail() { echo "FAIL die_with_corral: $*"; fail=1; }

# Whether pid $1 runs (a zombie is dead: a container's init may be slow to
# reap it).
alive() { [[ -r /proc/$1/stat ]] && ! awk '{ sub(/.*\) /, ""); exit !($1 ~ /^[ZX]/) }' "/proc/$1/stat" 2>/dev/null; }
# Waits up to $2 seconds for pid $1 to end; fails if it does not.
ends_within() {
    local pid=$1 limit=$2 i
    for ((i = 0; i < limit * 20; i++)); do
        alive "$pid" || return 0
        sleep 0.05
    done
    return 1
}
children() { cat "/proc/$1/task/$1/children" 2>/dev/null; }
# The child of corral $1 that runs program $2 (its exec done), waited for.
program_of() {
    local i c
    for ((i = 0; i < 200; i++)); do
        for c in $(children "$1"); do
            [[ $(readlink "/proc/$c/exe" 2>/dev/null) == "$2" ]] && { echo "$c"; return 0; }
        done
        sleep 0.05
    done
    return 1
}

cat >"$scratch/sleeper.c" <<'C'
#include <unistd.h>
int main(void) { for (;;) pause(); }
C
cc -O2 -o "$scratch/sleeper" "$scratch/sleeper.c" || { echo "FAIL die_with_corral: cc"; exit 1; }
programs=("$scratch/sleeper")
kinds="dynamic"
if cc -O2 -static -o "$scratch/sleeper-static" "$scratch/sleeper.c" 2>/dev/null; then
    programs+=("$scratch/sleeper-static")
    kinds="dynamic and static"
else
    echo "skipped the static program: this machine cannot link one (cc -static)"
fi

# kill -9 of corral while the program runs.
for prog in "${programs[@]}"; do
    "$corral" run --quiet -- "$prog" >"$scratch/out" 2>&1 &
    victim=$!
    disown $victim # no job-control notice when it is killed
    kid=$(program_of $victim "$prog") || { say_fail "$prog never started"; kill -9 $victim; continue; }
    others=$(children $victim | tr ' ' '\n' | grep -vx "$kid")
    kill -9 $victim
    if ! ends_within "$kid" 2; then
        say_fail "$(basename "$prog") (pid $kid) outlived corral's kill -9 by 2 s"
        kill -9 "$kid"
    fi
    for w in $others; do
        if ! ends_within "$w" 2; then
            say_fail "corral's other child $w ($(cat /proc/"$w"/comm)) outlived it by 2 s"
            kill -9 "$w"
        fi
    done
done

# kill -9 of corral at every moment of the start: from its first child's
# appearance on (about 0.1 s after corral starts), at spaced delays. Each
# run's program carries a marker in its arguments, found afterwards by
# `pgrep -f`.
marker="die-with-corral-$$-$RANDOM"
first_child() { # waits (busy, up to 10 s) until corral $1 has a child
    local end=$((SECONDS + 10)) line
    while ((SECONDS < end)); do
        line=""
        # (no newline ends the list: read fails, having read it)
        { read -r line <"/proc/$1/task/$1/children"; } 2>/dev/null
        [[ -n $line ]] && return 0
    done
    return 1
}
for prog in "${programs[@]}"; do
    for delay in 0 0 0 0 0.0002 0.0005 0.001 0.001 0.002 0.003 0.005 0.008 0.012 0.02; do
        "$corral" run --quiet -- "$prog" "$marker" >/dev/null 2>&1 &
        victim=$!
        disown $victim
        first_child $victim
        [[ $delay != 0 ]] && sleep $delay
        kill -9 $victim
    done
done
left=""
for ((i = 0; i < 40; i++)); do
    left=""
    for p in $(pgrep -f -- "$marker"); do alive "$p" && left+=" $p"; done
    [[ -z $left ]] && break
    sleep 0.05
done
if [[ -n $left ]]; then
    say_fail "corral killed during the start left running:$(for p in $left; do printf ' %s (%s)' "$p" "$(cat /proc/"$p"/comm 2>/dev/null)"; done)"
    # shellcheck disable=SC2086
    kill -9 $left 2>/dev/null
fi

# A normal run: what its watcher looked like, and that none is left.
"$corral" run --quiet -- sleep 1 </dev/null >"$scratch/normal.out" 2>&1 &
run=$!
kid=$(program_of $run "$(readlink -f "$(command -v sleep)")") || say_fail "sleep never started"
watchers=$(children $run | tr ' ' '\n' | grep -vx "${kid:-none}")
group=$(ps -o pgid= -p $run | tr -d ' ')
[[ $(wc -w <<<"$watchers") == 1 ]] || say_fail "want one watcher beside the program, corral's children: $(children $run)"
for w in $watchers; do
    [[ $(ps -o pgid= -p "$w" | tr -d ' ') != "$group" ]] || say_fail "the watcher $w is in corral's process group"
    tr '\0' ' ' <"/proc/$w/cmdline" | grep -q corral && say_fail "the watcher's command line names corral: $(tr '\0' ' ' <"/proc/$w/cmdline")"
    grep -q corral "/proc/$w/comm" && say_fail "the watcher's name is corral's: $(cat "/proc/$w/comm")"
    for fd in /proc/"$w"/fd/*; do
        case $(readlink "$fd") in
            socket:* | pipe:* | anon_inode:\[pidfd\]) ;;
            *) say_fail "the watcher holds $(readlink "$fd")" ;;
        esac
    done
done
wait $run
rc=$?
[[ $rc == 0 ]] || say_fail "corral run -- sleep 1: exit $rc"
for w in $watchers; do
    alive "$w" && { say_fail "the watcher $w outlived a normal run"; kill -9 "$w"; }
done

[[ $fail == 0 ]] && echo "the program ($kinds) dies with corral's kill -9, at any moment of its start; no watcher outlives a run"
exit $fail
