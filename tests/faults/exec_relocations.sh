#!/usr/bin/env bash
# Exec-heavy programs (issue 15, case 12): every program a shell script
# execs under `corral run` loads corral's library, and the dynamic linker
# resolves each symbol it imports from glibc at every exec, before main
# (about a thousand instructions each: most of what a /bin/true costs over
# plain). Counts them (LD_DEBUG=statistics, deterministic for a build) for
# a /bin/true exec'd by a shell under corral against plain, and fails
# above the budget, so that a new import is a decision, not an accident.
#   exec_relocations.sh CORRAL SCRATCH
set -euo pipefail
corral=$1
fail() { echo "FAIL: $*"; exit 1; }
# corral run preloads libcorral_shim.so, which imports three symbols and
# loads the full library (about 100 imports, +102 here when it was the
# preload) only at a process's first pthread lock call: +3 today.
budget=10
count() { awk '/[^l] number of relocations:/ { print $NF; exit }'; }
plain=$(LD_DEBUG=statistics /bin/true 2>&1 | count)
# `; :` keeps the shell from exec'ing /bin/true in its own place: it is
# then a grandchild of corral, as a script's commands are.
under=$("$corral" run --quiet -- sh -c 'LD_DEBUG=statistics /bin/true; :' 2>&1 | count)
[[ -n $plain && -n $under ]] || fail "no LD_DEBUG statistics (plain '$plain', under corral '$under')"
extra=$((under - plain))
((extra > 0)) || fail "no relocations of corral's library counted ($under under corral, $plain plain): is it loaded?"
((extra <= budget)) || fail "an exec under corral resolves $extra more symbols than plain ($under vs $plain), budget $budget"
echo "symbol relocations per exec: plain $plain, under corral $under (+$extra, budget $budget)"
