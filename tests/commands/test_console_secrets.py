"""A command's console holds no secret it was given: `conformance replay` with a key and a
`--target` with userinfo, against a loopback target that echoes every credential it receives
in its 401 body and a header."""

from __future__ import annotations

import base64
from pathlib import Path

from loopback import serve_app_in_thread

from conformance.cli import main
from tests.suite.test_secrets_scrubbed import ENV_NAME, ENV_VALUE, KEY, PASSWORD, USER, echoing_app, spellings

CAPTURE = Path(__file__).resolve().parents[1] / "suite" / "small" / "claude-code"


def test_replay_console_never_shows_the_key_or_the_target_password(capsys, monkeypatch):
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    with serve_app_in_thread(echoing_app()) as url:
        target = url.replace("http://", f"http://{USER}:{PASSWORD}@")
        code = main(["replay", str(CAPTURE), "--target", target, "--api-key", KEY])
    out = capsys.readouterr()
    console = (out.out + out.err).encode()
    assert code == 1 and b"FAIL" in console and b"401" in console  # the refusal is reported
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    leaks = sorted({s for s in (KEY, PASSWORD, ENV_VALUE, basic) for spelled in spellings(s) if spelled in console})
    assert not leaks, leaks
    assert b"<redacted:target-userinfo>@127.0.0.1" in console
