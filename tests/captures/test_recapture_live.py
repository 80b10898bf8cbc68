"""Recapture with the real pinned clients diffs structurally empty against the committed corpus.

Needs the real CLIs: `npm install --prefix DIR @anthropic-ai/claude-code@2.1.197 opencode-ai@1.18.33`
and CONFORMANCE_CLIENTS_DIR=DIR (default: .clients at the repository top). Marked `slow` and `live`;
it fails, saying what to install, when the clients are absent (CI installs them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.capture.diff import diff_paths, format_diff
from conformance.capture.recapture import BINARIES, PINS, main
from conformance.core.paths import captured_dir

CLIENTS = Path(os.environ.get("CONFORMANCE_CLIENTS_DIR", Path(__file__).resolve().parents[2] / ".clients"))
INSTALLED = all((CLIENTS / BINARIES[c][1]).exists() for c in PINS)

pytestmark = [pytest.mark.slow, pytest.mark.live]


@pytest.fixture(autouse=True)
def _clients_installed():
    # Live tests are opt-in (-m live): once asked for, missing clients are a failure, not a skip.
    if not INSTALLED:
        pytest.fail(
            f"real clients not installed in {CLIENTS}: npm install --prefix {CLIENTS} "
            + " ".join(f"{pkg}@{PINS[c]}" for c, pkg in {"claude-code": "@anthropic-ai/claude-code",
                                                         "opencode": "opencode-ai"}.items())
            + " (or set CONFORMANCE_CLIENTS_DIR)", pytrace=False)


def test_recapture_with_the_same_client_versions_diffs_empty(tmp_path):
    out = tmp_path / "captured"
    code = main(["--clients", str(CLIENTS), "--out", str(out), "--scratch", str(tmp_path / "scratch")])
    assert code == 0
    changes = diff_paths(captured_dir(), out)
    assert changes == [], format_diff(changes, "committed", "recaptured")
