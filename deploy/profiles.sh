#!/usr/bin/env bash
# The two position profiles side by side (issue 22): for each broadcast rate, one
# deploy/load.sh run with `swarm --profile rc` and one with `--profile compact`, same bots,
# same input rate; prints one Markdown table row per run (and the raw JSON lines to
# $TMPDIR/rc-profiles.jsonl). Bytes are what quinn counted on the bots' sockets (UDP payload:
# QUIC headers, AEAD tags and ACK-only packets included), and the same plus 28 bytes of IPv4
# and UDP header per datagram. "in view" is updates received per bot per broadcast;
# "refused" is datagrams the bots dropped (malformed, or refused by the compact decoder).
# Build first: cargo build --release -p gateway -p zone-node -p client
# PROFILES="compact rc" runs them in the other order (to check that the order does not bias CPU);
# swarm paces compact bots' updates to the broadcasts (docs/protocol.md "Pacing input") and
# not rc/1 bots' (Realm Crafter's client does not); PROFILE+paced and PROFILE+unpaced force
# it (`swarm --input-pacing on|off`), e.g. PROFILES="rc+paced compact compact+unpaced".
# usage: [HZ="5 10 20"] [INPUT_HZ=10] [PROFILES="rc compact"] [SWARM_EXTRA="..."] [STANDALONE=1] deploy/profiles.sh BOTS [RAMP] [DURATION]
set -u
N=${1:?usage: deploy/profiles.sh BOTS [RAMP] [DURATION]}; RAMP=${2:-10}; DUR=${3:-45}
HZS=${HZ:-5 10 20}; IN=${INPUT_HZ:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${TMPDIR:-/tmp}/rc-profiles.jsonl; : > "$OUT"
echo "| broadcast | profile | bots in game | in view | down B/s per bot | with IP+UDP headers | up B/s | down packets/s | gateway cores | zone node cores | move → own update p99 | refused |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for hz in $HZS; do
  bc=$((1000 / hz))
  for entry in ${PROFILES:-rc compact}; do
    p=${entry%+*}; pace=
    case $entry in *+paced) pace="--input-pacing on" ;; *+unpaced) pace="--input-pacing off" ;; esac
    line=$(SWARM_ARGS="--profile $p $pace --input-hz $IN --portal-chance 0 ${SWARM_EXTRA:-}" bash "$ROOT/deploy/load.sh" "$N" "$RAMP" "$DUR" "$bc" | tail -1)
    echo "$line" >> "$OUT"
    python3 - "$hz" "$entry" "$line" <<'PY'
import json, sys
hz, p, line = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    d = json.loads(line)
except ValueError:
    print(f"| {hz} Hz | {p} | run failed: {line[:80]} |"); sys.exit()
b = d["bytes_per_s_per_bot"]; r = d.get("compact_refused") or {}
print(f"| {hz} Hz | {p} | {d['in_game']} | {d['updates_per_s_per_bot']/hz:.0f} | {b['down']:.0f} | {b['down_with_ip_udp_headers']:.0f} | {b['up']:.0f} | {d['packets_per_s_per_bot']['down']} | {d['gateway_cores']} | {d['node_cores']} | {d['move_to_own_update']['p99_ms']:.0f} ms | {d.get('datagrams_dropped', 0)} |")
PY
  done
done
