# geoingest's image: `geoingest serve` as a non-root user on slim Debian 12.
#
#   docker build -t geoingest .          # with Docker Hub's golang and debian images
#   scripts/images.sh geoingest          # with podman, from Debian packages only
#
# The build is cgo (PROJ, GEOS, GDAL); the runtime stages have the shared
# libraries it links (libproj25, proj-data, libgeos-c1v5, libgdal32). The
# "slim" target is built with -tags geoingest_nogdal and has no GDAL:
# shapefile, GeoJSON and GeoParquet only (see docs/usage.md "What it reads").
#
# Where the binaries come from (BINARIES): "build" (the default) compiles
# them in GO_IMAGE with deploy/images/binaries.sh. "prebuilt" takes them
# from bin/ in the build context instead: scripts/images.sh runs the same
# binaries.sh on the host, which has the toolchain and the build cache its
# tests just filled and the same Debian 12 (so the same glibc, GDAL and PROJ
# sonames as RUNTIME_IMAGE), and builds only the runtime stages below, from
# RUNTIME_IMAGE, its debootstrap root, with this file (-f) and a context
# that holds bin/ alone. Only the stage BINARIES names is built.
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim
ARG BINARIES=build

FROM ${GO_IMAGE} AS build
RUN { dpkg -s libproj-dev && dpkg -s libgeos-dev && dpkg -s libgdal-dev; } >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends libproj-dev libgeos-dev libgdal-dev \
    && rm -rf /var/lib/apt/lists/*; }
WORKDIR /src
COPY . .
# The module and build caches are cache mounts: they outlive the build, so
# a rebuild after a code change compiles only what changed.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    sh deploy/images/binaries.sh /out -trimpath

FROM scratch AS prebuilt
COPY bin/geoingest bin/geoingest-slim bin/geoingest-stack /out/

FROM ${BINARIES} AS binaries

# docker build --target stack: the compose stack's init and notification bridge.
FROM ${RUNTIME_IMAGE} AS stack
RUN groupadd --system --gid 10001 geoingest && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin geoingest
COPY --from=binaries /out/geoingest-stack /usr/local/bin/geoingest-stack
USER 10001:10001
ENTRYPOINT ["geoingest-stack"]

# What the slim and the default target share (one apt layer, built once):
# PROJ and GEOS, the user, and serve's settings and health check.
FROM ${RUNTIME_IMAGE} AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libproj25 proj-data libgeos-c1v5 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 geoingest && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/geoingest --create-home --shell /usr/sbin/nologin geoingest
WORKDIR /var/lib/geoingest
# /metrics, /healthz and /readyz on every address of the container (the
# binary's own default is loopback only).
ENV GEOINGEST_HOME=/var/lib/geoingest GEOINGEST_METRICS_ADDR=:9464
EXPOSE 9464
# bash's /dev/tcp: no HTTP client in the image just for the health check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["geoingest", "serve"]

# docker build --target slim: geoingest serve without GDAL (shapefile,
# GeoJSON and GeoParquet; the other formats are refused with a message
# saying this build lacks GDAL).
FROM runtime AS slim
COPY --from=binaries /out/geoingest-slim /usr/local/bin/geoingest
USER 10001:10001

# The default target: geoingest serve.
FROM runtime AS geoingest
RUN apt-get update && apt-get install -y --no-install-recommends libgdal32 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=binaries /out/geoingest /usr/local/bin/geoingest
USER 10001:10001
