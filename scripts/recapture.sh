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
# every launchable client profile's CLI must be in the prefix, else it is installed first
MISSING=$("$PY" -c 'import sys
from pathlib import Path
from conformance.clients.launch import binary_in_prefix
from conformance.clients.profile import launchable
print(" ".join(p.name for p in launchable() if not binary_in_prefix(Path(sys.argv[1]), p).exists()))' "$CLIENTS")
[ -n "$MISSING" ] && INSTALL="--install"
exec "$PY" -m conformance.capture.recapture --clients "$CLIENTS" $INSTALL "$@"
