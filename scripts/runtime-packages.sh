#!/bin/sh
# Prints the Debian packages that hold the shared libraries the given binaries
# link (as ldd resolves them here), one per line: the image's runtime stage
# installs exactly these, so a new link dependency can never be forgotten.
# Fails, naming the library, when ldd cannot resolve one or no package owns it.
set -eu
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
libs=$(for b in "$@"; do
    [ -e "$b" ] || { echo "runtime-packages: $b does not exist" >&2; exit 1; }
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
