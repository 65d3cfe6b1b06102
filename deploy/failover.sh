#!/usr/bin/env bash
# Gateway failover, measured (issue 41): a throwaway Postgres server, an active gateway
# and a standby (`--standby`) on it, two zone nodes given both gateways' addresses, and a
# swarm given both client addresses (`swarm --gateway A,B`). The active gateway is
# SIGKILLed mid-run; the swarm's summary says how many bots logged in again through the
# standby and how long each was out of the game.
#
#   deploy/failover.sh [--profile debug|release]     (BOTS=100 DURATION=40 KILL_AT=15)
#
# With ROUNDS=N (N > 1), a schedule of N faults, EVERY seconds apart (15): each takes the
# gateway serving then, alternately SIGKILLed and cut off from the database (the server
# ends its connection: it must step down by itself), and starts it again as a standby
# 2 s later; DURATION grows to cover them. At the end: every bot's character is in the
# database once, and no character is online through two gateways.
#
# With EDGES=1, both gateways run `--standby --peers <the other>`: B serves clients as an
# edge while A leads, half the bots start on each (`--gateway A,B` and `--gateway B,A`,
# prefixes `foa` and `fob`), and the fault is KILL=edge (default: B is SIGKILLed; A's bots
# must see no error) or KILL=leader (A is; B takes over, keeping its bots' sessions). Each
# half's summary is printed on its own. With ROUNDS=N too, N faults EVERY seconds apart,
# alternately the leader (first) and the edge, each victim restarted 2 s later (an edge
# again); before each kill the leader's /cluster says how many bots the victim holds, and
# at the end each loss of a gateway a bot noticed in game (swarm's `gateway_loss.lost`:
# when, and the gateway's address) is matched with the faults: one on a gateway no fault
# had just hit is a surviving gateway's bot that lost its session (there must be none). KILL=cutoff cuts the leader off from the database
# instead (the server ends its connection; it runs on until it notices and steps down);
# with ROUNDS, CUTOFF=1 does so at every other leader fault (rounds 3, 7, ...), and BOTH=1
# SIGKILLs both gateways at once at every other edge fault (rounds 4, 8, ...) and starts
# both again 2 s later (standbys: one takes the database, the other is its edge).
# SCHEDULE=random (with ROUNDS) draws each round from SEED (printed; the script's PID
# unless set) instead: the leader SIGKILLed (2 in 7) or cut off (1 in 7), the edge (3 in
# 7) or both (1 in 7), the victim started again 0-4 s later, the next fault 3-15 s after
# that (once the victim is back: a fault never finds a gateway still starting), and the
# bots go back to their first gateway RETURN_HOME s after a comeback through the other
# (see RETURN_HOME below). KILL=none kills nothing; B_SHARE=P starts P % of the bots
# on B (50; 0: every bot on the leader, the one-gateway baseline). Before the first fault,
# each process's CPU (cores) over 20 s is printed. TRANSPORT=enet (or mixed) gives the bots
# Realm Crafter's own transport (RCEnet, each gateway's RCEnet port in the same order).
# With EDGES=1, ECONOMY=1 has the bots trade, drop, pick up and equip items (`swarm
# --item-chance --closed-economy`: no shops, no eating, no fights, so nothing makes or
# destroys an item or a coin) and reads the economy's totals from the database
# (`gateway economy`) before the first fault and after the bots leave: they must be equal.
# LOST_AFTER=S: the bots count their gateway lost after S seconds of silence (5).
# RAMP=S ramps the bots in over S seconds (5); SWARM_ARGS adds to both swarms' arguments
# (capacity runs: KILL=none B_SHARE=0 or 50, RAMP=BOTS/10, SWARM_ARGS="--settle 150
# --spread 6000 --portal-chance 0"; each half's p99 move -> own update is printed).
# CPUS_PER_GATEWAY=C limits each gateway process to C cores (a CPU quota on a cgroup of its own;
# needs root and cgroup v1's cpu controller or cgroup v2's with cpu delegated): a stand-in
# for giving each gateway a machine of its own, so one against two gateways measures what
# a second machine adds when the gateways are what runs out.
# KEEP_WORK=1 keeps the work directory (every process's log) instead of removing it.
# Every bot connects from 127.0.0.1, so the gateways' per-address limits are raised
# (connections, logins, and RCEnet's half-open handshakes: GATEWAY_ENET_HALF_OPEN and
# GATEWAY_ENET_HALF_OPEN_PER_IP, 4096 unless set; at the default 8 per address a crowd
# logging in again at once waits out ENet's CONNECT retries, 0.5 to 15 s, because the
# bots share sockets and so cannot take the stateless cookies a lone client takes).
#
# Needs Postgres (Debian: apt-get install postgresql) and the binaries of the profile
# (cargo build [--release] -p gateway -p zone-node -p client). Everything listens on
# loopback; everything is stopped and removed at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROFILE=debug
while [ $# -gt 0 ]; do
    case $1 in
        --profile) PROFILE=${2:-}; shift 2 ;;
        *) echo "usage: deploy/failover.sh [--profile debug|release]" >&2; exit 2 ;;
    esac
