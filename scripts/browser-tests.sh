#!/usr/bin/env bash
# Builds the explorer and the CLI, serves dist/ on a free port and runs the
# Playwright tests (tests/*.test.mjs) in Debian's chromium.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup-web.sh" || { echo "BROWSER TESTS: FAIL (setup)"; exit 1; }
export TRUNK_SKIP_VERSION_CHECK=true
export PATH="$HOME/.cargo/bin:$ROOT/.tools/node_modules/.bin:$PATH"

# In the `ci` profile the lints and the core's wasm tests use (release
# without its link-time optimization and single codegen unit: the same
# code; the proc-macros and build scripts the lints compiled serve it
# too); scripts/explorer.sh serves the release build, which
# REMAT_TRUNK_PROFILE=release tests.
PROFILE="${REMAT_TRUNK_PROFILE:-ci}"
echo "== trunk build --release --cargo-profile $PROFILE"
trunk build --release --cargo-profile "$PROFILE" || { echo "BROWSER TESTS: FAIL (trunk build)"; exit 1; }
# scripts/test.sh has built the CLI already (REMAT_CLI); alone, build it.
if [ -z "${REMAT_CLI:-}" ] || [ ! -x "$REMAT_CLI" ]; then
  echo "== cargo build --release -p remat-cli"
  cargo build --release -p remat-cli || { echo "BROWSER TESTS: FAIL (CLI build)"; exit 1; }
  REMAT_CLI="$ROOT/target/release/remat"
fi

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$ROOT/dist" >/tmp/remat-http-$PORT.log 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null' EXIT
for _ in $(seq 50); do
  curl -fs "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break
  sleep 0.1
done

echo "== browser tests against http://127.0.0.1:$PORT/"
export EXPLORER_URL="http://127.0.0.1:$PORT/"
export REMAT_CLI
(cd "$ROOT/tests" && node --test --test-concurrency=1 --test-reporter=spec ./*.test.mjs)
STATUS=$?
if [ "$STATUS" -eq 0 ]; then
  echo "BROWSER TESTS: PASS"
else
  echo "BROWSER TESTS: FAIL (exit $STATUS; see the failing tests above)"
fi
exit "$STATUS"
