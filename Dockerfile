# memgate container image: the portable binary (glibc 2.17 symbol versions,
# built with cargo-zigbuild like the release assets) on distroless's glibc
# base, debug variant: BusyBox's shell at /busybox/sh (on PATH), which
# GitLab's docker executor needs to run a job's script. About 20 MB
# (estimated from the parts: the base is ~15 MB, memgate 5 MB).
#
#   docker build -t memgate .
#   docker run --rm -v "$PWD:/work" -w /work --user "$(id -u):$(id -g)" memgate \
#       check --config memgate.toml --junit memgate-junit.xml
#
# Multi-arch: `docker buildx build --platform linux/amd64,linux/arm64 .`; the
# build stage runs on the builder's own platform and cross-links with zig,
# so nothing runs under emulation.
#
# GitLab CI: the entrypoint is memgate itself, and GitLab runs a job's
# `script` through the image's shell, so a job using this image needs
#
#   image:
#     name: memgate:latest
#     entrypoint: [""]
#
# Base images are pinned by digest (a tag can be moved, a digest cannot);
# refresh both with `docker buildx imagetools inspect IMAGE:TAG`.

FROM --platform=$BUILDPLATFORM rust:1.88.0-slim-bookworm@sha256:38bc5a86d998772d4aec2348656ed21438d20fcdce2795b56ca434cf21430d89 AS build
ARG TARGETARCH

# zig and cargo-zigbuild come from PyPI, at the versions CI pins.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-venv \
    && rm -rf /var/lib/apt/lists/*
COPY .ci/build-tools.txt /tmp/build-tools.txt
RUN python3 -m venv /opt/tools \
    && /opt/tools/bin/pip install --no-cache-dir --quiet -r /tmp/build-tools.txt
ENV PATH=/opt/tools/bin:$PATH

WORKDIR /src
# Only what the build reads: the crate, the workspace's other member's
# manifest and sources (cargo loads every member), and the example budget
# file that src/ includes.
COPY Cargo.toml Cargo.lock README.md thresholds.example.toml ./
COPY src ./src
COPY python/Cargo.toml ./python/Cargo.toml
COPY python/src ./python/src

RUN case "$TARGETARCH" in \
        amd64) triple=x86_64-unknown-linux-gnu ;; \
        arm64) triple=aarch64-unknown-linux-gnu ;; \
        *) echo "no memgate build for $TARGETARCH" >&2; exit 1 ;; \
    esac \
    && rustup target add "$triple" \
    && CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --release --locked --bin memgate \
        --target "$triple.2.17" \
    && cp "target/$triple/release/memgate" /memgate

# Runtime: glibc (memgate links libc, libpthread and libdl only), no
# package manager, BusyBox for a shell; the :debug-nonroot variant.
FROM gcr.io/distroless/base-nossl-debian12:debug-nonroot@sha256:83b8737817cda240f3f75e9acaa2b6fa547e2693e7e8dc4594c7ce98a0e5765e
LABEL org.opencontainers.image.title="memgate" \
      org.opencontainers.image.description="CI memory-regression gate for PyTorch allocator snapshots (CUDA and Ascend NPU)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://example.invalid/memgate"

COPY --from=build /memgate /usr/local/bin/memgate

# distroless's nonroot user, numeric, so a cluster's runAsNonRoot can verify
# it without reading /etc/passwd.
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["memgate"]
CMD ["--help"]
