#!/usr/bin/env bash
# The Docker Swarm stack's smoke test (issue 41): deploy/stack.yml on a one-node swarm
# (initialised here when this Docker is in none, and left again at the end), with the
# images deploy/images.sh built (realm-crafter/server, and realm-crafter/postgres where
# postgres:15 cannot be pulled). Checks, printing PASS or FAIL for each:
#   1. deploy     every service runs; Postgres with its volume, secrets as Swarm secrets
#   2. one leads  one gateway leads (/cluster) with both zone nodes; the other serves as
#                 its edge (/readyz 200, "edge")
#   3. play       bots given both gateways' addresses log in (creating accounts) and play,
#                 half through each gateway first
#   4. takeover   `docker kill` of the leader's container: the other leads, the nodes
#                 register with it, Swarm restarts the killed one, an edge again
#   5. bots back  every bot played to the end (the leader's logged in again through the
#                 other, the edge's kept their sessions), no protocol error, and each
#                 bot's character is stored once in Postgres
# It always removes the stack, its volume and (when it made it) the swarm.
#
#   deploy/stack-smoke.sh [--profile debug|release]   (the host's `swarm` binary of it)
#
# Exits 0 with SKIP when no Docker daemon answers or it cannot run a swarm.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROFILE=debug
while [ $# -gt 0 ]; do
    case $1 in
        --profile) PROFILE=${2:-}; shift 2 ;;
        *) echo "usage: deploy/stack-smoke.sh [--profile debug|release]" >&2; exit 2 ;;
    esac
done
if ! docker info >/dev/null 2>&1; then
    echo "SKIP stack smoke test: no Docker daemon answers"
    exit 0
fi
SWARM_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/swarm
[ -x "$SWARM_BIN" ] || { echo "missing $SWARM_BIN (cargo build -p client)" >&2; exit 1; }
export RC_IMAGE=${RC_IMAGE:-realm-crafter/server:latest}
docker image inspect "$RC_IMAGE" >/dev/null 2>&1 \
    || { echo "missing image $RC_IMAGE (deploy/images.sh)" >&2; exit 1; }
if [ -z "${RC_POSTGRES_IMAGE:-}" ]; then
    if docker image inspect realm-crafter/postgres:local >/dev/null 2>&1; then
        RC_POSTGRES_IMAGE=realm-crafter/postgres:local
    else
        RC_POSTGRES_IMAGE=postgres:15
    fi
fi
export RC_POSTGRES_IMAGE

START=$(date +%s)
STACK=rcstack$$x$RANDOM
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rc-stack.XXXXXX")
RESULTS=()
FAILED=0
log() { echo "[stack $(($(date +%s) - START))s] $*"; }
pass() { RESULTS+=("PASS  $1"); log "PASS  $1${2:+: $2}"; }
fail() { RESULTS+=("FAIL  $1"); FAILED=1; log "FAIL  $1${2:+: $2}"; }

MADE_SWARM=0
if [ "$(docker info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null)" != active ]; then
    if ! docker swarm init --advertise-addr 127.0.0.1 >"$WORK/swarm-init.log" 2>&1; then
        echo "SKIP stack smoke test: this Docker cannot run a swarm ($(tail -n 1 "$WORK/swarm-init.log"))"
        rm -rf "$WORK"
        exit 0
    fi
    MADE_SWARM=1