done
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE
BOTS=${BOTS:-100}
DURATION=${DURATION:-40}
KILL_AT=${KILL_AT:-15}
ROUNDS=${ROUNDS:-1}
EVERY=${EVERY:-15}
EDGES=${EDGES:-0}
KILL=${KILL:-edge}
CUTOFF=${CUTOFF:-0}
B_SHARE=${B_SHARE:-50}
TRANSPORT=${TRANSPORT:-quic}
RAMP=${RAMP:-5}
ECONOMY=${ECONOMY:-0}
BOTH=${BOTH:-0}
SCHEDULE=${SCHEDULE:-fixed}
SEED=${SEED:-$$}
RANDOM=$SEED
# A bot that came back through the other gateway logs out after RETURN_HOME s and in again
# through its first (3 with SCHEDULE=random, else 0: never). Without it every bot ends on
# one gateway after the first faults, and a fault of the other then hits nobody.
[ "$SCHEDULE" = random ] && RETURN_HOME=${RETURN_HOME:-3}
RETURN_HOME=${RETURN_HOME:-0}
# Checkpoints every PERSIST_MS (the zone nodes' persist_every_ms and the gateways'
# checkpoint_ms): 30 s by default, 2 s with ECONOMY=1 (more of them fall among the faults).
if [ "$ECONOMY" = 1 ]; then PERSIST_MS=${PERSIST_MS:-2000}; else PERSIST_MS=${PERSIST_MS:-30000}; fi
if [ "$ROUNDS" -gt 1 ]; then
    PER_ROUND=$EVERY; [ "$SCHEDULE" = random ] && PER_ROUND=19
    MIN=$((KILL_AT + 5 + ROUNDS * PER_ROUND + 15))
    [ "$DURATION" -ge "$MIN" ] || DURATION=$MIN
fi
for b in gateway zone-node swarm; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b: cargo build -p gateway -p zone-node -p client${PROFILE/debug/}" >&2; exit 1; }
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PGBIN" ] || PGBIN=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
[ -x "$PGBIN/initdb" ] || { echo "Postgres is not installed (apt-get install postgresql)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rc-failover.XXXXXX")
chmod 755 "$WORK"
PIDS=()
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
CGROUPS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    sleep 0.2
    for g in "${CGROUPS[@]}"; do rmdir "$g" 2>/dev/null || true; done
    as_pg "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
log() { echo "[failover $(($(date +%s) - START))s] $*"; }
START=$(date +%s)

# Postgres on a temporary directory.
mkdir -p "$WORK/pg"
[ "$(id -u)" = 0 ] && chown postgres "$WORK/pg"
PGPORT=$(free_port)
as_pg "$PGBIN/initdb" -D "$WORK/pg/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w \
    -o "-p $PGPORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres rc
URL="postgres://postgres@127.0.0.1:$PGPORT/rc"
log "Postgres on 127.0.0.1:$PGPORT"
[ -n "${CPUS_PER_GATEWAY:-}" ] && log "each gateway limited to $CPUS_PER_GATEWAY cores"

