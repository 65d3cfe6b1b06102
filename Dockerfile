# The cluster's image: `gateway`, `zone-node`, the `swarm` load tool and the `rcscript`
# script checker on Debian bookworm.
#
# With a registry:   docker compose build          (or docker-compose build; plain docker build .)
# Without one:       deploy/images.sh              (see docs/operations.md, "Deploying with docker-compose")
#
# The base images are build arguments so that a machine that cannot pull them can pass
# local ones. deploy/images.sh builds a Debian bookworm base with debootstrap, compiles the
# binaries on the host (same Debian, same glibc) and puts them in deploy/.prebuilt/, which
# the build stage then copies instead of running cargo. Without deploy/.prebuilt/ (the
# normal case, and the only one in git) the build stage compiles the workspace.

ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
# Labels let deploy/images.sh remove only this project's dangling images.
LABEL org.realm-crafter.image=build
WORKDIR /src
COPY . .
RUN set -eu; \
    mkdir -p /out; \
    if [ -d deploy/.prebuilt ]; then \
        echo "using the binaries in deploy/.prebuilt (made by deploy/images.sh)"; \
        cp deploy/.prebuilt/gateway deploy/.prebuilt/zone-node deploy/.prebuilt/swarm deploy/.prebuilt/rcscript /out/; \
    else \
        cargo build --release --locked -p gateway -p zone-node -p client --bin gateway --bin zone-node --bin swarm --bin rcscript; \
        cp target/release/gateway target/release/zone-node target/release/swarm target/release/rcscript /out/; \
    fi

FROM ${RUNTIME_IMAGE}
LABEL org.realm-crafter.image=server
# An unprivileged user; /data (the gateway's SQLite database and certificate) is its own,
# so a named volume mounted there starts out owned by it.
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin rc \
    && mkdir -p /data \
    && chown rc /data
COPY --from=build /out/ /usr/local/bin/
USER rc
WORKDIR /data
# Players (QUIC), zone nodes (QUIC), admin HTTP.
EXPOSE 25000/udp 25001/udp 9180/tcp
ENV GATEWAY_DATA_DIR=/data
# Zone nodes in other containers reach the gateway here (the gateway's own default is
# loopback only); the container's network decides who can.
ENV GATEWAY_INTERNAL_LISTEN=0.0.0.0:25001
ENTRYPOINT ["/usr/local/bin/gateway"]
