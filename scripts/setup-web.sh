#!/usr/bin/env bash
# Installs what the explorer's build and browser tests need, skipping every
# piece that is already present at the right version (so it is cheap to call
# from explorer.sh and browser-tests.sh on every run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TRUNK_SKIP_VERSION_CHECK=true
export PATH="$HOME/.cargo/bin:$ROOT/.tools/node_modules/.bin:$PATH"

TRUNK_VERSION=0.21.14
BINARYEN_VERSION=132.0.0
say() { printf '[setup-web] %s\n' "$*"; }

# 1. wasm target
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# 2. trunk (0.22 needs a newer rustc than this project's)
if ! trunk --version 2>/dev/null | grep -q " $TRUNK_VERSION\$"; then
  say "installing trunk $TRUNK_VERSION (about 9 minutes on 2 cores)"
  cargo install trunk --version "=$TRUNK_VERSION" --locked
fi

# 3. wasm-bindgen-cli: must equal the wasm-bindgen crate in Cargo.lock exactly.
WB_VERSION="$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"$/\1/p' | head -1)"
if [ -z "$WB_VERSION" ]; then
  say "cannot read the wasm-bindgen version from Cargo.lock"; exit 1
fi
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WB_VERSION\$"; then
  say "installing wasm-bindgen-cli $WB_VERSION (about 4 minutes)"
  # No --locked: its own lockfile pins a crate version the registry lacks.
  cargo install wasm-bindgen-cli --version "=$WB_VERSION"
fi

# 4. wasm-opt from npm's binaryen: Debian's v108 silently breaks the wasm.
if [ ! -x "$ROOT/.tools/node_modules/.bin/wasm-opt" ]; then
  say "installing binaryen (wasm-opt) from npm into .tools/"
  mkdir -p "$ROOT/.tools"
  [ -f "$ROOT/.tools/package.json" ] || echo '{"name":"remat-tools","private":true}' > "$ROOT/.tools/package.json"
  (cd "$ROOT/.tools" && npm install --no-audit --no-fund "binaryen@$BINARYEN_VERSION")
fi

# 5. a browser for the tests and screenshots
if [ ! -x /usr/bin/chromium ]; then
  say "installing Debian chromium"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  $SUDO apt-get install -y chromium
fi

# 6. playwright-core (drives /usr/bin/chromium; it never downloads a browser)
#    and axe-core (the accessibility checks), pinned in tests/package.json.
if [ ! -d "$ROOT/tests/node_modules/playwright-core" ] || [ ! -f "$ROOT/tests/node_modules/axe-core/axe.min.js" ]; then
  say "installing playwright-core and axe-core in tests/"
  if [ -f "$ROOT/tests/package-lock.json" ]; then
    (cd "$ROOT/tests" && npm ci --no-audit --no-fund)
  else
    (cd "$ROOT/tests" && npm install --no-audit --no-fund)
  fi
fi

say "ok: trunk $(trunk --version | awk '{print $2}'), wasm-bindgen $WB_VERSION, $(wasm-opt --version | head -1)"
