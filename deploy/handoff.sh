#!/usr/bin/env bash
# Handoff and node-loss figures (docs/benchmarks.md, "SetArea handoff and node loss"): a
# gateway and two zone nodes (release build, loopback ports 27000-27080).
#  1. 20 DM bots /warp every 0.5 s between Meadow #0 (n1) and Darkwood #1 (n2) for 40 s;
#     prints the swarm's `handoff_to_change_area` (/warp sent → P_ChangeArea) and the
#     gateway's handoff counters.
#  2. 50 bots in Meadow #0 (n1); n1 is SIGKILLed 20 s in; prints `recovered_after_node_loss`
#     (last own update → put back by P_ChangeArea) and the errors.
# Build first: cargo build --release -p gateway -p zone-node -p client
# usage: deploy/handoff.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
R=${R:-$ROOT/target/release}
D=${TMPDIR:-/tmp}/rc-handoff; rm -rf "$D"; mkdir -p "$D"
printf 'password_hash = "fast"\n' > $D/gw.toml
export GATEWAY_CLUSTER_SECRET=mp-secret-0123456789abcdef0123456789 ZONE_NODE_CLUSTER_SECRET=mp-secret-0123456789abcdef0123456789
for i in $(seq 0 19); do echo swarm | $R/gateway account create dm$i --password-stdin --dm --data-dir $D/data > /dev/null; done
$R/gateway --config $D/gw.toml --data-dir $D/data --listen 127.0.0.1:27000 --internal-listen 127.0.0.1:27001 --enet-listen 127.0.0.1:27002 --admin-listen 127.0.0.1:27080 > $D/gw.log 2>&1 &
GW=$!
sleep 1
ZONE_NODE_GATEWAY_ADDR=127.0.0.1:27001 $R/zone-node run --node-id n1 > $D/n1.log 2>&1 &
N1=$!
sleep 2
ZONE_NODE_GATEWAY_ADDR=127.0.0.1:27001 $R/zone-node run --node-id n2 > $D/n2.log 2>&1 &
N2=$!
sleep 2
$R/swarm --gateway 127.0.0.1:27000 --bots 20 --existing --prefix dm --duration 40 --ramp 5 \
    --warp 'Meadow#0,Darkwood#1' --warp-every 0.5 --chat-every 0 --json > $D/warp.json 2> $D/warp.err
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({'handoff_to_change_area': d.get('handoff_to_change_area'), 'errors': d.get('errors')}))" $D/warp.json
curl -s 127.0.0.1:27080/metrics | grep -E "^rc_gateway_handoffs|^rc_gateway_handoff_latency_seconds_(sum|count)"
(sleep 20; kill -9 $N1) &
$R/swarm --gateway 127.0.0.1:27000 --bots 50 --duration 30 --ramp 5 --portal-chance 0 --chat-every 0 --json > $D/loss.json 2> $D/loss.err
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({'recovered_after_node_loss': d.get('recovered_after_node_loss'), 'errors': d.get('errors'), 'in_game': d.get('in_game')}))" $D/loss.json
kill $N2 $GW 2>/dev/null; wait 2>/dev/null
