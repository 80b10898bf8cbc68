"""A recapture of Codex with the real pinned CLI diffs structurally empty against the committed
corpus (captured/codex/), and the recapture leaves nothing outside its scratch folder.

Needs the real CLI: `npm install --prefix DIR @openai/codex@0.171.0` and CONFORMANCE_CODEX_BIN=
DIR/node_modules/.bin/codex or CONFORMANCE_CLIENTS_DIR=DIR (default: .clients at the repository
top; .ci/run installs it). Marked `slow` and `live`; once asked for, a missing CLI is a failure
that says what to install, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.capture.corpus import load_captures
from conformance.capture.diff import diff_paths, format_diff
from conformance.capture.recapture import main
from conformance.clients import recapture_case
from conformance.clients.launch import binary_in_prefix
from conformance.clients.profiles.codex import CODEX
from conformance.core.paths import captured_dir

_BIN = os.environ.get("CONFORMANCE_CODEX_BIN")
CLIENTS = (Path(_BIN).absolute().parents[2] if _BIN and "node_modules" in _BIN else
           Path(os.environ.get("CONFORMANCE_CLIENTS_DIR", Path(__file__).resolve().parents[2] / ".clients")))

pytestmark = [pytest.mark.slow, pytest.mark.live]


@pytest.fixture(autouse=True)
def _codex_installed():
    if not binary_in_prefix(CLIENTS, CODEX).exists():
        pytest.fail(f"Codex not installed in {CLIENTS}: npm install --prefix {CLIENTS} "
                    f"{CODEX.npm_package}@{CODEX.pin} (or set CONFORMANCE_CODEX_BIN / CONFORMANCE_CLIENTS_DIR)",
                    pytrace=False)


def test_codex_recapture_diffs_empty_against_the_committed_corpus(tmp_path):
    out = tmp_path / "captured"
    scratch = tmp_path / "scratch"
    code = main(["--clients", str(CLIENTS), "--out", str(out), "--scratch", str(scratch), "--only", "codex/"])
    assert code == 0
    committed = captured_dir() / "codex"
    changes = diff_paths(committed, out / "codex")
    assert changes == [], format_diff(changes, "committed", "recaptured")
    assert len(load_captures(out / "codex")) == len(load_captures(committed)) == 6
    # the scripted edits landed in the scratch projects, through Codex's sandbox
    assert (scratch / "codex-apply-patch-loop" / "project" / "settings.conf").read_text().splitlines()[1] == \
        "mode=final"
    assert (scratch / "codex-exec-loop" / "project" / "copy.txt").read_text() == recapture_case.WRITE_FILE_TOKEN
