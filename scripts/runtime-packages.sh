#!/bin/sh
# Prints the Debian packages that hold the shared libraries the given binaries
# link (as ldd resolves them here), one per line: the image's runtime stage
# installs exactly these, so a new link dependency can never be forgotten.
# Fails, naming the library, when ldd cannot resolve one or no package owns it.
# Binaries of another architecture (a cross build: ldd cannot run their loader)
# are read with readelf instead: their NEEDED libraries, found in that
# architecture's multiarch directory, whose -dev packages the build installed;
# apt-get then brings what those link in turn.
set -eu
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
multiarch_dir() {
    machine=$(readelf -h "$1" | sed -n 's/^ *Machine: *//p')
    case "$machine" in
        AArch64) echo aarch64-linux-gnu ;;
        *X86-64) echo x86_64-linux-gnu ;;
        *) echo "runtime-packages: $1: no multiarch directory known for machine '$machine'" >&2; exit 1 ;;
    esac
}
needed_libs() { # $1 binary, $2 its multiarch directory
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r lib; do
        for d in "/usr/lib/$2" "/lib/$2"; do
            if [ -e "$d/$lib" ]; then echo "$d/$lib"; continue 2; fi
        done
        echo "runtime-packages: $1: $lib not found in /usr/lib/$2" >&2
        exit 1
    done
}
native=$(gcc -dumpmachine)
libs=$(for b in "$@"; do
    [ -e "$b" ] || { echo "runtime-packages: $b does not exist" >&2; exit 1; }
    dir=$(multiarch_dir "$b") || exit 1
    if [ "$dir" != "$native" ]; then needed_libs "$b" "$dir" || exit 1; continue; fi
    ldd "$b" | awk -v bin="$b" '
        /not found/ { print "runtime-packages: " bin ": " $1 " not found" > "/dev/stderr"; bad = 1 }
        $2 == "=>" && $3 ~ /^\// { print $3 }
        $1 ~ /^\// { print $1 }
        END { exit bad }'
done | sort -u)
for lib in $libs; do
    # Merged /usr: ldd may say /lib/... where dpkg recorded /usr/lib/... (or the reverse).
    real=$(readlink -f "$lib")
    pkg=""
    for p in "$lib" "$real" "/usr$lib" "${lib#/usr}" "/usr$real" "${real#/usr}"; do
        pkg=$(dpkg-query -S "$p" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || { echo "runtime-packages: no Debian package owns $lib" >&2; exit 1; }
    echo "$pkg"
done | sort -u
