#!/usr/bin/env bash
# Load figures: a gateway and one zone node (release build, loopback ports 28000-28080),
# `swarm` with BOTS bots ramped over RAMP seconds for DURATION seconds; prints one JSON line
# with the CPU (cores) of the gateway, the node and the swarm over 30 s of steady state and the
# swarm's figures. SETTLE=S leaves S seconds after the ramp unmeasured (swarm --settle; CPU,
# metrics and the Python client start after it): time for `--spread` bots to reach their
# places. With STANDALONE=1 the cluster is one `gateway --standalone` process
# (its embedded node's CPU is in gateway_cores; node_cores is 0). With INTEROP=PYTHON the
# independent Python client (tests/interop/rc_client.py; PYTHON is an interpreter with aioquic,
# see tests/interop/README.md) plays its whole scripted session alongside the bots, starting
# 5 s after the ramp and SETTLE; its last line is in "interop" and its log in $TMPDIR/rc-load-*/interop.log.
# udp_rcvbuf_errors: datagrams the kernel dropped at full socket buffers during the run
# (machine-wide, /proc/net/snmp), i.e. loss before QUIC on either side.
# udp_packets_per_s_per_bot: UDP datagrams delivered on the machine (both directions, with
# QUIC's ACK-only packets and, in separate mode, the node link) over the CPU window, per bot in game.
# Build first: cargo build --release -p gateway -p zone-node -p client
# CHAT_EVERY=S: each bot says a line of zone chat every S seconds (default 60; 0: none).
# usage: [STANDALONE=1] [GW_TOML='key = value'] [SETTLE=S] [CHAT_EVERY=S] [INTEROP=/tmp/venv/bin/python] [SWARM_ARGS="--spread 2000 ..."] deploy/load.sh BOTS RAMP DURATION [BROADCAST_MS]
set -u
N=$1; RAMP=$2; DUR=$3; BC=${4:-200}; SETTLE=${SETTLE:-0}; CHAT=${CHAT_EVERY:-60}
case "$N$RAMP$DUR$BC$SETTLE$CHAT" in *[!0-9]*) echo "BOTS, RAMP, DURATION, BROADCAST_MS, SETTLE and CHAT_EVERY are whole numbers" >&2; exit 2;; esac
if [ "$DUR" -lt $((SETTLE+40)) ]; then echo "DURATION must be at least SETTLE + 40 s (CPU is sampled over 30 s after the ramp and SETTLE)" >&2; exit 2; fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
R=${R:-$ROOT/target/release}
D=${TMPDIR:-/tmp}/rc-load-$N-$BC; rm -rf "$D"; mkdir -p "$D"
printf 'password_hash = "fast"\nbroadcast_ms = %s\n' "$BC" > $D/gw.toml
# GW_TOML: more lines for the gateway's configuration (e.g. input_budgets, to measure the
# zone's own defences with the gateway's budgets opened wide).
[ -n "${GW_TOML:-}" ] && printf '%s\n' "$GW_TOML" >> $D/gw.toml
export GATEWAY_CLUSTER_SECRET=load-secret-0123456789abcdef0123456789 ZONE_NODE_CLUSTER_SECRET=load-secret-0123456789abcdef0123456789
SA=(); [ "${STANDALONE:-0}" = 1 ] && SA=(--standalone)
$R/gateway "${SA[@]}" --config $D/gw.toml --data-dir $D/data --listen 127.0.0.1:28000 --internal-listen 127.0.0.1:28001 --enet-listen 127.0.0.1:28002 --admin-listen 127.0.0.1:28080 > $D/gw.log 2>&1 &
GW=$!
sleep 1
if [ "${STANDALONE:-0}" = 1 ]; then
  NODE=
else
  ZONE_NODE_GATEWAY_ADDR=127.0.0.1:28001 ZONE_NODE_BROADCAST_MS=$BC ZONE_NODE_ADMIN_LISTEN=127.0.0.1:28081 $R/zone-node run --node-id n1 > $D/n1.log 2>&1 &
  NODE=$!
