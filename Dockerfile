# geoingest's image: `geoingest serve` as a non-root user on slim Debian 12.
#
#   docker build -t geoingest .          # with Docker Hub's golang and debian images
#   scripts/images.sh geoingest          # with podman, from Debian packages only
#
# scripts/images.sh passes GO_IMAGE and RUNTIME_IMAGE built locally (a
# debootstrap root file system, and a builder with this machine's Go
# toolchain) where no registry is reachable. The build is cgo (PROJ); the
# runtime stage has the shared libraries it links (libproj25, proj-data).
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${GO_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends libproj-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The module and build caches are cache mounts: they outlive the build, so
# a rebuild after a code change compiles only what changed. GOPROXY may name
# a module cache mounted into the build (scripts/images.sh:
# file:///host-gomodcache), so that the build downloads nothing.
# geoingest-stack is the compose stack's S3-to-SQS wiring (deploy/stack),
# for the "stack" target.
ARG GOPROXY
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    export CGO_ENABLED=1 GOFLAGS=-buildvcs=false GOPROXY="${GOPROXY:-$(go env GOPROXY)}" \
    && go build -trimpath -ldflags='-s -w' -o /out/geoingest ./cmd/geoingest \
    && go build -trimpath -ldflags='-s -w' -o /out/geoingest-stack ./deploy/stack

# docker build --target stack: the compose stack's init and notification bridge.
FROM ${RUNTIME_IMAGE} AS stack
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin geoingest
COPY --from=build /out/geoingest-stack /usr/local/bin/geoingest-stack
USER 10001:10001
ENTRYPOINT ["geoingest-stack"]

# The default target: geoingest serve.

FROM ${RUNTIME_IMAGE} AS geoingest
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libproj25 proj-data \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/geoingest --create-home --shell /usr/sbin/nologin geoingest
COPY --from=build /out/geoingest /usr/local/bin/geoingest
USER 10001:10001
WORKDIR /var/lib/geoingest
# /metrics, /healthz and /readyz on every address of the container (the
# binary's own default is loopback only).
ENV GEOINGEST_HOME=/var/lib/geoingest GEOINGEST_METRICS_ADDR=:9464
EXPOSE 9464
# bash's /dev/tcp: no HTTP client in the image just for the health check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["geoingest", "serve"]