# CPUS_PER_GATEWAY: PID joins the cgroup NAME, whose CPU quota is CPUS_PER_GATEWAY cores.
limit_cpu() { # PID NAME
    [ -n "${CPUS_PER_GATEWAY:-}" ] || return 0
    local quota dir
    quota=$(python3 -c 'import sys; print(max(1000, int(float(sys.argv[1]) * 100000)))' "$CPUS_PER_GATEWAY")
    if [ -w /sys/fs/cgroup/cpu ]; then
        dir=/sys/fs/cgroup/cpu/rc-failover-$$-$2
        mkdir -p "$dir"
        echo 100000 >"$dir/cpu.cfs_period_us"
        echo "$quota" >"$dir/cpu.cfs_quota_us"
    elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
        dir=/sys/fs/cgroup/rc-failover-$$-$2
        mkdir -p "$dir"
        echo "$quota 100000" >"$dir/cpu.max"
    else
        echo "CPUS_PER_GATEWAY needs a writable cgroup cpu controller (root)" >&2
        exit 1
    fi
    echo "$1" >"$dir/cgroup.procs" || { echo "gateway $2 (pid $1) could not join $dir" >&2; return 0; }
    CGROUPS+=("$dir")
}
SECRET="failover-$(date +%s%N)-0123456789abcdef0123456789"
gateway() { # NAME CLIENT_PORT INTERNAL_PORT ADMIN_PORT ENET_PORT [--standby]
    local name=$1 client=$2 internal=$3 admin=$4 enet=$5
    shift 5
    : >"$WORK/$name.out" # this start's ready line (the log goes on)
    GATEWAY_CLUSTER_SECRET=$SECRET GATEWAY_PASSWORD_HASH=fast \
    GATEWAY_ENET_LISTEN=127.0.0.1:$enet \
    GATEWAY_LOGIN_ATTEMPTS_PER_MINUTE=100000 GATEWAY_MAX_CONNECTIONS_PER_IP=100000 \
    GATEWAY_CONNECTIONS_PER_IP_PER_MINUTE=100000 GATEWAY_PLACEMENT_HOLD_MS=3000 \
    GATEWAY_ENET_HALF_OPEN=${GATEWAY_ENET_HALF_OPEN:-4096} \
    GATEWAY_ENET_HALF_OPEN_PER_IP=${GATEWAY_ENET_HALF_OPEN_PER_IP:-4096} \
    GATEWAY_CHECKPOINT_MS=$PERSIST_MS \
    RUST_LOG=${RUST_LOG:-info} NO_COLOR=1 \
        "$BIN/gateway" --listen "127.0.0.1:$client" --internal-listen "127.0.0.1:$internal" \
        --admin-listen "127.0.0.1:$admin" --data-dir "$WORK/$name" --database-url "$URL" "$@" \
        >"$WORK/$name.out" 2>>"$WORK/$name.log" &
    PIDS+=($!)
    limit_cpu "$!" "$name"
}
A=($(free_port) $(free_port) $(free_port) $(free_port))
B=($(free_port) $(free_port) $(free_port) $(free_port))
# The swarm's transport, and each gateway's RCEnet address (in --gateway's order).
bots_via() {
    echo --transport "$TRANSPORT" --enet "127.0.0.1:${1},127.0.0.1:${2}"
    [ "$ECONOMY" = 1 ] && echo --item-chance 0.3 --closed-economy --fight-chance 0
    [ -n "${LOST_AFTER:-}" ] && echo --gateway-lost-after "$LOST_AFTER"
    [ "$RETURN_HOME" = 0 ] || echo --return-home "$RETURN_HOME"
    [ -n "${SWARM_ARGS:-}" ] && echo "$SWARM_ARGS"
    return 0
}
# The economy's totals of the bots' characters and the ground, as JSON.
economy() { "$BIN/gateway" economy --prefix fo --database-url "$URL" 2>/dev/null || echo '{}'; }
A_PEERS=(); B_PEERS=()
if [ "$EDGES" = 1 ]; then
    A_PEERS=(--standby --peers "127.0.0.1:${B[1]}"); B_PEERS=(--peers "127.0.0.1:${A[1]}")
fi
gateway a "${A[0]}" "${A[1]}" "${A[2]}" "${A[3]}" "${A_PEERS[@]}"
A_PID=${PIDS[-1]}
until grep -q "gateway ready" "$WORK/a.out" 2>/dev/null; do
    kill -0 "$A_PID" 2>/dev/null || { echo "gateway A exited:"; tail -5 "$WORK/a.log"; exit 1; }
    sleep 0.2
done
gateway b "${B[0]}" "${B[1]}" "${B[2]}" "${B[3]}" --standby "${B_PEERS[@]}"
for n in n1 n2; do
    ZONE_NODE_CLUSTER_SECRET=$SECRET ZONE_NODE_INSECURE_SKIP_VERIFY=true \
    ZONE_NODE_GATEWAY_ADDR="127.0.0.1:${A[1]},127.0.0.1:${B[1]}" \
    ZONE_NODE_ADMIN_LISTEN=127.0.0.1:0 ZONE_NODE_RECONNECT_MAX_MS=500 \
    ZONE_NODE_PERSIST_EVERY_MS=$PERSIST_MS \
    RUST_LOG=${RUST_LOG:-info} NO_COLOR=1 \
        "$BIN/zone-node" run --node-id "$n" --bind-addr 127.0.0.1:0 2>"$WORK/$n.log" &
    PIDS+=($!)
