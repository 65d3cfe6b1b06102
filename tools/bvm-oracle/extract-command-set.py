#!/usr/bin/env python3
"""Print Realm Crafter's BriskVM command set (the text RC_Standard_Invoker.bb builds in
BVM_InitStringConst_BVM_MAIN_CMD_SET_DEF_) from that file: `extract-command-set.py
RC_Standard_Invoker.bb > rc_cmdset.txt`."""
import re
import sys

lines = open(sys.argv[1], encoding="latin-1").read().split("\n")
out = []
inside = False
for line in lines:
    t = line.strip()
    if t.startswith("Function BVM_InitStringConst_BVM_MAIN_CMD_SET_DEF_"):
        inside = True
        continue
    if inside and t.startswith("End Function"):
        break
    if not inside:
        continue
    if t.startswith("s = s + "):
        expr = t[len("s = s + "):]
    elif t.startswith("s = "):
        expr = t[len("s = "):]
    else:
        continue
    for lit, ch in re.findall(r'"([^"]*)"|Chr\((\d+)\)', expr):
        out.append(lit if ch == "" else chr(int(ch)))
sys.stdout.write("".join(out))
