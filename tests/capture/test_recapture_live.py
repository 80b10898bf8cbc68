"""A recapture of each committed release with the real client diffs structurally empty against
the committed corpus (`captured/<client>/<version>/`).

Needs the real CLIs: the pins (each profile's `pin`) in CONFORMANCE_CLIENTS_DIR=DIR (default:
.clients at the repository top) and every other release of its `releases` in its own prefix
DIR/<client>@<version> (.ci/run installs them). Marked `slow` and `live`; it fails, saying what to
install, when a client is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.capture.diff import diff_paths, format_diff
from conformance.capture.recapture import client_dir, main
from conformance.clients.launch import binary_in_prefix, release_prefix
from conformance.clients.profile import launchable, profile
from conformance.core.paths import captured_dir

CLIENTS = Path(os.environ.get("CONFORMANCE_CLIENTS_DIR", Path(__file__).resolve().parents[2] / ".clients"))
RELEASE_PARAMS = [(client.name, version) for client in launchable() for version in client.releases]

pytestmark = [pytest.mark.slow, pytest.mark.live]


@pytest.mark.parametrize(("client", "version"), RELEASE_PARAMS, ids=[f"{c}@{v}" for c, v in RELEASE_PARAMS])
def test_recapture_of_each_committed_release_diffs_empty(tmp_path, client, version):
    runner = profile(client)
    current = version == runner.pin
    where = client_dir(CLIENTS, runner, None if current else version)
    if not binary_in_prefix(where, runner).exists():
        # Live tests are opt-in (-m live): once asked for, a missing client is a failure, not a skip.
        pytest.fail(f"{client} {version} is not installed: npm install --prefix "
                    f"{CLIENTS if current else release_prefix(CLIENTS, runner, version)} "
                    f"{runner.npm_package}@{version} (or set CONFORMANCE_CLIENTS_DIR)", pytrace=False)
    out = tmp_path / "captured"
    argv = ["--clients", str(CLIENTS), "--out", str(out), "--scratch", str(tmp_path / "scratch"), "--only", client]
    if not current:
        argv += ["--version", f"{client}={version}"]
    assert main(argv) == 0
    changes = diff_paths(captured_dir() / client / version, out / client / version)
    assert changes == [], format_diff(changes, "committed", "recaptured")
