# Dockerfile - the rayop image: one binary (bin/rayop) that every container of the Pod runs with
# its own subcommand (rayop watcher, rayop controller KIND). Build and push: docs/deploy.md.
#
# Stage 1 builds on Debian with the -dev packages rayop compiles against; stage 2 carries only
# their runtime libraries. tests/integration/deploy_image.sh checks that RUNTIME_PACKAGES (with
# the packages they depend on) provide every library `ldd bin/rayop` lists, so keep the list here
# in one line.
ARG DEBIAN_RELEASE=bookworm

FROM debian:${DEBIAN_RELEASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential ca-certificates \
      libcurl4-openssl-dev libmsgpack-dev libcjson-dev libyaml-dev libuv1-dev \
      libmicrohttpd-dev libgnutls28-dev uthash-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make -j"$(nproc)" bin/rayop && strip bin/rayop

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# RUNTIME_PACKAGES: libcurl4 libcjson1 libyaml-0-2 libuv1 libmicrohttpd12 libgnutls30 libjemalloc2 ca-certificates
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcurl4 libcjson1 libyaml-0-2 libuv1 libmicrohttpd12 libgnutls30 libjemalloc2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/rayop /usr/local/bin/rayop
# Non-root (the chart's runAsNonRoot/runAsUser match): the processes write only to the Pod's
# emptyDirs (/dev/shm for the cache segment, /run/rayop for the socket); the root filesystem is
# read-only.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/rayop"]
CMD ["--help"]
