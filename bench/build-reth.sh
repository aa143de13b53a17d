#!/usr/bin/env bash
# Builds the peer client reth from its `glamsterdam-devnet-8` branch, outside this repo,
# for timing against ethrex on the same machine (docs/peers.md). Takes 60-120 min on two
# cores; never run in CI.
#
# Usage: RETH_SRC=/path/to/reth-checkout DISCV5_SRC=/path/to/discv5-checkout \
#            bench/build-reth.sh [--check]
#
#   RETH_SRC    a git checkout of paradigmxyz/reth on branch glamsterdam-devnet-8. Its
#               manifests and Cargo.lock are edited in place (never anything in this repo).
#   DISCV5_SRC  a git checkout of sigp/discv5 at the commit reth's Cargo.lock pins.
#   CARGO_TARGET_DIR  default $HOME/.cache/reth-target.
#   --check     apply the changes, resolve and download the dependencies (cargo metadata,
#               cargo fetch) and stop: fast, no compilation.
#
# The branch pins git dependencies cargo cannot reach here. The changes, each printed as
# it is made (a second run finds them made and changes nothing):
#   - revm and its sub-crates, alloy-evm and the reth-core crates (reth-codecs,
#     reth-codecs-derive, reth-primitives-traits, reth-rpc-traits, reth-zstd-compressors):
#     the `[patch.crates-io]` git pins removed, the workspace versions raised to the
#     crates.io releases made for devnet-8: revm 43.0.3, alloy-evm 0.39.0, reth-core
#     0.7.0; revm-inspectors 0.42.2 -> 0.43.0 to match that revm;
#   - revmc (git, branch glamsterdam-devnet-8) dropped with the `jit` default feature of
#     the reth binary;
#   - discv5 (git, rev 7663c00) taken from DISCV5_SRC by path;
#   - Cargo.lock updated by cargo for those entries only (everything else stays as
#     locked), then the build runs with --locked.
set -euo pipefail

BRANCH=glamsterdam-devnet-8
DOC_COMMIT=3d270d933daeeb90c5735d81ff7f80c00322d6de   # the commit docs/peers.md records
DISCV5_COMMIT=7663c00ee0837ea98547caaedede95d9d6736f4d

CHECK=0
case "${1:-}" in
    --check) CHECK=1 ;;
    "") ;;
    *) echo "usage: RETH_SRC=path DISCV5_SRC=path bench/build-reth.sh [--check]" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
: "${RETH_SRC:?set RETH_SRC to a reth checkout of branch $BRANCH}"
: "${DISCV5_SRC:?set DISCV5_SRC to a sigp/discv5 checkout at $DISCV5_COMMIT}"
RETH_SRC="$(cd "$RETH_SRC" && pwd)"
DISCV5_SRC="$(cd "$DISCV5_SRC" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/reth-target}"
mkdir -p "$CARGO_TARGET_DIR"
CARGO_TARGET_DIR="$(cd "$CARGO_TARGET_DIR" && pwd)"

