#!/bin/sh
# Rebuild captured/ from the pinned real clients, offline, in a few minutes.
#   scripts/recapture.sh                 # clients in ./.clients (installed if missing)
#   CONFORMANCE_CLIENTS_DIR=/x scripts/recapture.sh --only claude-code
# Extra arguments go to `python -m conformance.capture.recapture` (--out, --only, --upstream, ...).
# Afterwards `conformance capture --diff OLD NEW` shows what a new client release changed.
set -eu
cd "$(dirname "$0")/.."
CLIENTS="${CONFORMANCE_CLIENTS_DIR:-$PWD/.clients}"
PY="${PYTHON:-python}"
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
INSTALL=""
if [ ! -e "$CLIENTS/node_modules/.bin/claude" ] || [ ! -e "$CLIENTS/node_modules/.bin/opencode" ] \
   || [ ! -e "$CLIENTS/node_modules/.bin/codex" ]; then
  INSTALL="--install"
fi
exec "$PY" -m conformance.capture.recapture --clients "$CLIENTS" $INSTALL "$@"
