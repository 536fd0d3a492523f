#!/usr/bin/env bash
# Build what iolens ships, under target/dist/:
#   iolens-VERSION-x86_64-linux   the static binary (glibc linked statically:
#                                 no shared libraries, no program interpreter)
#   man/iolens.1.gz, completions/ generated from the CLI (iolens generate)
#   iolens_VERSION-1_amd64.deb    cargo-deb: binary, man page, completions,
#                                 recorder and exporter units (disabled),
#                                 example config, copyright
#   iolens-VERSION-1.x86_64.rpm   cargo-generate-rpm, when it installs
# cargo-deb (and cargo-generate-rpm) are installed from the crate registry
# when missing. NO_PACKAGES=1 stops after the binary, man page and
# completions.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
dist=target/dist
bin=target/$target/release/iolens

# --target keeps build scripts and proc macros (host artifacts, which
# cannot be static) out of the static flag.
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --release --locked --target "$target"

if readelf -lW "$bin" | grep -q 'INTERP' || readelf -d "$bin" | grep -q '(NEEDED)'; then
  echo "dist.sh: $bin is not static:" >&2
  readelf -d "$bin" | grep NEEDED >&2 || true
  exit 1
fi

rm -rf "$dist"
mkdir -p "$dist/man" "$dist/completions"
cp "$bin" "$dist/iolens-$version-x86_64-linux"
strip "$dist/iolens-$version-x86_64-linux"
"$bin" generate man > "$dist/man/iolens.1"
gzip -9n < "$dist/man/iolens.1" > "$dist/man/iolens.1.gz"
"$bin" generate completions bash > "$dist/completions/iolens.bash"
"$bin" generate completions zsh > "$dist/completions/_iolens"
"$bin" generate completions fish > "$dist/completions/iolens.fish"

if [ "${NO_PACKAGES:-}" = 1 ]; then
  ls -l "$dist" "$dist/man" "$dist/completions"
  exit 0
fi

command -v cargo-deb >/dev/null || cargo install cargo-deb --locked
cargo deb --no-build --target "$target" --output "$dist/"

if command -v cargo-generate-rpm >/dev/null || cargo install cargo-generate-rpm --locked; then
  cargo generate-rpm --target "$target" --output "$dist/" ||
    echo "dist.sh: no .rpm (cargo generate-rpm failed)" >&2
else
  echo "dist.sh: no .rpm (cargo-generate-rpm did not install)" >&2
fi
ls -l "$dist"