fi
sleep 2
cpu() { if [ -n "${1:-}" ]; then awk '{print $14+$15}' /proc/$1/stat; else echo 0; fi; }
# The largest resident set of the gateway and the node during the run (kB), every second.
rss() { if [ -n "${1:-}" ] && [ -r /proc/$1/status ]; then awk '/^VmRSS:/{print $2}' /proc/$1/status; else echo 0; fi; }
( gmax=0; nmax=0; while kill -0 $GW 2>/dev/null; do g=$(rss $GW); n=$(rss $NODE); [ "${g:-0}" -gt $gmax ] && gmax=$g; [ "${n:-0}" -gt $nmax ] && nmax=$n; echo "$gmax $nmax" > $D/rss; sleep 1; done ) &
udp_in() { awk '/^Udp:/{getline; print $2; exit}' /proc/net/snmp; }
( sleep $((RAMP+SETTLE+5)); SW=$(pgrep -n -f "$R/swarm --gateway 127.0.0.1:28000"); echo "$(cpu $GW) $(cpu $NODE) $(cpu $SW) $(date +%s.%N) $(udp_in)" > $D/cpu0; sleep 30; echo "$(cpu $GW) $(cpu $NODE) $(cpu $SW) $(date +%s.%N) $(udp_in)" > $D/cpu1 ) &
(sleep $((RAMP+SETTLE+20)); curl -s 127.0.0.1:28080/metrics | grep -E "datagrams" | grep -v "^#" > $D/metrics.txt) &
IP=
if [ -n "${INTEROP:-}" ]; then
  ( sleep $((RAMP+SETTLE+5)); "$INTEROP" "$ROOT/tests/interop/rc_client.py" --port 28000 > $D/interop.log 2>&1; echo "exit $?" >> $D/interop.log ) &
  IP=$!
fi
rcvbuf() { awk '/^Udp:/{getline; print $6; exit}' /proc/net/snmp; }
U0=$(rcvbuf)
$R/swarm --gateway 127.0.0.1:28000 --bots $N --duration $DUR --ramp $RAMP --settle $SETTLE --chat-every $CHAT ${SWARM_ARGS:-} --json > $D/swarm.json 2> $D/swarm.err
SWARM_EXIT=$?
U1=$(rcvbuf)
if [ $SWARM_EXIT -ne 0 ]; then echo "swarm failed (exit $SWARM_EXIT):" >&2; tail -5 $D/swarm.err >&2; kill $NODE $GW 2>/dev/null; exit 1; fi
[ -n "$IP" ] && wait $IP
read g0 n0 s0 t0 p0 < $D/cpu0; read g1 n1 s1 t1 p1 < $D/cpu1
read GRSS NRSS < $D/rss; export GRSS NRSS
TCK=$(getconf CLK_TCK)
python3 - "$g0" "$n0" "$s0" "$t0" "$g1" "$n1" "$s1" "$t1" "$TCK" "$N" "$D" "$((U1-U0))" "$((p1-p0))" <<'PY'
import sys, json, os
g0,n0,s0,t0,g1,n1,s1,t1,tck,n,d,rcvbuf,pkts = sys.argv[1:]
dt=float(t1)-float(t0)
gw=(int(g1)-int(g0))/int(tck)/dt; nd=(int(n1)-int(n0))/int(tck)/dt; sw=(int(s1)-int(s0))/int(tck)/dt
s=json.load(open(d+"/swarm.json"))
interop=None
if os.path.exists(d+"/interop.log"):
    lines=[l.strip() for l in open(d+"/interop.log") if l.strip()]
    interop=" / ".join(lines[-2:]) if lines else "no output"
print(json.dumps({"bots":int(n),"settle_s":s.get("settle_s"),"chat_every_s":int(os.environ.get("CHAT_EVERY","60")),"swarm_args":os.environ.get("SWARM_ARGS",""),"interop":interop,"standalone":os.environ.get("STANDALONE","0")=="1","gateway_cores":round(gw,3),"node_cores":round(nd,3),"swarm_cores":round(sw,3),"udp_rcvbuf_errors":int(rcvbuf),"udp_packets_per_s_per_bot":round(int(pkts)/dt/max(s["in_game"],1),2),
  "in_game":s["in_game"],"failed":s["failed"],"protocol_errors":s["protocol_errors"],"errors":s["errors"],
  "move_to_own_update":s["move_to_own_update"],"own_update_gap":s.get("own_update_gap"),"never_own_update":s.get("never_own_update"),"bytes_per_s_per_bot":s["bytes_per_s_per_bot"],"packets_per_s_per_bot":s.get("packets_per_s_per_bot"),"frames_down_per_s_per_bot":s.get("frames_down_per_s_per_bot"),
  "profile":s.get("profile"),"datagrams_dropped":s.get("datagrams_dropped"),"compact_refused":s.get("compact_refused"),"updates_received":s["updates_received"],"updates_per_s_per_bot":s.get("updates_per_s_per_bot"),"handoffs":s["handoffs"],"npcs_killed":s["npcs_killed"],"items":s.get("items"),"attack":s.get("attack"),"gateway_rss_max_mb":round(int(os.environ.get("GRSS","0"))/1024,1),"node_rss_max_mb":round(int(os.environ.get("NRSS","0"))/1024,1)}))
PY
kill $NODE $GW 2>/dev/null; wait 2>/dev/null
