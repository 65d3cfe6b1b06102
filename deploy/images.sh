#!/usr/bin/env bash
# Build the cluster's Docker images on this machine, whether or not it can pull.
#
#   deploy/images.sh [--profile release|debug] [--base auto|local|registry] [--no-cargo]
#                    [--no-viewer] [--no-prometheus] [--no-env-file] [--no-server]
#
# With a registry (`--base registry`, or `auto` when the base images can be pulled) this is
# just `docker build` of the root Dockerfile, which compiles the workspace inside Docker.
#
# Without one (`--base local`, or `auto` when the pull fails) it:
#   1. makes a Debian bookworm base image once: debootstrap --variant=minbase, trimmed,
#      `docker import`ed as $RC_LOCAL_BASE (skipped when that image exists);
#   2. compiles gateway, zone-node, swarm and rcscript on the host (`cargo build`, the profile
#      given; `--no-cargo` takes the binaries already in target/<profile>, e.g. those
#      `cargo test` built) and stages them in deploy/.prebuilt/ (debug info stripped);
#   3. builds the root Dockerfile with the local base for both stages: its build stage
#      copies deploy/.prebuilt/ instead of running cargo. The host is Debian bookworm, so
#      the binaries link against the same glibc as the image;
#   4. builds deploy/trace-viewer (the OTLP backend with the Jaeger UI, otlp-embedded) on
#      the host and an image of it, $RC_TRACE_IMAGE (skipped when an image built from the
#      same sources exists: it is also tagged by a hash of deploy/trace-viewer's
#      Cargo.toml, Cargo.lock, Dockerfile and src/), and writes TRACE_IMAGE=... into
#      .env so that `docker-compose --profile observe` uses it instead of the upstream
#      Jaeger image (`--no-env-file` leaves .env alone);
#   5. builds Prometheus' image, $RC_PROMETHEUS_IMAGE, from Debian bookworm's `prometheus`
#      package (its two binaries, `apt-get download`ed and unpacked, on the local base:
#      deploy/prometheus/Dockerfile), and writes PROMETHEUS_IMAGE=... into .env.
#      Grafana has no Debian package: users who can pull get it (`--profile dashboards`).
#   6. builds Postgres' image, $RC_POSTGRES_IMAGE, from Debian bookworm's `postgresql-15`
#      package installed on the local base (deploy/postgres/: the upstream image's
#      POSTGRES_* variables and paths, for the Swarm stack, deploy/stack.yml); skipped when
#      it exists. `--no-postgres` skips it.
# deploy/.prebuilt/ and the temporary root filesystem are removed on exit.
#
# `--no-server` skips steps 2 and 3 (it needs no binaries): .ci/run starts it in the
# background while the workspace compiles, so the smoke after the tests finds the base and
# the trace backend already built.
#
# Runs as root (debootstrap, apt-get). Installs debootstrap and protobuf-compiler with
# apt-get when they are missing. Environment: RC_IMAGE (realm-crafter/server:latest),
# RC_TRACE_IMAGE (realm-crafter/trace-viewer:local), RC_PROMETHEUS_IMAGE
# (realm-crafter/prometheus:local), RC_LOCAL_BASE
# (realm-crafter/bookworm-minbase:local), RC_DEBIAN_MIRROR (http://deb.debian.org/debian),
# RUST_IMAGE and RUNTIME_IMAGE (the Dockerfile's defaults).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PROFILE=release
BASE=auto
CARGO=1
VIEWER=1
SERVER=1
PROMETHEUS=1
POSTGRES=1
ENV_FILE=1
IMAGE=${RC_IMAGE:-realm-crafter/server:latest}
TRACE_IMAGE_TAG=${RC_TRACE_IMAGE:-realm-crafter/trace-viewer:local}
PROMETHEUS_IMAGE_TAG=${RC_PROMETHEUS_IMAGE:-realm-crafter/prometheus:local}
POSTGRES_IMAGE_TAG=${RC_POSTGRES_IMAGE:-realm-crafter/postgres:local}
LOCAL_BASE=${RC_LOCAL_BASE:-realm-crafter/bookworm-minbase:local}
MIRROR=${RC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
RUST_IMAGE=${RUST_IMAGE:-rust:1.95-slim-bookworm}
RUNTIME_IMAGE=${RUNTIME_IMAGE:-debian:bookworm-slim}
BINARIES=(gateway zone-node swarm rcscript)

usage() { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "images.sh: $*" >&2; exit 1; }
say() { echo "== images.sh: $*"; }

while [ $# -gt 0 ]; do
    case $1 in
        --profile) PROFILE=${2:-}; shift 2 ;;
        --profile=*) PROFILE=${1#*=}; shift ;;
        --base) BASE=${2:-}; shift 2 ;;
        --base=*) BASE=${1#*=}; shift ;;
        --no-cargo) CARGO=0; shift ;;
        --no-viewer) VIEWER=0; shift ;;
        --no-server) SERVER=0; shift ;;
        --no-prometheus) PROMETHEUS=0; shift ;;
        --no-postgres) POSTGRES=0; shift ;;
        --no-env-file) ENV_FILE=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
