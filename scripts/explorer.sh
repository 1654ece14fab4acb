#!/usr/bin/env bash
# Builds and serves the explorer on http://127.0.0.1:8080 (VGG-19 loaded).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup-web.sh"
export TRUNK_SKIP_VERSION_CHECK=true
export PATH="$HOME/.cargo/bin:$ROOT/.tools/node_modules/.bin:$PATH"
PORT="${PORT:-8080}"
echo "Remat explorer: http://127.0.0.1:$PORT/  (Ctrl-C to stop)"
exec trunk serve --release --address 127.0.0.1 --port "$PORT" --open=false