done
nodes() { curl -fsS -m 2 "http://127.0.0.1:$1/cluster" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["nodes"]) if not d["unplaced"] else 0)'; }
until [ "$(nodes "${A[2]}" 2>/dev/null || echo 0)" = 2 ]; do sleep 0.2; done
B_PID=${PIDS[-3]}
if [ "$EDGES" = 1 ]; then
    until curl -fsS -m 2 "http://127.0.0.1:${B[2]}/readyz" >/dev/null 2>&1; do sleep 0.2; done
    log "gateway A (127.0.0.1:${A[0]}) leads with 2 nodes; edge B (127.0.0.1:${B[0]}) serves too"
    ON_B=$((BOTS * B_SHARE / 100))
    # N bots whose first gateway is the first given, in the background (SWARM_PID; none:
    # an empty summary and no PID).
    bots_on() { # name n first-client other-client first-enet other-enet
        SWARM_PID=
        if [ "$2" -gt 0 ]; then
            "$BIN/swarm" --gateway "127.0.0.1:$3,127.0.0.1:$4" $(bots_via "$5" "$6") --bots "$2" --prefix "fo$1" \
                --duration "$DURATION" --ramp "$RAMP" --json >"$WORK/swarm-$1.json" 2>"$WORK/swarm-$1.err" &
            SWARM_PID=$!
        else
            echo '{"bots": 0}' >"$WORK/swarm-$1.json"
        fi
    }
    # B_SHARE=100: every bot on the edge (the leader serves only its sessions).
    bots_on a "$((BOTS - ON_B))" "${A[0]}" "${B[0]}" "${A[3]}" "${B[3]}"
    SWARM_A=$SWARM_PID
    bots_on b "$ON_B" "${B[0]}" "${A[0]}" "${B[3]}" "${A[3]}"
    SWARM_B=$SWARM_PID
    PSQL() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d rc -Atq -c "$1"; }
    sleep $((KILL_AT - 15 > 0 ? KILL_AT - 15 : 0))
    # CPU (cores) of each process over 20 s of steady play.
    ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
    CPU_PIDS=("$A_PID" "$B_PID" "${PIDS[-2]}" "${PIDS[-1]}")
    T_BEFORE=(); for p in "${CPU_PIDS[@]}"; do T_BEFORE+=("$(ticks "$p")"); done
    sleep 20
    HZ=$(getconf CLK_TCK)
    CPU=(); i=0; for p in "${CPU_PIDS[@]}"; do CPU+=("$(python3 -c "print(round(($(ticks "$p") - ${T_BEFORE[$i]}) / $HZ / 20, 3))")"); i=$((i + 1)); done
    log "CPU (cores) over 20 s: leader A ${CPU[0]}, edge B ${CPU[1]}, node n1 ${CPU[2]}, node n2 ${CPU[3]} ($((BOTS - ON_B)) bots start on A, $ON_B on B)"
    if [ "$ECONOMY" = 1 ]; then
        # A new character's starter items come from the world's login script and reach the
        # database with its first checkpoint (PERSIST_MS): the reading before the faults is
        # taken once two readings 3 s apart agree (up to 45 s).
        totals() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps([d.get("characters"), d.get("gold"), d.get("total")]))' "$1"; }
        ECON0=$(economy)
        for _ in $(seq 15); do
            sleep 3
            E=$(economy)
            [ "$(totals "$E")" = "$(totals "$ECON0")" ] && break
            ECON0=$E
        done
        log "economy before the faults: $ECON0"
    fi
    sleep 5
    EXPECTED=0
    # The leader: ready and not an edge (an edge is ready too, and passes /cluster on).
    # Sleeps until the Unix time T (ms), if it is still ahead.
    sleep_until() { local ms=$(( $1 - $(date +%s%N) / 1000000 )); [ "$ms" -le 0 ] || sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"; }
    lead_port() { if curl -fsS -m 2 "http://127.0.0.1:${A[2]}/readyz" 2>/dev/null | grep -qv edge; then echo a; else echo b; fi; }
    for round in $(seq 1 "$ROUNDS"); do
        [ "$KILL" = none ] && break
        WHO=$KILL
        [ "$KILL" = cutoff ] && WHO=leader
        RESTART=2; NEXT=$EVERY; CUT=0
        if [ "$ROUNDS" -gt 1 ]; then
            WHO=$([ $((round % 2)) = 1 ] && echo leader || echo edge)
            [ "$BOTH" = 1 ] && [ $((round % 4)) = 0 ] && WHO=both
            [ "$CUTOFF" = 1 ] && [ $((round % 4)) = 3 ] && CUT=1
        fi
        if [ "$SCHEDULE" = random ]; then
            # A schedule of its own from SEED: any kind of fault, any time apart.
            case $((RANDOM % 7)) in
                0 | 1) WHO=leader ;;
                2) WHO=leader; CUT=1 ;;
                3 | 4 | 5) WHO=edge ;;
                6) WHO=both ;;
            esac
            RESTART=$((RANDOM % 5)); NEXT=$((RESTART + 3 + RANDOM % 13))
            log "round $round (seed $SEED): $WHO$([ "$CUT" = 1 ] && echo ' (cut off)'), restarted after ${RESTART} s, the next fault ${NEXT} s after this one"
        fi
        if [ "$WHO" = both ]; then
            # Every gateway at once: each bot is out until one of them is back and leads;
            # the zone nodes keep the world, and the first gateway to take the database
            # rebuilds the directory from them.
            ON_VICTIM=$(curl -fsS -m 2 "http://127.0.0.1:${A[2]}/cluster" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sessions"]["in_game"])')
            EXPECTED=$((EXPECTED + ON_VICTIM))
            T0=$(date +%s%N)
            kill -9 "$A_PID" "$B_PID"; wait "$A_PID" "$B_PID" 2>/dev/null || true
            log "round $round: both gateways SIGKILLed ($ON_VICTIM bots on them)"
            echo "$((T0 / 1000000)) ${A[0]} ${A[3]} both" >>"$WORK/faults.txt"
            echo "$((T0 / 1000000)) ${B[0]} ${B[3]} both" >>"$WORK/faults.txt"
            sleep "$RESTART"
            gateway a "${A[0]}" "${A[1]}" "${A[2]}" "${A[3]}" --standby --peers "127.0.0.1:${B[1]}"
            A_PID=${PIDS[-1]}
            gateway b "${B[0]}" "${B[1]}" "${B[2]}" "${B[3]}" --standby --peers "127.0.0.1:${A[1]}"
            B_PID=${PIDS[-1]}
            until grep -q "gateway ready" "$WORK/a.out" "$WORK/b.out" 2>/dev/null; do sleep 0.05; done
            # Which one leads: the other must be ready too (an edge) before A's answer says.
            until curl -fsS -m 2 "http://127.0.0.1:${A[2]}/readyz" >/dev/null 2>&1 \
                && curl -fsS -m 2 "http://127.0.0.1:${B[2]}/readyz" >/dev/null 2>&1; do sleep 0.1; done
            L=$(lead_port); if [ "$L" = a ]; then LP=("${A[@]}"); else LP=("${B[@]}"); fi
            until [ "$(nodes "${LP[2]}" 2>/dev/null || echo 0)" = 2 ]; do sleep 0.1; done
            log "round $round: both back, ${L^^} leads, every instance placed $(( ($(date +%s%N) - T0) / 1000000 )) ms after the fault"
            [ "$round" = "$ROUNDS" ] || sleep_until $((T0 / 1000000 + NEXT * 1000))
            continue
        fi
        L=$(lead_port)
        if [ "$L" = a ]; then LP=("${A[@]}"); EP=("${B[@]}"); LPID=$A_PID; EPID=$B_PID; E=b; else LP=("${B[@]}"); EP=("${A[@]}"); LPID=$B_PID; EPID=$A_PID; E=a; fi
        # The bots the victim holds: the edge's relayed clients, or the leader's own.
        ON_VICTIM=$(curl -fsS -m 2 "http://127.0.0.1:${LP[2]}/cluster" | python3 -c 'import json,sys; d=json.load(sys.stdin); e=sum(x["clients"] for x in d.get("edges",[])); print(e if sys.argv[1]=="edge" else max(0, d["sessions"]["in_game"]-e))' "$WHO")
        EXPECTED=$((EXPECTED + ON_VICTIM))
        T0=$(date +%s%N)
        if [ "$WHO" = leader ] && { [ "$KILL" = cutoff ] || [ "$CUT" = 1 ]; }; then
            # The database server ends the leader's connection (its lock goes with it):
            # the edge takes over while the leader still runs, until it notices and
            # steps down by itself. The edge must keep its players all the same.
            PSQL "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()" >/dev/null
            while kill -0 "$LPID" 2>/dev/null; do sleep 0.05; done
            wait "$LPID" 2>/dev/null || true
            log "round $round: leader ${L^^} cut off from the database ($ON_VICTIM bots on it), stepped down in $(( ($(date +%s%N) - T0) / 1000000 )) ms"
            KIND=cutoff
        fi
        if [ "$WHO" = leader ] && kill -0 "$LPID" 2>/dev/null; then
            kill -9 "$LPID"; wait "$LPID" 2>/dev/null || true
            log "round $round: leader ${L^^} SIGKILLed ($ON_VICTIM bots on it)"
            KIND=leader
        fi
        if [ "$WHO" = leader ]; then
            until grep -q "gateway ready" "$WORK/$E.out" 2>/dev/null; do sleep 0.05; done
            TOOK=$(( ($(date +%s%N) - T0) / 1000000 ))
            until [ "$(nodes "${EP[2]}" 2>/dev/null || echo 0)" = 2 ]; do sleep 0.1; done
            log "round $round: ${E^^} took over ${TOOK} ms after, every instance placed $(( ($(date +%s%N) - T0) / 1000000 )) ms after"
            VICTIM=$L; VP=("${LP[@]}"); OTHER_INTERNAL=${EP[1]}
        else
            kill -9 "$EPID"; wait "$EPID" 2>/dev/null || true
            log "round $round: edge ${E^^} SIGKILLed ($ON_VICTIM bots on it)"
            KIND=edge
            VICTIM=$E; VP=("${EP[@]}"); OTHER_INTERNAL=${LP[1]}
        fi
        # When and whom: a bot's loss of a gateway is the fault's only if it names one of
        # these client ports (QUIC, RCEnet) soon after.
        echo "$((T0 / 1000000)) ${VP[0]} ${VP[3]} $KIND" >>"$WORK/faults.txt"
        if [ "$ROUNDS" -gt 1 ]; then
            sleep "$RESTART"
            gateway "$VICTIM" "${VP[0]}" "${VP[1]}" "${VP[2]}" "${VP[3]}" --standby --peers "127.0.0.1:$OTHER_INTERNAL"
            if [ "$VICTIM" = a ]; then A_PID=${PIDS[-1]}; else B_PID=${PIDS[-1]}; fi
            until curl -fsS -m 2 "http://127.0.0.1:${VP[2]}/readyz" 2>/dev/null | grep -q edge; do sleep 0.2; done
            log "round $round: ${VICTIM^^} back, an edge"
            [ "$round" = "$ROUNDS" ] || sleep_until $((T0 / 1000000 + NEXT * 1000))
        fi
    done
    [ -z "$SWARM_A" ] || wait "$SWARM_A" || true
    [ -z "$SWARM_B" ] || wait "$SWARM_B" || true
    # How long logins waited for their fencing token's commit (both gateways since they
    # last started; an edge hands nothing out).
    for g in "${A[2]}" "${B[2]}"; do curl -fsS -m 2 "http://127.0.0.1:$g/metrics" 2>/dev/null || true; done | python3 -c '
import re, sys
b, n, total = {}, 0, 0.0
for l in sys.stdin:
    m = re.match(r"rc_gateway_handout_commit_seconds_bucket\{le=\"([^\"]+)\"\} (\S+)", l)
    if m:
        b[m.group(1)] = b.get(m.group(1), 0) + float(m.group(2))
    elif l.startswith("rc_gateway_handout_commit_seconds_sum"):
        total += float(l.split()[-1])
    elif l.startswith("rc_gateway_handout_commit_seconds_count"):
        n += int(float(l.split()[-1]))
if n:
    edges = sorted((float("inf") if k == "+Inf" else float(k), v) for k, v in b.items())
    p99 = next((k for k, v in edges if v >= 0.99 * n), float("inf"))
    print("hand-outs committed since the gateways last started: %d, mean %.1f ms, p99 under %s ms" % (n, 1000 * total / n, "%g" % (1000 * p99)))
'
    if [ "$ECONOMY" = 1 ]; then
        # The bots' logouts are saved; a zone's next checkpoint (ZONE_NODE_PERSIST_EVERY_MS)
        # changes nothing of the totals (a logout saves the ground it touched with it).
        sleep 3
        ECON1=$(economy)
        log "economy after the bots left: $ECON1"
        python3 - "$ECON0" "$ECON1" "$BOTS" "$WORK/swarm-a.json" "$WORK/swarm-b.json" <<'PY'
import json, sys
a, b, bots = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
did = {}
for path in sys.argv[4:6]:
    for k, v in json.load(open(path)).get("items", {}).items():
        did[k] = did.get(k, 0) + v
print("the bots' item play: trades %s, dropped %s, picked up %s, equipped %s, unequipped %s" % (
    did.get("trades_completed"), did.get("dropped"), did.get("picked_up"), did.get("equipped"), did.get("unequipped")))
same = a.get("total") == b.get("total") and a.get("gold") == b.get("gold")
print("economy: %s characters before, %s after (of %d bots); gold %s -> %s; items %s -> %s (on the ground after: %s): %s" % (
    a.get("characters"), b.get("characters"), bots, a.get("gold"), b.get("gold"),
    sum(a.get("total", {}).values()), sum(b.get("total", {}).values()), sum(b.get("ground", {}).values()),
    "CONSERVED" if same and a.get("characters") == bots else "NOT CONSERVED"))
if not same:
    for k in sorted(set(a.get("total", {})) | set(b.get("total", {})), key=int):
        x, y = a.get("total", {}).get(k, 0), b.get("total", {}).get(k, 0)
        if x != y:
            print("  item %s: %d -> %d" % (k, x, y))
PY
    fi
    CHARS=$(PSQL "SELECT count(*) FROM characters WHERE lower(name) LIKE 'fo%'" 2>/dev/null || echo "?")
    DUPES=$(PSQL "SELECT count(*) FROM (SELECT lower(name) FROM characters GROUP BY lower(name) HAVING count(*) > 1) d" 2>/dev/null || echo "?")
    touch "$WORK/faults.txt"
    python3 - "$WORK/swarm-a.json" "$WORK/swarm-b.json" "$KILL" "$CHARS" "$DUPES" "$ROUNDS" "$EXPECTED" "$WORK/faults.txt" "${LOST_AFTER:-5}" <<'PY'
import json, sys
for path, who in ((sys.argv[1], "A's bots (the leader's)"), (sys.argv[2], "B's bots (the edge's)")):
    d = json.load(open(path))
    g, e, gap = d.get("gateway_loss", {}), d.get("errors", {}), d.get("own_update_gap", {})
    mv = d.get("move_to_own_update", {})
    print("%s: %d bots, in game to the end %s, failed %s; logged in again through the other gateway %s, back in game (ms) %s; move -> own update p50 %s ms, p99 %s ms; longest own-update gap p99 %s ms, max %s ms; errors: protocol %s, other %s" % (
        who, d.get("bots", 0), d.get("in_game"), d.get("failed"), g.get("relogins"), json.dumps(g.get("back_in_game")),
        mv.get("p50_ms"), mv.get("p99_ms"), gap.get("p99_ms"), gap.get("max_ms"), json.dumps(e.get("protocol", {})), json.dumps(e.get("other", {}))))
what = sys.argv[3] if sys.argv[6] == "1" else "%s faults, leader and edge in turn" % sys.argv[6]
print("killed: the %s; characters of the bots in the database: %s; names stored twice: %s" % (what, sys.argv[4], sys.argv[5]))
relogins = sum(json.load(open(p)).get("gateway_loss", {}).get("relogins", 0) for p in sys.argv[1:3])
home = sum(json.load(open(p)).get("gateway_loss", {}).get("returned_home", 0) for p in sys.argv[1:3])
print("bots on the victims when killed: %s; logins again: %s (a bot logging in through a victim when it goes logs in again too); back to their first gateway (RETURN_HOME): %s" % (sys.argv[7], relogins, home))
# Each loss a bot noticed in game, against the faults: one on a gateway no fault had just
# hit (from the fault to the bots' silence limit, LOST_AFTER, and 3 s more) is a surviving
# gateway's bot that lost its session.
faults = [(int(f[0]), int(f[1]), int(f[2]), f[3] if len(f) > 3 else "?") for f in (l.split() for l in open(sys.argv[8])) if f]
slack = (float(sys.argv[9]) + 3) * 1000
def fault_of(t, a):
    port = int(a.rsplit(":", 1)[1])
    hits = [f for f in faults if port in (f[1], f[2]) and f[0] - 1000 <= t <= f[0] + slack]
    # The last fault before the loss; one just after only if none came before.
    before = [f for f in hits if f[0] <= t]
    return before[-1] if before else (hits[0] if hits else None)
losses = [l for p in sys.argv[1:3] for l in json.load(open(p)).get("gateway_loss", {}).get("lost", [])]
unexplained = [(t, a) for t, a in losses if fault_of(t, a) is None]
# From noticing the loss to in game again, by the fault that caused it: the leader
# SIGKILLed (its bots wait for the takeover), cut off, or an edge SIGKILLed.
comebacks = [c for p in sys.argv[1:3] for c in json.load(open(p)).get("gateway_loss", {}).get("comebacks", [])]
def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0
for kind in ("leader", "cutoff", "edge", "both"):
    ms = sorted(c[2] for c in comebacks if (fault_of(c[0], c[1]) or (0, 0, 0, None))[3] == kind)
    tries = sorted(c[3] for c in comebacks if (fault_of(c[0], c[1]) or (0, 0, 0, None))[3] == kind)
    if ms:
        print("back in game after a fault of kind %s: %d bots, p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms; logins tried p50 %d, max %d" % (
            kind, len(ms), pct(ms, 0.5), pct(ms, 0.9), pct(ms, 0.99), ms[-1], pct(tries, 0.5), tries[-1]))
        # The same from the fault itself (the above counts from when each bot noticed).
        since = sorted(c[0] + c[2] - fault_of(c[0], c[1])[0] for c in comebacks
                       if (fault_of(c[0], c[1]) or (0, 0, 0, None))[3] == kind)
        print("    from the fault: p50 %.0f ms, p90 %.0f ms, max %.0f ms" % (pct(since, 0.5), pct(since, 0.9), since[-1]))
        # By transport: the victim's client port (QUIC) or its RCEnet port.
        for label, col in (("QUIC", 1), ("RCEnet", 2)):
            t = sorted(c[2] for c in comebacks if (fault_of(c[0], c[1]) or (0, 0, 0, None))[3] == kind
                       and int(c[1].rsplit(":", 1)[1]) == fault_of(c[0], c[1])[col])
            if t:
                print("    of them %s: %d bots, p50 %.0f ms, p90 %.0f ms, max %.0f ms" % (label, len(t), pct(t, 0.5), pct(t, 0.9), t[-1]))
# Why a login again failed (the bot then tried the next gateway), by kind.
failed = {}
for p in sys.argv[1:3]:
    for k, n in json.load(open(p)).get("gateway_loss", {}).get("failed_relogins", {}).items():
        failed[k] = failed.get(k, 0) + n
if failed:
    print("logins again that failed (then tried again): %s" % ", ".join("%s: %d" % kv for kv in sorted(failed.items())))
print("losses of a gateway in game: %d, each on a victim just after its fault: %d; the surviving gateways' bots that lost their session: %d" % (
    len(losses), len(losses) - len(unexplained), len(unexplained)))
# Own-update gaps over a second, by the fault before them (within 15 s) and whether the
# bot was on the victim or on the surviving gateway.
for p in sys.argv[1:3]:
    for g in json.load(open(p)).get("long_gaps", []):
        t, ms, a = g[:3]
        who = g[3] if len(g) > 3 else "?"
        port = int(a.rsplit(":", 1)[1])
        before = [f for f in faults if f[0] <= t <= f[0] + 15000]
        f = before[-1] if before else None
        # Every gateway of the fault (both of a "both") is a victim.
        side = "?" if f is None else ("victim" if any(port in (x[1], x[2]) for x in faults if x[0] == f[0]) else "survivor")
        print("  own-update gap %.0f ms ending %s ms after a fault of kind %s, on the %s (bot %s)" % (
            ms, "?" if f is None else t - f[0], "none" if f is None else f[3], side, who))
for t, a in unexplained[:10]:
    print("  lost %s at %d ms (faults: %s)" % (a, t, faults))
PY
    exit 0
fi
log "gateway A (127.0.0.1:${A[0]}) serves with 2 nodes; standby B (127.0.0.1:${B[0]}) waits"

"$BIN/swarm" --gateway "127.0.0.1:${A[0]},127.0.0.1:${B[0]}" $(bots_via "${A[3]}" "${B[3]}") --bots "$BOTS" --prefix fo \
    --duration "$DURATION" --ramp "$RAMP" --json >"$WORK/swarm.json" 2>"$WORK/swarm.err" &
SWARM=$!
PSQL() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d rc -Atq -c "$1"; }
sleep $((KILL_AT + 5))
TOOK=; PLACED=; FAULTS=()
for round in $(seq 1 "$ROUNDS"); do
    # The gateway serving now: the one whose current start printed its ready line.
    if grep -q "gateway ready" "$WORK/a.out" 2>/dev/null && kill -0 "$A_PID" 2>/dev/null; then
        LEAD=a; LEAD_PID=$A_PID; OTHER=b; P=("${A[@]}"); O=("${B[@]}")
    else
        LEAD=b; LEAD_PID=$B_PID; OTHER=a; P=("${B[@]}"); O=("${A[@]}")
    fi
    T0=$(date +%s%N)
    if [ $((round % 2)) = 1 ] || [ "$ROUNDS" = 1 ]; then
        kill -9 "$LEAD_PID"; wait "$LEAD_PID" 2>/dev/null || true
        HOW="SIGKILL"
    else
        # The database server ends the leader's connection: it must step down by itself.
        PSQL "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()" >/dev/null
        while kill -0 "$LEAD_PID" 2>/dev/null; do sleep 0.05; done
        wait "$LEAD_PID" 2>/dev/null || true
        HOW="cut off from the database (stepped down in $(( ($(date +%s%N) - T0) / 1000000 )) ms)"
    fi
    log "round $round: gateway ${LEAD^^} $HOW"
    until grep -q "gateway ready" "$WORK/$OTHER.out" 2>/dev/null; do sleep 0.05; done
    TOOK=$(( ($(date +%s%N) - T0) / 1000000 ))
    until [ "$(nodes "${O[2]}" 2>/dev/null || echo 0)" = 2 ]; do sleep 0.1; done
    PLACED=$(( ($(date +%s%N) - T0) / 1000000 ))
    log "round $round: ${OTHER^^} took over ${TOOK} ms after, every instance placed ${PLACED} ms after"
    FAULTS+=("$HOW: took over $TOOK ms, placed $PLACED ms")
    if [ "$ROUNDS" -gt 1 ]; then
        sleep 2
        gateway "$LEAD" "${P[0]}" "${P[1]}" "${P[2]}" "${P[3]}" --standby
        if [ "$LEAD" = a ]; then A_PID=${PIDS[-1]}; else B_PID=${PIDS[-1]}; fi
        log "round $round: ${LEAD^^} back as the standby"
        [ "$round" = "$ROUNDS" ] || sleep $((EVERY - 2))
    fi
