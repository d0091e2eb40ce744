#!/usr/bin/env bash
# Builds Debian's sysbench (1.0.20+ds-5, the version bookworm ships) with
# `-O2 -g`, unstripped, so that the lock profile of
#   corral run --top-locks 5 -- OUT_DIR/sysbench mutex ...
# names the caller by function and file:line where Debian's stripped
# /usr/bin/sysbench reads `sysbench+0xOFFSET`.
#
#   scripts/sysbench-with-symbols.sh [OUT_DIR]     (default target/sysbench-symbols)
#
# Prints the binary's path (OUT_DIR/sysbench) on stdout, progress on stderr.
# Steps: apt-installs the build dependencies (as root), downloads the Debian
# source (.dsc, orig tarball, debian tarball; checked against the .dsc's
# SHA-256), applies debian/patches/series with `patch`, configures without
# the MySQL and PostgreSQL drivers against the system LuaJIT and
# ConcurrencyKit, and builds. A finished build is reused.
#
# SYSBENCH_SRC_DIR=DIR builds from a sysbench 1.0.20 source tree instead of
# downloading one (for a network that serves Debian's binary packages but
# not its source pool).
#
# Needs the network, so neither CI nor scripts/test.sh runs it.
set -euo pipefail

readonly VERSION=1.0.20+ds-5
readonly POOL=http://deb.debian.org/debian/pool/main/s/sysbench
readonly ORIG=sysbench_1.0.20+ds.orig.tar.gz
readonly ORIG_SHA256=9a2d8f1b7474d7956ec6ca69301ed0e4f916295d2d7d400f0622caf8c0c34da7
readonly DEBIAN=sysbench_${VERSION}.debian.tar.xz
readonly DEBIAN_SHA256=8cb0d256660470e90bde6fcb5706bd9a44b7035e9e24d20fa8b065b5fd7cca9e
readonly DEPS=(gcc make autoconf automake libtool pkg-config patch curl ca-certificates
    xz-utils libluajit2-5.1-dev libck-dev libaio-dev)

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/sysbench-symbols}
step=start
log=

say() { echo "sysbench-with-symbols: $*" >&2; }
die() {
    say "step '$step' failed: $*"
    exit 1
}
# A command that fails names its step and shows the end of its log.
on_err() {
    local rc=$?
    say "step '$step' failed (exit $rc)"
    if [[ -n $log && -s $log ]]; then
        say "last lines of $log:"
        tail -n 20 "$log" >&2
    fi
    exit "$rc"
}
trap on_err ERR

mkdir -p "$out" || die "cannot create OUT_DIR '$out'"
out=$(cd "$out" && pwd)
bin=$out/sysbench
stamp=$out/.built
source_id=debian:$VERSION
if [[ -n ${SYSBENCH_SRC_DIR:-} ]]; then
    step="check SYSBENCH_SRC_DIR"
    [[ -f $SYSBENCH_SRC_DIR/configure.ac && -f $SYSBENCH_SRC_DIR/src/tests/mutex/sb_mutex.c ]] ||
        die "SYSBENCH_SRC_DIR='$SYSBENCH_SRC_DIR' is not a sysbench source tree (no configure.ac or src/tests/mutex/sb_mutex.c)"
    SYSBENCH_SRC_DIR=$(cd "$SYSBENCH_SRC_DIR" && pwd)
    source_id=dir:$SYSBENCH_SRC_DIR
fi

# Reuse: the stamp names the source of the binary beside it.
if [[ -x $bin && -f $stamp && $(cat "$stamp") == "$source_id" ]]; then
    say "reusing $bin (built from $source_id; remove $stamp to rebuild)"
    echo "$bin"
    exit 0
fi
rm -f "$stamp"

step="install build dependencies"
missing=()
for p in "${DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    [[ $(id -u) -eq 0 ]] || die "missing ${missing[*]} and not root to apt-get install them"
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get"
    say "apt-get install ${missing[*]}"
    log=$out/apt.log
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >"$log" 2>&1
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1
fi

src=$out/src
rm -rf "$src"
mkdir -p "$src"
if [[ -n ${SYSBENCH_SRC_DIR:-} ]]; then
    step="copy SYSBENCH_SRC_DIR"
    cp -a "$SYSBENCH_SRC_DIR/." "$src/"
else
    dl=$out/download
    mkdir -p "$dl"
    for f in "$ORIG:$ORIG_SHA256" "$DEBIAN:$DEBIAN_SHA256"; do
        name=${f%%:*}
        sum=${f##*:}
        step="download $name"
        if ! echo "$sum  $dl/$name" | sha256sum -c --status 2>/dev/null; then
            say "downloading $POOL/$name"
            code=$(curl -sSL -o "$dl/$name.part" -w '%{http_code}' "$POOL/$name") ||
                die "curl could not fetch $POOL/$name"
            if [[ $code != 200 ]]; then
                rm -f "$dl/$name.part"
                die "$POOL/$name answered HTTP $code (a network may serve Debian's binary packages but not its source pool: give a sysbench 1.0.20 tree with SYSBENCH_SRC_DIR=DIR)"
            fi
            mv "$dl/$name.part" "$dl/$name"
        fi
        step="verify $name"
        echo "$sum  $dl/$name" | sha256sum -c --status ||
            die "$dl/$name does not match the SHA-256 in sysbench_$VERSION.dsc ($sum)"
    done
    step="unpack the sources"
    tar -xzf "$dl/$ORIG" -C "$src" --strip-components=1
    tar -xJf "$dl/$DEBIAN" -C "$src"
    step="apply debian/patches"
    log=$out/patch.log
    : >"$log"
    if [[ -f $src/debian/patches/series ]]; then
        # series lines: a patch name, optionally its -pN; '#' starts a comment.
        while read -r name level _; do
            [[ -z $name || $name == \#* ]] && continue
            step="apply debian/patches/$name"
            patch -d "$src" "${level:--p1}" --batch --forward -i "debian/patches/$name" >>"$log" 2>&1
        done <"$src/debian/patches/series"
    fi
fi

step="autogen"
# sysbench appends `git rev-parse` of an enclosing repository to its version.
export GIT_CEILING_DIRECTORIES=$out
log=$out/build.log
cd "$src"
./autogen.sh >"$log" 2>&1
step="configure"
# -O2 -g come after the configure's own flags, so they win.
./configure CFLAGS="-O2 -g" --without-mysql --without-pgsql \
    --with-system-luajit --with-system-ck >>"$log" 2>&1
step="make"
make -j"$(nproc)" >>"$log" 2>&1
step="check the binary"
[[ -x src/sysbench ]] || die "make left no src/sysbench (see $log)"
readelf -S src/sysbench | grep -q '\.debug_info' || die "src/sysbench has no .debug_info (see $log)"
readelf -S src/sysbench | grep -q '\.symtab' || die "src/sysbench has no .symtab (stripped?)"
src/sysbench --version >/dev/null || die "src/sysbench does not run"
cp src/sysbench "$bin"
echo "$source_id" >"$stamp"
say "built $bin ($("$bin" --version), from $source_id)"
echo "$bin"