fi
cleanup() {
    # The watchdog's shell first: were its sleep ended first, it would go on to the kill.
    # (Its orphaned sleep writes nowhere and ends by itself.)
    kill "$WATCHDOG" 2>/dev/null
    docker stack rm "$STACK" >/dev/null 2>&1 || true
    # The stack's tasks and network go first, then its volume can.
    for _ in $(seq 60); do
        [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$STACK")" ] \
            && ! docker network ls --format '{{.Name}}' | grep -q "^${STACK}_" && break
        sleep 1
    done
    docker volume rm "${STACK}_pgdata" >/dev/null 2>&1 || true
    [ "$MADE_SWARM" = 1 ] && docker swarm leave --force >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
# The whole run is bounded: a hang must not hold CI.
watchdog() { sleep 420; echo "[stack] timed out" >&2; kill -TERM $$; }
watchdog >/dev/null 2>&1 &
WATCHDOG=$!

# Host ports below the ephemeral range (tests beside it bind port 0).
read -r RC_CLIENT_PORT RC_ENET_PORT RC_ADMIN_PORT RC_CLIENT_PORT_B RC_ENET_PORT_B RC_ADMIN_PORT_B <<<"$(python3 -c 'import random,socket
taken=set()
for kind in ("SOCK_DGRAM","SOCK_DGRAM","SOCK_STREAM")*2:
    while True:
        p=random.randrange(20000,32000)
        if p in taken: continue
        s=socket.socket(socket.AF_INET,getattr(socket,kind))
        try: s.bind(("0.0.0.0",p))
        except OSError: continue
        finally: s.close()
        taken.add(p); print(p, end=" "); break')"
export RC_CLIENT_PORT RC_ENET_PORT RC_ADMIN_PORT RC_CLIENT_PORT_B RC_ENET_PORT_B RC_ADMIN_PORT_B
export RC_SECRETS_DIR=$WORK/secrets RC_PASSWORD_HASH=fast RC_NODE_TIMEOUT_MS=5000
export RC_LOGIN_ATTEMPTS_PER_MINUTE=1000 RC_MAX_CONNECTIONS_PER_IP=1000 RC_CONNECTIONS_PER_IP_PER_MINUTE=1000
export RC_ACCOUNT_CREATIONS_PER_HOUR=1000
mkdir -p "$RC_SECRETS_DIR"
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$RC_SECRETS_DIR/cluster_secret"
python3 -c 'import secrets; print(secrets.token_hex(16), end="")' >"$RC_SECRETS_DIR/db_password"
echo "postgres://rc:$(cat "$RC_SECRETS_DIR/db_password")@postgres:5432/rc" >"$RC_SECRETS_DIR/database_url"

ready() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz")" = 200 ]; }
wait_for() { # SECONDS COMMAND...
    local until=$(( $(date +%s) + $1 )); shift
    while ! "$@"; do [ "$(date +%s)" -ge "$until" ] && return 1; sleep 0.5; done
}
is_edge() { curl -fsS -m 2 "http://127.0.0.1:$1/readyz" 2>/dev/null | grep -q "edge"; }
leads() { ready "$1" && ! is_edge "$1"; } # an edge is ready too, and says so
serving() { # the leading gateway's admin port
    if leads "$RC_ADMIN_PORT"; then echo "$RC_ADMIN_PORT a"; elif leads "$RC_ADMIN_PORT_B"; then echo "$RC_ADMIN_PORT_B b"; else return 1; fi
}
nodes_placed() { curl -fsS -m 2 "http://127.0.0.1:$1/cluster" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if len(d["nodes"]) == 2 and not d["unplaced"] else 1)'; }

# 1. Deploy.
log "deploying $STACK ($RC_IMAGE, $RC_POSTGRES_IMAGE) on ports $RC_CLIENT_PORT/$RC_CLIENT_PORT_B"
if docker stack deploy -c "$ROOT/deploy/stack.yml" "$STACK" >"$WORK/deploy.log" 2>&1; then
    running() { [ "$(docker stack ps "$STACK" --filter desired-state=running --format '{{.CurrentState}}' | grep -c '^Running')" -ge 5 ]; }
    if wait_for 90 running; then
        pass "deploy" "postgres, gateway-a, gateway-b and 2 zone nodes running; secrets: $(docker secret ls --format '{{.Name}}' | grep -c "^${STACK}_")"
    else
        fail "deploy" "$(docker stack ps "$STACK" --format '{{.Name}} {{.CurrentState}} {{.Error}}' | tr '\n' ';')"
    fi
else
    fail "deploy" "$(tail -n 3 "$WORK/deploy.log")"
fi

# 2. One gateway leads with both nodes; the other serves as its edge.
if wait_for 120 serving >/dev/null && read -r LEAD_PORT LEAD <<<"$(serving)" && wait_for 60 nodes_placed "$LEAD_PORT"; then
    OTHER_PORT=$([ "$LEAD" = a ] && echo "$RC_ADMIN_PORT_B" || echo "$RC_ADMIN_PORT")
    if wait_for 30 is_edge "$OTHER_PORT"; then
        pass "one leads" "gateway-$LEAD leads with 2 nodes, epoch $(curl -fsS -m 2 "http://127.0.0.1:$LEAD_PORT/cluster" | python3 -c 'import json,sys; print(json.load(sys.stdin)["control_epoch"])'); the other serves as its edge ($(curl -fsS -m 2 "http://127.0.0.1:$OTHER_PORT/readyz" | tr -d '\n'))"
    else
        fail "one leads" "the other gateway is not an edge: /readyz $(curl -s -m 2 -w ' %{http_code}' "http://127.0.0.1:$OTHER_PORT/readyz")"
    fi
else
    LEAD=
    fail "one serves" "no gateway ready: $(docker service logs --tail 5 "${STACK}_gateway-a" 2>&1 | tail -n 2)"
fi

# 3-5. Bots on both addresses, half on each gateway first; the leading gateway's
# container is killed mid-run.
"$SWARM_BIN" --gateway "127.0.0.1:$RC_CLIENT_PORT,127.0.0.1:$RC_CLIENT_PORT_B" --bots 4 --prefix stka \
    --duration 40 --ramp 2 --json >"$WORK/swarm.json" 2>"$WORK/swarm.err" &
