# geoingest's image: `geoingest serve` as a non-root user on slim Debian 12.
#
#   docker build -t geoingest .          # with Docker Hub's golang and debian images
#   scripts/images.sh geoingest          # with podman, from Debian packages only
#
# scripts/images.sh passes GO_IMAGE and RUNTIME_IMAGE built locally (a
# debootstrap root file system, and a builder with this machine's Go
# toolchain) where no registry is reachable. The build is cgo (PROJ, GEOS,
# GDAL); the runtime stage has the shared libraries it links (libproj25,
# proj-data, libgeos-c1v5, libgdal32). The "slim" target is built with
# -tags geoingest_nogdal and has no GDAL: shapefile, GeoJSON and
# GeoParquet only (see docs/usage.md "What it reads").
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${GO_IMAGE} AS build
RUN { dpkg -s libproj-dev && dpkg -s libgeos-dev && dpkg -s libgdal-dev; } >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends libproj-dev libgeos-dev libgdal-dev \
    && rm -rf /var/lib/apt/lists/*; }
WORKDIR /src
COPY . .
# The module and build caches are cache mounts: they outlive the build, so
# a rebuild after a code change compiles only what changed. The ARGs let a
# build use a machine's own caches instead (scripts/images.sh mounts this
# machine's module and build caches and builds without -trimpath, so that
# the packages its tests compiled are reused, and GOPROXY=off: the build
# downloads nothing). geoingest-stack is the compose stack's S3-to-SQS
# wiring (deploy/stack), for the "stack" target.
ARG GOPROXY=https://proxy.golang.org,direct
ARG GOMODCACHE=/go/pkg/mod
ARG GOCACHE=/root/.cache/go-build
ARG BUILDFLAGS=-trimpath
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    export CGO_ENABLED=1 GOFLAGS=-buildvcs=false GOPROXY GOMODCACHE GOCACHE \
    && go build $BUILDFLAGS -ldflags='-s -w' -o /out/geoingest ./cmd/geoingest \
    && go build $BUILDFLAGS -tags geoingest_nogdal -ldflags='-s -w' -o /out/geoingest-slim ./cmd/geoingest \
    && go build $BUILDFLAGS -ldflags='-s -w' -o /out/geoingest-stack ./deploy/stack

# docker build --target stack: the compose stack's init and notification bridge.
FROM ${RUNTIME_IMAGE} AS stack
RUN groupadd --system --gid 10001 geoingest && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin geoingest
COPY --from=build /out/geoingest-stack /usr/local/bin/geoingest-stack
USER 10001:10001
ENTRYPOINT ["geoingest-stack"]

# docker build --target slim: geoingest serve without GDAL (shapefile,
# GeoJSON and GeoParquet; the other formats are refused with a message
# saying this build lacks GDAL).
FROM ${RUNTIME_IMAGE} AS slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libproj25 proj-data libgeos-c1v5 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 geoingest && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/geoingest --create-home --shell /usr/sbin/nologin geoingest
COPY --from=build /out/geoingest-slim /usr/local/bin/geoingest
USER 10001:10001
WORKDIR /var/lib/geoingest
ENV GEOINGEST_HOME=/var/lib/geoingest GEOINGEST_METRICS_ADDR=:9464
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["geoingest", "serve"]

# The default target: geoingest serve.
FROM ${RUNTIME_IMAGE} AS geoingest
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libproj25 proj-data libgeos-c1v5 libgdal32 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 geoingest && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/geoingest --create-home --shell /usr/sbin/nologin geoingest
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
