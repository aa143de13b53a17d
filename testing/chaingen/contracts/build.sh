#!/usr/bin/env bash
# Rebuilds out/<Contract>.bin (creation code) and out/<Contract>.bin-runtime (runtime code)
# from src/*.sol with solc 0.8.37 (solcjs from npm, optimizer on, EVM version cancun, no
# metadata hash, so the output depends on the code only). Idempotent: rerunning it on
# unchanged sources rewrites byte-identical files. The Rust workload loads out/ with
# include_str!, so rerun this after editing a contract and commit out/ with the sources.
set -euo pipefail
cd "$(dirname "$0")"

SOLC_VERSION=0.8.37
installed=""
if [ -f node_modules/solc/package.json ]; then
  installed=$(node -p 'require("./node_modules/solc/package.json").version')
fi
if [ "$installed" != "$SOLC_VERSION" ]; then
  # --no-save/--no-package-lock: nothing but node_modules/ (git-ignored) is written.
  npm install --silent --no-save --no-package-lock --no-audit --no-fund "solc@$SOLC_VERSION"
fi
node build.js
