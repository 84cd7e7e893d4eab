# memgate container image: a static-enough binary on a slim Debian runtime.
#
#   docker build -t memgate .
#   docker run --rm -v "$PWD:/work" --user "$(id -u):$(id -g)" memgate \
#       check --config memgate.toml --junit memgate-junit.xml
#
# Build stage: compile in the official Rust image (Debian bookworm, so the
# binary's glibc matches the runtime stage).
FROM rust:1-bookworm AS build
WORKDIR /src

# Dependencies first, in their own layer: source edits do not refetch or
# rebuild them. Placeholder sources let cargo resolve the lib and bin targets.
COPY Cargo.toml Cargo.lock README.md ./
RUN mkdir src \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src

COPY src ./src
# Newer mtimes than the placeholders' build, so cargo rebuilds memgate itself.
RUN touch src/main.rs src/lib.rs \
    && cargo build --release --locked \
    && strip target/release/memgate

# Runtime stage: no toolchain, no shell tools memgate does not need.
FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="memgate" \
      org.opencontainers.image.description="CI memory-regression gate for PyTorch allocator snapshots (CUDA and Ascend NPU)" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin memgate \
    && mkdir /work \
    && chown memgate:memgate /work
COPY --from=build /src/target/release/memgate /usr/local/bin/memgate

USER memgate
WORKDIR /work
ENTRYPOINT ["memgate"]
CMD ["--help"]
