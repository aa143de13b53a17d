# Sourced by the bench scripts (with ROOT set to the repository): names the client binary
# ($ETHREX, built by ensure_ethrex) and puts the two independent executors on PATH,
# installing the pinned versions if missing (idempotent):
#   - revme 43.0.3 (revm's blockchain-test runner; the revm release the client uses);
#   - geth's evm v1.17.10 (go-ethereum), through the Go module proxy.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
ensure_ethrex() {
    [ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
}
export PATH="$HOME/.cargo/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
REVME_VERSION=43.0.3
GETH_VERSION=v1.17.10
# revme has no --version flag; cargo's install list says which version is installed. Its
# build goes to its own target directory so it never evicts the client's.
if ! command -v revme >/dev/null || ! cargo install --list 2>/dev/null | grep -q "^revme v$REVME_VERSION:"; then
    echo "installing revme $REVME_VERSION ..." >&2
    CARGO_TARGET_DIR="$HOME/.cache/revme-target" cargo install revme --version "$REVME_VERSION" --locked --force >&2
fi
if ! command -v evm >/dev/null || ! evm --version 2>/dev/null | grep -q "${GETH_VERSION#v}"; then
    echo "installing geth evm $GETH_VERSION ..." >&2
    go install "github.com/ethereum/go-ethereum/cmd/evm@$GETH_VERSION" >&2
fi
# The full geth node and devp2p's protocol tester, same release (the p2p oracles), and the
# module's source, whose cmd/devp2p/internal/ethtest/testdata holds the eth-test chain.
for tool in geth devp2p; do
    if ! command -v "$tool" >/dev/null || ! "$tool" --version 2>/dev/null | grep -q "${GETH_VERSION#v}"; then
        echo "installing $tool $GETH_VERSION ..." >&2
        go install "github.com/ethereum/go-ethereum/cmd/$tool@$GETH_VERSION" >&2
    fi
done
GETH_MODULE="$(go env GOMODCACHE)/github.com/ethereum/go-ethereum@$GETH_VERSION"
[ -d "$GETH_MODULE" ] || go mod download "github.com/ethereum/go-ethereum@$GETH_VERSION" >&2
ETHTEST_CHAIN="$GETH_MODULE/cmd/devp2p/internal/ethtest/testdata"