inside_repo() { case "$1/" in "$ROOT"/*) return 0 ;; *) return 1 ;; esac; }
for d in "$RETH_SRC" "$DISCV5_SRC" "$CARGO_TARGET_DIR"; do
    if inside_repo "$d"; then
        echo "error: $d is inside this repo ($ROOT); reth is built outside it" >&2
        exit 1
    fi
done

# --- the checkouts -------------------------------------------------------------------
git -C "$RETH_SRC" rev-parse --git-dir >/dev/null 2>&1 \
    || { echo "error: RETH_SRC=$RETH_SRC is not a git checkout" >&2; exit 1; }
head="$(git -C "$RETH_SRC" rev-parse HEAD)"
branch="$(git -C "$RETH_SRC" rev-parse --abbrev-ref HEAD)"
on_branch=0
[ "$branch" = "$BRANCH" ] && on_branch=1
for ref in "refs/remotes/origin/$BRANCH" "refs/heads/$BRANCH"; do
    if [ "$(git -C "$RETH_SRC" rev-parse -q --verify "$ref^{commit}" 2>/dev/null)" = "$head" ]; then
        on_branch=1
    fi
done
if [ "$on_branch" != 1 ]; then
    echo "error: RETH_SRC is at $head ($branch), not on branch $BRANCH" >&2
    echo "       (git -C $RETH_SRC checkout $BRANCH)" >&2
    exit 1
fi
echo "reth:   $RETH_SRC, branch $BRANCH, commit $head"
echo "        $(git -C "$RETH_SRC" log -1 --format='%ci %s' HEAD)"
if [ "$head" != "$DOC_COMMIT" ]; then
    echo "note:   docs/peers.md records $DOC_COMMIT; the edits below may not all apply"
fi
if [ ! -f "$RETH_SRC/bin/reth/Cargo.toml" ] || [ ! -f "$RETH_SRC/Cargo.lock" ]; then
    echo "error: $RETH_SRC has no bin/reth/Cargo.toml or Cargo.lock (checkout incomplete?)" >&2
    exit 1
fi
# Files other than the ones this script edits must be as committed.
other="$(git -C "$RETH_SRC" status --porcelain --untracked-files=no \
    | grep -vE ' (Cargo\.toml|Cargo\.lock|bin/reth/Cargo\.toml|crates/ethereum/evm/Cargo\.toml)$' || true)"
if [ -n "$other" ]; then
    echo "error: RETH_SRC has local changes this script did not make:" >&2
    echo "$other" >&2
    exit 1
fi

git -C "$DISCV5_SRC" rev-parse --git-dir >/dev/null 2>&1 \
    || { echo "error: DISCV5_SRC=$DISCV5_SRC is not a git checkout" >&2; exit 1; }
dhead="$(git -C "$DISCV5_SRC" rev-parse HEAD)"
# The commit reth pins, as its Cargo.lock names it (before the edits; git otherwise).
pinned="$(git -C "$RETH_SRC" show HEAD:Cargo.lock \
    | sed -n 's|^source = "git+https://github.com/sigp/discv5?rev=[0-9a-f]*#\([0-9a-f]*\)"$|\1|p' | head -1)"
pinned="${pinned:-$DISCV5_COMMIT}"
if [ "$dhead" != "$pinned" ]; then
    echo "error: DISCV5_SRC is at $dhead; reth pins $pinned" >&2
    echo "       (git -C $DISCV5_SRC checkout $pinned)" >&2
    exit 1
fi
if [ -n "$(git -C "$DISCV5_SRC" status --porcelain --untracked-files=no)" ]; then
    echo "error: DISCV5_SRC has local changes" >&2
    exit 1
fi
echo "discv5: $DISCV5_SRC, commit $dhead (the commit reth pins)"

# --- the changes ---------------------------------------------------------------------
# Literal, exact replacements (python): each `old` text must occur once; one whose `old`
# is absent and whose `new` is present counts as made.
echo "changes (in $RETH_SRC):"
REVM_GIT='{ git = "https://github.com/bluealloy/revm", rev = "0cc8b8a0b38e88864352b218a145dcfd0a54692d" }'
CORE_GIT='{ git = "https://github.com/paradigmxyz/reth-core", rev = "1207f7ff0534f6a7fe4d9661ea20d070b67d9c8b" }'
RETH_SRC="$RETH_SRC" DISCV5_SRC="$DISCV5_SRC" REVM_GIT="$REVM_GIT" CORE_GIT="$CORE_GIT" python3 - <<'PY'
import os, sys

src = os.environ["RETH_SRC"]
revm_git = os.environ["REVM_GIT"]
core_git = os.environ["CORE_GIT"]
discv5 = os.environ["DISCV5_SRC"].replace("\\", "\\\\").replace('"', '\\"')

# (file, why, old, new): `old` must occur exactly once, or `new` must already be there.
edits = []
def edit(path, why, old, new):
    edits.append((path, why, old, new))

W = "Cargo.toml"
for name, old, new in [
    ("revm", '{ version = "42.0.1", default-features = false }', '{ version = "=43.0.3", default-features = false }'),
    ("revm-inspectors", '"0.42.2"', '"=0.43.0"'),
    ("alloy-evm", '{ version = "0.38.0", default-features = false }', '{ version = "=0.39.0", default-features = false }'),
    ("reth-codecs", '{ version = "0.6.0", default-features = false }', '{ version = "=0.7.0", default-features = false }'),
    ("reth-codecs-derive", '"0.6.0"', '"=0.7.0"'),
    ("reth-primitives-traits", '{ version = "0.6.0", default-features = false }', '{ version = "=0.7.0", default-features = false }'),
    ("reth-rpc-traits", '{ version = "0.6.0", default-features = false }', '{ version = "=0.7.0", default-features = false }'),
    ("reth-zstd-compressors", '{ version = "0.6.0", default-features = false }', '{ version = "=0.7.0", default-features = false }'),
]:
    edit(W, f"workspace dependency {name}: the crates.io release for devnet-8",
         f"\n{name} = {old}\n", f"\n{name} = {new}\n")

edit(W, "workspace dependency revmc (git, unreachable): dropped with the JIT",
     '\nrevmc = { git = "https://github.com/paradigmxyz/revmc", branch = "glamsterdam-devnet-8", '
     'default-features = false, features = ["llvm-prefer-static"] }\n',
     "\n")  # `new` ("\n") is trivially present: checked by absence of `old` below
edit(W, "workspace dependency discv5 (git, unreachable): from DISCV5_SRC at the pinned commit",
     '\ndiscv5 = { git = "https://github.com/sigp/discv5", rev = "7663c00" }\n',
     f'\ndiscv5 = {{ path = "{discv5}" }}\n')

patch_old = "[patch.crates-io]\n" + "".join(
    f"{c} = {revm_git}\n" for c in [
        "revm", "revm-bytecode", "revm-context", "revm-context-interface", "revm-database",
        "revm-database-interface", "revm-handler", "revm-inspector", "revm-interpreter",
        "revm-precompile", "revm-primitives", "revm-state"]
) + 'alloy-evm = { git = "https://github.com/alloy-rs/evm", rev = "065a125cde3a5c69990323aecab97ce4ed048237" }\n' + "".join(
    f"{c} = {core_git}\n" for c in [
        "reth-codecs", "reth-codecs-derive", "reth-primitives-traits", "reth-rpc-traits",
        "reth-zstd-compressors"])
edit(W, "[patch.crates-io] git pins of revm (12 crates), alloy-evm and reth-core (5): removed",
     patch_old, "")

E = "crates/ethereum/evm/Cargo.toml"
edit(E, "reth-evm-ethereum: optional dependency revmc removed",
     '\nrevmc = { workspace = true, features = ["alloy-evm"], optional = true }\n', "\n")
edit(E, "reth-evm-ethereum: feature jit no longer pulls revmc (the feature cannot be built)",
     '\njit = [\n    "std",\n    "dep:revmc",\n', '\njit = [\n    "std",\n')

B = "bin/reth/Cargo.toml"
edit(B, "reth binary: `jit` removed from the default features",
     '    "js-tracer",\n    "jit",\n    "keccak-cache-global",\n',
     '    "js-tracer",\n    "keccak-cache-global",\n')

texts = {}
failed = False
for path, why, old, new in edits:
    full = os.path.join(src, path)
    text = texts.get(path)
    if text is None:
        text = texts[path] = open(full).read()
    n = text.count(old)
    if n == 1:
        texts[path] = text.replace(old, new, 1)
        print(f"  changed  {path}: {why}")
        for line in old.strip("\n").splitlines():
            print(f"           - {line}")
        for line in new.strip("\n").splitlines():
            print(f"           + {line}")
    elif n == 0 and (new.strip() == "" or new in text):
        print(f"  unchanged {path}: {why} (already made)")
    else:
        print(f"  FAILED   {path}: {why}: expected text found {n} times", file=sys.stderr)
        failed = True
if failed:
    sys.exit("error: the manifests are not the ones this script knows (another commit?)")
for path, text in texts.items():
    full = os.path.join(src, path)
    if open(full).read() != text:
        open(full, "w").write(text)
PY

cd "$RETH_SRC"
# Cargo.lock: cargo updates only the entries the manifest changes touch.
before="$(mktemp)"
cp Cargo.lock "$before"
cargo metadata --format-version 1 >/dev/null
if cmp -s "$before" Cargo.lock; then
    echo "  unchanged Cargo.lock: already resolved for the changes above"
else
    echo "  changed  Cargo.lock (by cargo, for the changed dependencies only):"
    python3 - "$before" Cargo.lock <<'PY'
import sys, tomllib
def pkgs(path):
    with open(path, "rb") as f:
        lock = tomllib.load(f)
    out = {}
    for p in lock["package"]:
        src = p.get("source", "path")
        src = "git" if src.startswith("git+") else "crates.io" if src.startswith("registry+") else src
        out.setdefault(p["name"], set()).add(f'{p["version"]} ({src})')
    return out
a, b = pkgs(sys.argv[1]), pkgs(sys.argv[2])
for name in sorted(set(a) | set(b)):
    old, new = a.get(name, set()), b.get(name, set())
    if old != new:
        print(f"           {name}: {', '.join(sorted(old - new)) or '-'} -> {', '.join(sorted(new - old)) or '-'}")
PY
fi
rm -f "$before"
echo "Cargo.lock against the commit: $(git diff --shortstat HEAD -- Cargo.lock)"

# No git source may remain, and the replaced crates must resolve to one version each.
if grep -q '^source = "git+' Cargo.lock; then
    echo "error: git sources remain in Cargo.lock:" >&2
    grep -B2 '^source = "git+' Cargo.lock | grep -E '^(name|source)' >&2
    exit 1
fi
for c in revm revm-primitives revm-context revm-handler revm-precompile alloy-evm revm-inspectors \
    reth-codecs reth-primitives-traits reth-rpc-traits reth-zstd-compressors discv5; do
    vs="$(awk -v n="$c" '$0 == "name = \"" n "\"" {getline; gsub(/version = |"/, ""); print}' Cargo.lock | tr '\n' ' ')"
    if [ "$(echo $vs | wc -w)" != 1 ]; then
        echo "error: $c resolves to versions: $vs" >&2
        exit 1
    fi
    printf '  %-24s %s\n' "$c" "$vs"
done
if grep -q '^name = "revmc' Cargo.lock; then
    echo "error: revmc is still in Cargo.lock" >&2
    exit 1
fi

cargo fetch --locked
if [ "$CHECK" = 1 ]; then
    echo "check: the changes apply, every dependency resolves and is downloaded (no compile)"
    exit 0
fi

# --- the build -----------------------------------------------------------------------
# System packages (idempotent): libclang for the MDBX bindings (bindgen), m4 for the GMP
# that gmp-mpfr-sys builds from source (reth's default `gmp` feature: revm's modexp).
missing=()
for pkg in libclang-dev clang m4 make; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "building: nice -n 19 cargo build --release --locked -p reth --bin reth (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
start=$(date +%s)
nice -n 19 cargo build --release --locked -p reth --bin reth
end=$(date +%s)
BIN="$CARGO_TARGET_DIR/release/reth"
echo "built in $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s"
echo "binary: $BIN"
"$BIN" --version
