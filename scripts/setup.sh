#!/usr/bin/env bash
# Installs the system packages the build needs (idempotent) and builds the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 && ! ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libclang-dev clang >/dev/null
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
cargo build --release --locked -p ethrex
echo "built $CARGO_TARGET_DIR/release/ethrex"
