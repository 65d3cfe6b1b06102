#!/usr/bin/env bash
# The honest bots with and without an attack, side by side (issue 23): two deploy/load.sh
# runs with the same bots, the second with `swarm --attack-yellers Y --attack-guessers G`
# (Y of the bots also /yell with every move; G tasks guess the first bot's password in a
# loop, reconnecting whenever the gateway closes them). Prints one Markdown row per run
# (the raw JSON lines go to $TMPDIR/rc-attack.jsonl).
# All of it runs on this machine's loopback, which the per-network login limits exempt by
# default (limit_loopback = false): what holds the attack here are the per-player chat
# bucket, the password-hash slots and the connection limits; the login limiter itself is
# exercised by tests/tests/cluster/hostile.rs (floods_cost_the_flooder_and_no_honest_bot).
# Build first: cargo build --release -p gateway -p zone-node -p client
# MODES picks the runs (default "quiet attack"); issue 36's floods are the modes `equip`
# (FLOODERS players swapping the starter sword in and out of the weapon slot as fast as
# their stream carries it, logging in again whenever they are disconnected) and `jump`
# (the same with P_Jump), e.g. MODES="quiet equip jump".
# usage: [YELLERS=5] [GUESSERS=20] [FLOODERS=2] [MODES=...] deploy/attack.sh BOTS [RAMP] [DURATION]
set -u
N=${1:?usage: deploy/attack.sh BOTS [RAMP] [DURATION]}; RAMP=${2:-10}; DUR=${3:-50}
Y=${YELLERS:-5}; G=${GUESSERS:-20}; F=${FLOODERS:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${TMPDIR:-/tmp}/rc-attack.jsonl; : > "$OUT"
echo "| run | bots in game | move → own update p50 / p99 | own-update gap p99 | protocol errors | failed | gateway cores | node cores | gateway / node RSS max | yells sent | guesses answered / refused (connections) | flood frames sent (disconnects) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for mode in ${MODES:-quiet attack}; do
  extra=""
  [ "$mode" = attack ] && extra="--attack-yellers $Y --attack-guessers $G"
  [ "$mode" = equip ] && extra="--attack-flooders $F --flood-kind equip"
  [ "$mode" = jump ] && extra="--attack-flooders $F --flood-kind jump"
  line=$(SWARM_ARGS="--input-hz 10 --portal-chance 0 $extra ${SWARM_EXTRA:-}" bash "$ROOT/deploy/load.sh" "$N" "$RAMP" "$DUR" | tail -1)
  echo "$line" >> "$OUT"
  python3 - "$mode" "$line" <<'PY'
import json, sys
mode, line = sys.argv[1], sys.argv[2]
try:
    d = json.loads(line)
except ValueError:
    print(f"| {mode} | run failed: {line[:80]} |"); sys.exit()
m = d["move_to_own_update"]; g = d.get("own_update_gap") or {}; a = d.get("attack") or {}
print(f"| {mode} | {d['in_game']} | {m['p50_ms']:.0f} / {m['p99_ms']:.0f} ms | {g.get('p99_ms', 0):.0f} ms | {d['protocol_errors']} | {d['failed']} | {d['gateway_cores']} | {d['node_cores']} | {d.get('gateway_rss_max_mb', 0)} / {d.get('node_rss_max_mb', 0)} MB | {a.get('yells_sent', 0)} | {a.get('guesses_answered', 0)} / {a.get('guesses_refused', 0)} ({a.get('guess_connections', 0)}) | {a.get('flood_frames', 0):,} ({a.get('flood_disconnects', 0)}) |")
PY
done