case $PROFILE in
    release) CARGO_PROFILE_FLAG=(--release) ;;
    debug) CARGO_PROFILE_FLAG=() ;;
    *) die "--profile must be release or debug" ;;
esac
case $BASE in auto|local|registry) ;; *) die "--base must be auto, local or registry" ;; esac

docker info >/dev/null 2>&1 || die "no Docker daemon answers (docker info failed)"
# The legacy builder: this machine has no buildx, and it is all the Dockerfile needs.
export DOCKER_BUILDKIT=0

WORK=$(mktemp -d /var/tmp/rc-images.XXXXXX)
cleanup() {
    rm -rf "$ROOT/deploy/.prebuilt"
    if [ -d "$WORK/rootfs" ]; then
        # debootstrap mounts /proc and /sys inside the target; never delete through them.
        findmnt -rno TARGET | grep "^$WORK/rootfs" | sort -r | xargs -r -n1 umount -l || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# set_env NAME VALUE: NAME=VALUE in .env (docker-compose reads it), unless --no-env-file.
set_env() {
    [ "$ENV_FILE" = 1 ] || return 0
    touch "$ROOT/.env"
    grep -v "^$1=" "$ROOT/.env" >"$WORK/env" || true
    echo "$1=$2" >>"$WORK/env"
    cat "$WORK/env" >"$ROOT/.env"
    say "wrote $1=$2 to .env (docker-compose reads it)"
}

apt_install() {
    # apt_install COMMAND PACKAGE: install PACKAGE when COMMAND is missing.
    command -v "$1" >/dev/null 2>&1 && return 0
    say "installing $2 (for $1)"
    export DEBIAN_FRONTEND=noninteractive
    # Another install (the CI's, beside this) may hold dpkg's lock: wait for it.
    apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "$2" >/dev/null 2>&1 \
        || { apt-get -o DPkg::Lock::Timeout=300 update -qq \
            && apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "$2" >/dev/null; } \
        || die "apt-get install $2 failed"
}

if [ "$BASE" = auto ]; then
    BASE=registry
    for img in "$RUST_IMAGE" "$RUNTIME_IMAGE"; do
        if ! have_image "$img" && ! timeout 120 docker pull -q "$img" >/dev/null 2>&1; then
            say "cannot pull $img: building from a local base and host binaries"
            BASE=local
            break
        fi
    done
fi

if [ "$BASE" = registry ] && [ "$SERVER" = 0 ]; then
    say "done: the base images can be pulled, nothing to prepare"
    exit 0
fi
if [ "$BASE" = registry ]; then
    say "docker build (cargo inside Docker) -> $IMAGE"
    docker build --build-arg "RUST_IMAGE=$RUST_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" \
        -t "$IMAGE" "$ROOT"
    [ "$VIEWER" = 1 ] && say "trace backend: the upstream Jaeger image (docker-compose.yml's default TRACE_IMAGE)"
    [ "$PROMETHEUS" = 1 ] && say "Prometheus and Grafana: the upstream images (docker-compose.yml's defaults)"
    docker image prune -f --filter label=org.realm-crafter.image >/dev/null || true
    say "done"
    exit 0
fi

# 1. The local base image.
if have_image "$LOCAL_BASE"; then
    say "base $LOCAL_BASE exists"
else
    apt_install debootstrap debootstrap
    say "debootstrap bookworm (minbase) from $MIRROR -> $LOCAL_BASE"
    R=$WORK/rootfs
    debootstrap --variant=minbase bookworm "$R" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
    chroot "$R" apt-get clean
    rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/log/* \
        "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/locale/* "$R"/usr/share/info/*
    tar --numeric-owner -C "$R" -c . | docker import \
        -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'CMD ["/bin/bash"]' - "$LOCAL_BASE" >/dev/null
    say "base $LOCAL_BASE: $(docker image inspect -f '{{.Size}}' "$LOCAL_BASE" | awk '{printf "%d MB", $1/1e6}')"
fi

if [ "$SERVER" = 1 ]; then
    # 2. The binaries, from the host.
    TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
    if [ "$CARGO" = 1 ]; then
        say "cargo build --locked (${PROFILE}) of ${BINARIES[*]}"
        cargo build --locked "${CARGO_PROFILE_FLAG[@]}" -p gateway -p zone-node -p client \
            --bin gateway --bin zone-node --bin swarm --bin rcscript
    fi
    mkdir -p "$ROOT/deploy/.prebuilt"
    for b in "${BINARIES[@]}"; do
        [ -x "$TARGET_DIR/$PROFILE/$b" ] || die "missing $TARGET_DIR/$PROFILE/$b (build it, or drop --no-cargo)"
        cp "$TARGET_DIR/$PROFILE/$b" "$ROOT/deploy/.prebuilt/$b"
        strip --strip-debug "$ROOT/deploy/.prebuilt/$b" 2>/dev/null || true
    done

    # 3. The project's image.
    say "docker build (binaries from deploy/.prebuilt, base $LOCAL_BASE) -> $IMAGE"
    docker build -q --build-arg "RUST_IMAGE=$LOCAL_BASE" --build-arg "RUNTIME_IMAGE=$LOCAL_BASE" \
        -t "$IMAGE" "$ROOT" >/dev/null
    rm -rf "$ROOT/deploy/.prebuilt"
fi

# 4. The trace backend.
if [ "$VIEWER" = 1 ]; then
    # The same sources (and base) make the same image: a hash of them names it, so a
    # machine that built it once does not compile its 146 crates again.
    TV=$ROOT/deploy/trace-viewer
    # `--profile debug` (CI's smoke) builds it unoptimised: its 146 crates then compile in
    # a fraction of the release build's CPU, which CI's tests need more.
    SRC_HASH=$( (cd "$TV" && find Cargo.toml Cargo.lock Dockerfile src -type f | LC_ALL=C sort \
        | xargs sha256sum; docker image inspect -f '{{.Id}}' "$LOCAL_BASE"; echo "$PROFILE") \
        | sha256sum | cut -c1-16)
    TRACE_BY_SOURCE="${TRACE_IMAGE_TAG%:*}:src-$SRC_HASH"
    if have_image "$TRACE_BY_SOURCE"; then
        say "trace backend $TRACE_BY_SOURCE exists (same sources): not rebuilt"
    else
        apt_install protoc protobuf-compiler
        say "cargo build ($PROFILE) of deploy/trace-viewer"
        if [ "$PROFILE" = release ]; then
            cargo build --locked --release --manifest-path "$TV/Cargo.toml" --target-dir "$TV/target"
        else
            CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0 \
                cargo build --locked --manifest-path "$TV/Cargo.toml" --target-dir "$TV/target"
        fi
        mkdir -p "$WORK/viewer"
        cp "$TV/target/$PROFILE/trace-viewer" "$WORK/viewer/"
        say "docker build -> $TRACE_BY_SOURCE"
        docker build -q --build-arg "BASE_IMAGE=$LOCAL_BASE" -f "$TV/Dockerfile" \
            -t "$TRACE_BY_SOURCE" "$WORK/viewer" >/dev/null
    fi
    docker tag "$TRACE_BY_SOURCE" "$TRACE_IMAGE_TAG"
    set_env TRACE_IMAGE "$TRACE_IMAGE_TAG"
fi

# 5. Prometheus, from Debian's package.
if [ "$PROMETHEUS" = 1 ]; then
    P=$WORK/prometheus
    mkdir -p "$P/deb" "$P/context"
    say "apt-get download prometheus (Debian bookworm's package)"
    (cd "$P/deb" && { apt-get download prometheus >/dev/null 2>&1 \
        || { apt-get update -qq && apt-get download prometheus >/dev/null 2>&1; }; }) \
        || die "apt-get download prometheus failed"
    dpkg-deb -x "$P"/deb/prometheus_*.deb "$P/unpacked"
    cp "$P/unpacked/usr/bin/prometheus" "$P/unpacked/usr/bin/promtool" "$P/context/"
    say "docker build -> $PROMETHEUS_IMAGE_TAG ($("$P/context/prometheus" --version 2>&1 | head -n 1))"
    docker build -q --build-arg "BASE_IMAGE=$LOCAL_BASE" -f "$ROOT/deploy/prometheus/Dockerfile" \
        -t "$PROMETHEUS_IMAGE_TAG" "$P/context" >/dev/null
    set_env PROMETHEUS_IMAGE "$PROMETHEUS_IMAGE_TAG"
fi
# 6. Postgres, from Debian's package (apt-get inside the build: the package's many
#    libraries come with it). Kept once built: it does not depend on this repository's code
#    but for deploy/postgres/, whose hash tags it.
if [ "$POSTGRES" = 1 ]; then
    PG_HASH=$(cat "$ROOT/deploy/postgres/Dockerfile" "$ROOT/deploy/postgres/entrypoint.sh" | sha256sum | cut -c1-12)
    PG_BY_SOURCE=${POSTGRES_IMAGE_TAG%:*}:src-$PG_HASH
    if docker image inspect "$PG_BY_SOURCE" >/dev/null 2>&1; then
        say "postgres $PG_BY_SOURCE exists"
    else
        say "docker build (apt-get install postgresql-15) -> $PG_BY_SOURCE"
        docker build -q --build-arg "BASE_IMAGE=$LOCAL_BASE" -t "$PG_BY_SOURCE" \
            "$ROOT/deploy/postgres" >/dev/null || die "building the Postgres image failed"
    fi
    docker tag "$PG_BY_SOURCE" "$POSTGRES_IMAGE_TAG"
fi
# The build stage and the images these tags replaced stay behind untagged: remove those
# (only this project's, by label).
docker image prune -f --filter label=org.realm-crafter.image >/dev/null || true
BUILT=()
[ "$SERVER" = 1 ] && BUILT+=("$IMAGE")
[ "$VIEWER" = 1 ] && BUILT+=("$TRACE_IMAGE_TAG")
[ "$PROMETHEUS" = 1 ] && BUILT+=("$PROMETHEUS_IMAGE_TAG")
[ "$POSTGRES" = 1 ] && BUILT+=("$POSTGRES_IMAGE_TAG")
say "done: $(IFS=,; echo "${BUILT[*]}" | sed 's/,/, /g')"
