#!/usr/bin/env bash
# Portable Linux release binaries: x86_64 and aarch64, linked against glibc
# 2.17 (the manylinux2014 level, so they run on RHEL 7/8 and Ubuntu 18.04+
# based CUDA and CANN images), built with cargo-zigbuild, then judged:
#
#   * `objdump -T` shows no GLIBC_ symbol version above 2.17;
#   * the ELF header names the right machine;
#   * each binary passes the bundled example (exit 0) and fails its regressed
#     twin (exit 1): x86_64 natively, aarch64 under qemu-user.
#
#   .ci/portable.sh OUT_DIR [VERSION]
#
# OUT_DIR receives memgate-<triple> for each target. With VERSION (a tag such
# as v0.1.0) it also receives the release assets the Action downloads:
# memgate-VERSION-<triple>.tar.gz and SHA256SUMS.
#
# Needs on PATH: cargo, cargo-zigbuild and zig or python3 with the ziglang
# package (PyPI: ziglang cargo-zigbuild),
# objdump, aarch64-linux-gnu-objdump (binutils-aarch64-linux-gnu),
# qemu-aarch64 (qemu-user) and the aarch64 glibc in /usr/aarch64-linux-gnu
# (libc6-arm64-cross). MEMGATE_PORTABLE_TARGET_DIR (default target/portable)
# keeps this build apart from the host build's target/.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:?usage: .ci/portable.sh OUT_DIR [VERSION]}
version=${2:-}
target_dir=${MEMGATE_PORTABLE_TARGET_DIR:-target/portable}
glibc_max=2.17
triples=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
mkdir -p "$out"

for tool in cargo-zigbuild objdump aarch64-linux-gnu-objdump qemu-aarch64; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool not found (see the header of $0 for what to install)" >&2
        exit 2
    fi
done
# cargo-zigbuild runs `zig`, or else `python3 -m ziglang` (the PyPI package).
if ! command -v zig >/dev/null && ! python3 -m ziglang version >/dev/null 2>&1; then
    echo "error: neither zig nor python3 -m ziglang found (pip install ziglang)" >&2
    exit 2
fi
if [[ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]]; then
    echo "error: no aarch64 glibc in /usr/aarch64-linux-gnu (install libc6-arm64-cross)" >&2
    exit 2
fi

# expect_exit CODE CMD...: run CMD, fail unless it exits with CODE.
expect_exit() {
    local want=$1 got=0
    shift
    "$@" </dev/null >/dev/null || got=$?
    if [[ $got != "$want" ]]; then
        echo "error: \`$*\` exited $got, expected $want" >&2
        exit 1
    fi
    echo "ok: \`$*\` exited $got (expected $want)"
}

# The `.2.17` suffix is cargo-zigbuild's: zig links against glibc 2.17's
# symbol versions. Stripped: the symbols are a third of the file and nobody
# debugs a release binary with them.
targets=()
for t in "${triples[@]}"; do targets+=(--target "$t.$glibc_max"); done
CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --release --locked --bin memgate \
    --target-dir "$target_dir" "${targets[@]}"

for t in "${triples[@]}"; do
    bin="$out/memgate-$t"
    cp "$target_dir/$t/release/memgate" "$bin"
    case $t in
        x86_64-*) objdump=objdump machine='Advanced Micro Devices X86-64' run=() ;;
        aarch64-*) objdump=aarch64-linux-gnu-objdump machine='AArch64'
            run=(qemu-aarch64 -L /usr/aarch64-linux-gnu) ;;
    esac

    if ! readelf -h "$bin" | grep -q "Machine: *$machine\$"; then
        echo "error: $bin is not a $machine ELF file:" >&2
        readelf -h "$bin" >&2
        exit 1
    fi
    # Every versioned glibc symbol the binary imports, newest last.
    versions=$("$objdump" -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV)
    if [[ -z $versions ]]; then
        echo "error: objdump -T found no GLIBC symbol versions in $bin (not dynamically linked?)" >&2
        exit 1
    fi
    newest=$(tail -n1 <<<"$versions")
    if [[ $(printf '%s\n%s\n' "$newest" "$glibc_max" | sort -V | tail -n1) != "$glibc_max" ]]; then
        echo "error: $bin needs GLIBC_$newest, above $glibc_max; symbols:" >&2
        "$objdump" -T "$bin" | grep "GLIBC_$newest" >&2
        exit 1
    fi
    echo "ok: $bin: $(stat -c %s "$bin") bytes, newest glibc symbol version GLIBC_$newest (limit $glibc_max)"

    expect_exit 0 "${run[@]}" "$bin" --version
    expect_exit 0 "${run[@]}" "$bin" check --config examples/memgate.toml
    expect_exit 1 "${run[@]}" "$bin" check --config examples/memgate-regressed.toml
    expect_exit 2 "${run[@]}" "$bin" peak examples/no-such-snapshot.pickle

    if [[ -n $version ]]; then
        # One directory per archive, the binary at the top of it: the Action
        # extracts exactly `memgate`.
        stage=$(mktemp -d)
        cp "$bin" "$stage/memgate"
        cp LICENSE README.md THIRD-PARTY-NOTICES.md "$stage/"
        tar -czf "$out/memgate-$version-$t.tar.gz" -C "$stage" --owner=0 --group=0 --numeric-owner \
            memgate LICENSE README.md THIRD-PARTY-NOTICES.md
        rm -rf "$stage"
    fi
done

if [[ -n $version ]]; then
    (cd "$out" && sha256sum memgate-"$version"-*.tar.gz >SHA256SUMS && sha256sum --check --strict SHA256SUMS)
fi
