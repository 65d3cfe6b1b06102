#!/usr/bin/env bash
# Realm Crafter's own libbz2w.dll (from a RydeTec/rcce2 clone, under Wine) decompresses the
# files the update host serves, as the client does after a download
# (`bz2(1, 0, "Temp.dat", "Temp2.dat")`), and each must equal its original.
#
#   tools/bvm-oracle/bz2-check.sh RCCE2_GIT_DIR CLIENT_DATA_DIR
#
# Builds the update files of CLIENT_DATA_DIR with `rccontent build-updates` (debug build),
# then checks every one. Needs wine32 and gcc-mingw-w64-i686 (see run.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -eq 2 ] || { sed -n 2,9p "$0"; exit 2; }
REPO=$1; DATA=$(cd "$2" && pwd)
WORK=${BVM_ORACLE_DIR:-${TMPDIR:-/tmp}/bvm-oracle}/bz2
rm -rf "$WORK"; mkdir -p "$WORK"
git -C "$REPO" show HEAD:bin/libbz2w.dll >"$WORK/libbz2w.dll"
i686-w64-mingw32-gcc -O1 -o "$WORK/bzcheck.exe" "$HERE/bzcheck.c"
"${CARGO_TARGET_DIR:-$ROOT/target}/debug/rccontent" build-updates "$DATA" "$WORK/out" >/dev/null
cd "$WORK"
export WINEDEBUG=-all
# Every file Files.dat lists (`Data\...`), by the name the update host serves it under
# (`\` as `!!`, each space as `!!!`, upper-cased, plus `.DAT`), against its original.
python3 - "$DATA" <<'PY' >list.txt
import struct, sys
b = open("out/Files.dat", "rb").read()
i = 0
while i + 4 <= len(b):
    (n,) = struct.unpack_from("<I", b, i)
    name = b[i + 4 : i + 4 + n].decode("latin-1")
    i += 4 + n + 4
    served = name.replace("\\", "!!").replace(" ", "!!!").upper() + ".DAT"
    rel = name.split("\\", 1)[1].replace("\\", "/")
    print(served + "\t" + sys.argv[1] + "/" + rel)
PY
fail=0 n=0
while IFS=$'\t' read -r served orig; do
    cp "out/$served" Temp.dat
    rm -f Temp2.dat
    wine bzcheck.exe Temp.dat Temp2.dat >/dev/null 2>&1 || true
    n=$((n + 1))
    if cmp -s Temp2.dat "$orig"; then echo "same  $orig"; else echo "DIFF  $orig"; fail=1; fi
done <list.txt
echo "$n files checked with libbz2w.dll: $([ $fail = 0 ] && echo 'all equal' || echo 'DIFFERENCES')"
exit $fail