SWARM=$!
"$SWARM_BIN" --gateway "127.0.0.1:$RC_CLIENT_PORT_B,127.0.0.1:$RC_CLIENT_PORT" --bots 4 --prefix stkb \
    --duration 40 --ramp 2 --json >"$WORK/swarm-b.json" 2>"$WORK/swarm-b.err" &
SWARM_B=$!
in_game() { curl -fsS -m 2 "http://127.0.0.1:$LEAD_PORT/cluster" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["sessions"]["in_game"] >= 8 and sum(e["clients"] for e in d.get("edges", [])) >= 4 else 1)'; }
if [ -n "$LEAD" ] && wait_for 40 in_game; then
    pass "play" "8 bots in game, 4 through each gateway (the edge's relayed to gateway-$LEAD)"
else
    fail "play" "$(curl -fsS -m 2 "http://127.0.0.1:$LEAD_PORT/cluster" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sessions"])') $(tail -n 3 "$WORK/swarm.err")"
fi
if [ -n "$LEAD" ]; then
    VICTIM=$(docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_gateway-$LEAD" | head -n 1)
    T0=$(date +%s%N)
    docker kill "$VICTIM" >/dev/null 2>&1
    NEW_PORT=$([ "$LEAD" = a ] && echo "$RC_ADMIN_PORT_B" || echo "$RC_ADMIN_PORT")
    if wait_for 60 ready "$NEW_PORT" && wait_for 60 nodes_placed "$NEW_PORT"; then
        TOOK=$(( ($(date +%s%N) - T0) / 1000000 ))
        if wait_for 60 is_edge "$LEAD_PORT"; then
            pass "takeover" "the other gateway leads with both nodes ${TOOK} ms after the kill; Swarm restarted gateway-$LEAD, an edge again"
        else
            fail "takeover" "gateway-$LEAD did not come back as an edge"
        fi
    else
        fail "takeover" "the other gateway never served: $(docker service logs --tail 5 "${STACK}_gateway-a" 2>&1 | tail -n 2)"
    fi
fi
if wait "$SWARM" && wait "$SWARM_B" && [ -s "$WORK/swarm.json" ] && [ -s "$WORK/swarm-b.json" ]; then
    PG=$(docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_postgres" | head -n 1)
    STORED=$(docker exec -e "PGPASSWORD=$(cat "$RC_SECRETS_DIR/db_password")" "$PG" psql -h 127.0.0.1 -U rc -d rc -Atc "SELECT count(*), count(DISTINCT lower(name)) FROM characters WHERE lower(name) LIKE 'stk%'" 2>/dev/null | tr '|' ' ')
    summary=$(python3 -c 'import json,sys; ds=[json.load(open(p)) for p in sys.argv[1:]]; print(sum(d["in_game"] for d in ds), sum(d["failed"] for d in ds), sum(d["protocol_errors"] for d in ds), sum(d["gateway_loss"]["relogins"] for d in ds))' "$WORK/swarm.json" "$WORK/swarm-b.json")
    read -r IN FAILS PERR RELOGINS <<<"$summary"
    # The edge's bots (those given its address first) kept their sessions through the
    # leader's death: the edge took over with them.
    EDGE_JSON=$([ "$LEAD" = a ] && echo "$WORK/swarm-b.json" || echo "$WORK/swarm.json")
    KEPT_RELOGINS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gateway_loss"]["relogins"])' "$EDGE_JSON")
    if [ "$IN" = 8 ] && [ "$FAILS" = 0 ] && [ "$PERR" = 0 ] && [ "$RELOGINS" -ge 1 ] && [ "$KEPT_RELOGINS" = 0 ] && [ "$STORED" = "8 8" ]; then
        pass "bots back" "8/8 played to the end: the leader's 4 logged in again through the other gateway ($RELOGINS logins), the edge's 4 kept their sessions; 0 protocol errors; 8 characters stored once each"
    else
        fail "bots back" "in game $IN, failed $FAILS, protocol errors $PERR, relogins $RELOGINS (the edge's bots: ${KEPT_RELOGINS:-?}), stored (rows, names) $STORED; errors $(python3 -c 'import json,sys; print([json.load(open(p))["errors"] for p in sys.argv[1:]])' "$WORK/swarm.json" "$WORK/swarm-b.json")"
    fi
else
    fail "bots back" "no swarm summary: $(tail -n 3 "$WORK/swarm.err" "$WORK/swarm-b.err")"
fi
echo "== stack smoke test ($(($(date +%s) - START)) s)"
printf '%s\n' "${RESULTS[@]}"
exit "$FAILED"
