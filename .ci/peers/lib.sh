# Shared shell helpers for the peer scripts. Source it; do not run it.
# PEERS_DIR: cache of venvs, prefixes and converted models (default: <repo>/.peers, gitignored).
set -euo pipefail
PEERS_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$PEERS_SRC/../.." && pwd)"
PEERS_DIR="${PEERS_DIR:-$REPO/.peers}"
mkdir -p "$PEERS_DIR/logs"
# Versions are inputs: a variable already set in the environment (or by a script's argument)
# wins; versions.env only fills in what is unset.
while IFS='=' read -r key value; do
  case "$key" in ''|'#'*) continue ;; esac
  [ -n "${!key:-}" ] || export "$key=$value"
done <"$PEERS_SRC/versions.env"
PYTHON="${PEERS_PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

log() { printf '[peers %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Run a step, time it, keep its output in a log, and print the log tail on failure.
timed() {
  local name="$1"; shift
  local logf="$PEERS_DIR/logs/$name.log" t0 rc
  t0=$(date +%s)
  log "$name: start"
  set +e
  "$@" >"$logf" 2>&1
  rc=$?
  set -e
  local dt=$(( $(date +%s) - t0 ))
  echo "$name $dt $rc" >>"$PEERS_DIR/logs/timings.txt"
  if [ "$rc" -ne 0 ]; then
    log "$name: FAILED (exit $rc) after ${dt}s; last lines of $logf:"
    tail -n 30 "$logf" >&2
    return "$rc"
  fi
  log "$name: done in ${dt}s"
}

# A stamp file marks a finished install so re-runs with a warm cache are no-ops.
stamped() { [ -f "$1/.installed-$2" ]; }
stamp() { echo "$2" >"$1/.installed-$2"; }

# Each version of a router lives in its own prefix, $PEERS_DIR/<component>-<version>, so two
# generations coexist. A cache made before that (one unversioned prefix, stamped with the version
# it holds) is used as it is, so a warm cache stays warm. conformance/peers/components.py
# resolves prefixes the same way.
prefix_for() {
  local component="$1" version="$2"
  if [ -f "$PEERS_DIR/$component/.installed-$version" ]; then echo "$PEERS_DIR/$component"
  else echo "$PEERS_DIR/$component-$version"; fi
}