done
wait "$SWARM" || true
# Every bot's character stored once, and no session left twice: the serving gateway's
# /cluster counts each in-game character once (a second login of one is refused).
CHARS=$(PSQL "SELECT count(*) FROM characters WHERE lower(name) LIKE 'fo%'" 2>/dev/null || echo "?")
DUPES=$(PSQL "SELECT count(*) FROM (SELECT lower(name) FROM characters GROUP BY lower(name) HAVING count(*) > 1) d" 2>/dev/null || echo "?")
python3 - "$WORK/swarm.json" "$TOOK" "$PLACED" "$CHARS" "$DUPES" "${FAULTS[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d.get("gateway_loss", {})
print("bots: %d, in game to the end: %s, failed: %s" % (d.get("bots", 0), d.get("in_game"), d.get("failed")))
for f in sys.argv[6:]:
    print("fault: %s" % f)
print("standby took the database: %s ms after the (last) fault; every instance placed: %s ms" % (sys.argv[2], sys.argv[3]))
print("bots that logged in again through the other gateway: %s" % g.get("relogins"))
print("noticing the loss: the bots' --gateway-lost-after (QUIC idle timeout), 5 s by default")
print("from noticing to in game again through the standby (ms): %s" % json.dumps(g.get("back_in_game")))
e = d.get("errors", {})
print("errors: protocol %s, other %s" % (json.dumps(e.get("protocol", {})), json.dumps(e.get("other", {}))))
print("characters of the bots in the database: %s; names stored twice: %s" % (sys.argv[4], sys.argv[5]))
PY
