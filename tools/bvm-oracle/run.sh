#!/usr/bin/env bash
# BriskVM as an oracle: compile (and run) RSL scripts with Realm Crafter's own briskvm.dll
# under Wine, to settle what the language does (docs/scripting.md, "Checked against
# BriskVM itself"). Nothing here is part of the build or the tests.
#
#   tools/bvm-oracle/run.sh RCCE2_GIT_DIR check FILE.rsl...   compile each, print OK / ERR
#   tools/bvm-oracle/run.sh RCCE2_GIT_DIR run FILE.rsl [PARAM...]
#       compile and run its Main(); prints OUT [...] for Output and LOG [...] for ScriptLog
#       (Parameter(n) gives PARAM n; Actor() is 7; a command the harness lacks stops it)
#
# RCCE2_GIT_DIR: a clone (or bare mirror) of RydeTec/rcce2. Needs wine32 and
# gcc-mingw-w64-i686 (Debian: dpkg --add-architecture i386; apt-get install wine
# wine32:i386 gcc-mingw-w64-i686).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { sed -n 2,12p "$0"; exit 2; }
REPO=$1; MODE=$2; shift 2
WORK=${BVM_ORACLE_DIR:-${TMPDIR:-/tmp}/bvm-oracle}
mkdir -p "$WORK"
git -C "$REPO" show HEAD:bin/briskvm.dll >"$WORK/briskvm.dll"
git -C "$REPO" show HEAD:src/Modules/RC_Standard_Invoker.bb >"$WORK/invoker.bb"
python3 "$HERE/extract-command-set.py" "$WORK/invoker.bb" >"$WORK/rc_cmdset.txt"
for t in bvmc bvmr; do
    [ "$WORK/$t.exe" -nt "$HERE/$t.c" ] || i686-w64-mingw32-gcc -O1 -o "$WORK/$t.exe" "$HERE/$t.c"
done
files=()
for f in "$@"; do
    if [ -f "$f" ]; then files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); else files+=("$f"); fi
done
cd "$WORK"
export WINEDEBUG=-all
case $MODE in
    check) wine bvmc.exe rc_cmdset.txt "${files[@]}" 2>/dev/null ;;
    run) wine bvmr.exe rc_cmdset.txt "${files[@]}" 2>/dev/null ;;
    *) echo "mode: check or run" >&2; exit 2 ;;
esac
