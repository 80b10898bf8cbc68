"""Reproduce lines that reproduce, and scripts that are data-safe.

- Through a keyed router that serves one model name (as LiteLLM does), the printed
  `conformance replay` line, run as printed with the environment variable it names, gets the same
  check id as the suite; without the variable it does not (the key matters), and the key is never
  written. curl.sh stops with a message naming the variable when it is unset.
- A capture whose every field that reaches a script (file and folder names, case, note, query,
  header values, model name) holds shell metacharacters and newlines gives a curl.sh and
  reproduce lines that, run, create no marker file, and whose words come back intact.

Real parts on loopback: the reference engine (stop-sequence-missing) behind a small aiohttp router.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from conformance.engine.launch import serve_engine_in_thread
from conformance.plugin import SUITE_DIR
from tests.loopback import serve_app_in_thread

HERE = Path(__file__).resolve().parent
SMALL_CC = HERE / "small" / "claude-code" / "2.1.197" / "tool-loop-small.json"
REPO = HERE.parents[1]
REPLAY = str(SUITE_DIR / "test_replay.py")
SECRET = "sk-router-SECRET-must-not-be-written-7"
SERVED = "served-model"  # the router's alias ...
BACKEND = "backend-model"  # ... for the deployment it sends to (the engine answers with this name)
FAULT_CHECK = "anthropic.stream.stop_sequence_present"


def _router(engine_url: str, *, key: str | None, crash: bool = False) -> web.Application:
    """A router in front of the engine: a key (x-api-key or Bearer), one served model name, an
    alias it rewrites to BACKEND on the way (others get LiteLLM's 400 "Invalid model name");
    `crash`: 500 on every request, nothing forwarded."""

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": SERVED, "object": "model"}]})

    async def forward(request: web.Request) -> web.StreamResponse:
        data = await request.read()
        if crash:
            return web.json_response({"type": "error", "error": {"type": "api_error", "message": "crashed"}}, status=500)
        given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        if key is not None and given != key:
            return web.json_response({"type": "error", "error": {"type": "authentication_error",
                                                                  "message": "No connected db."}}, status=401)
        body = json.loads(data)
        if body.get("model") != SERVED:
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                  "message": "Invalid model name"}}, status=400)
        forwarded = json.dumps({**body, "model": BACKEND}).encode()
        async with aiohttp.ClientSession() as session, session.post(
                engine_url + request.path_qs, data=forwarded, headers={"content-type": "application/json"}) as up:
            out = web.StreamResponse(status=up.status, headers={"content-type": up.headers.get("content-type", "")})
            await out.prepare(request)
            async for chunk in up.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_route("POST", "/{tail:.*}", forward)
    return app


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CONFORMANCE_API_KEY"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**env, **extra}


def _sh(line: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", line], cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=300)


def _folder(run) -> Path:
    return next(p.parent for p in (run.report_dir / "failures").rglob("reproduce.txt") if "test_replay" in str(p))


def test_the_printed_replay_line_reproduces_the_check_id(pytester, suite, tmp_path):
    with serve_engine_in_thread(faults=["stop-sequence-missing"], model=SERVED) as engine, \
            serve_app_in_thread(_router(engine, key=SECRET)) as router:
        run = suite(pytester, router, REPLAY, f"--conformance-api-key={SECRET}", "--conformance-deadline-total=90",
                    f"--conformance-model-map={SERVED}={BACKEND}", captures=SMALL_CC)
        assert run.outcome.ret == 1
        assert FAULT_CHECK in run.failed_checks and "identity.model_matches" not in run.failed_checks, run.failed_checks
        folder = _folder(run)
        lines = (folder / "reproduce.txt").read_text(encoding="utf-8").splitlines()
        replay_line = next(x for x in lines if x.startswith("conformance replay "))
        pytest_line = next(x for x in lines if x.startswith("pytest "))
        for line in lines:
            assert SECRET not in line
        assert '--api-key "$CONFORMANCE_API_KEY"' in replay_line and "--model-map" in replay_line
        assert "--deadline-total 90" in replay_line and f"--expect-model {SERVED}={BACKEND}" in replay_line
        assert '--conformance-api-key="$CONFORMANCE_API_KEY"' in pytest_line
        assert "--conformance-deadline-total=90" in pytest_line and f"--target={router}" in pytest_line

        again = _sh(replay_line, tmp_path, CONFORMANCE_API_KEY=SECRET)
        assert again.returncode == 1 and FAULT_CHECK in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]
        assert "identity.model_matches" not in again.stdout  # the alias is expected, as in the suite
        keyless = _sh(replay_line, tmp_path)
        assert keyless.returncode == 1 and FAULT_CHECK not in keyless.stdout  # the key is what it needs

        curl = folder / "curl.sh"
        stopped = subprocess.run(["sh", str(curl)], env=_env(), capture_output=True, text=True, timeout=60)
        assert stopped.returncode != 0 and "set CONFORMANCE_API_KEY" in stopped.stderr and not stopped.stdout
        sent = subprocess.run(["sh", str(curl)], env=_env(CONFORMANCE_API_KEY=SECRET), capture_output=True,
                              text=True, timeout=120)
        assert sent.returncode == 0 and "message_delta" in sent.stdout and "Invalid model name" not in sent.stdout
    for path in run.report_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the key was written into {path}"


MARKER = "MARKER"


def _hostile_capture(root: Path, marker: str = MARKER) -> Path:
    """The small Claude Code capture with shell payloads in every field that reaches a script
    (each creates `marker` in the shell's working folder, if it ever runs)."""
    payloads = [f"$(touch {marker})", f"`touch {marker}`", f";touch {marker};", f"'; touch {marker}; '",
                f"\"; touch {marker}; \""]
    inline = " ".join(payloads)
    doc = json.loads(SMALL_CC.read_text(encoding="utf-8"))
    doc["case"] = f"loop {inline}\ntouch {marker}\n#"
    for ex in doc["exchanges"]:
        ex["note"] = f"x\ntouch {marker}\n# {inline}\r\u2028"
        req = ex["request"]
        req["query"] = f"beta=true&q={inline}"
        req["headers"]["x-stainless-os"] = f"Linux {inline}"
        if isinstance(req.get("body"), dict):
            req["body"]["model"] = f"claude-opus;{payloads[0]}"
    folder = root / f"caps $(touch {marker})" / "claude-code" / "2.1.197"
    folder.mkdir(parents=True)
    path = folder / f"loop;`touch {marker}`.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _intercepted(line: str, cwd: Path) -> list[str]:
    """Run `line` with its command (conformance, pytest, sh) replaced by one that prints its
    arguments, one per NUL: what the shell made of the line."""
    prelude = "conformance() { printf '%s\\0' \"$@\"; }; pytest() { printf '%s\\0' \"$@\"; }; " \
              "sh() { printf '%s\\0' \"$@\"; }; "
    out = subprocess.run(["sh", "-c", prelude + line], cwd=cwd, env=_env(CONFORMANCE_API_KEY="k"),
                         capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode().split("\0")[:-1]


def test_no_capture_field_becomes_a_command_in_a_script(pytester, suite, tmp_path):
    capture = _hostile_capture(tmp_path / "in")
    with serve_app_in_thread(_router("http://127.0.0.1:9", key=None, crash=True)) as router:
        run = suite(pytester, router, REPLAY, f"--conformance-api-key={SECRET}", captures=capture.parent.parent.parent)
        assert run.outcome.ret == 1 and "suite.request.accepted" in run.failed_checks, run.failed_checks
        folder = _folder(run)
        script = (folder / "curl.sh").read_text(encoding="utf-8")
        assert f"touch {MARKER}" in script  # the payloads are there, as data
        done = subprocess.run(["sh", str(folder / "curl.sh")], env=_env(CONFORMANCE_API_KEY="k"),
                              capture_output=True, text=True, timeout=120)
        _assert_no_marker(tmp_path, pytester.path)
        assert done.returncode == 0, done.stderr
        assert script.count("\ncurl ") == 2 and all(
            line.startswith(("#", "curl ", "cd ", ": ")) for line in script.splitlines())
        lines = (folder / "reproduce.txt").read_text(encoding="utf-8").splitlines()
        words = {line.split(" ", 1)[0]: _intercepted(line, tmp_path) for line in lines}
        assert str(capture) in words["conformance"]  # the path came back as one word
        assert any(w.startswith("claude-opus;$(touch") and w.endswith("=served-model") for w in words["conformance"])
        assert words["sh"] == [str((folder / "curl.sh").relative_to(pytester.path))]  # relative to the run
        assert "::test_replay[" in words["pytest"][0] and f"--target={router}" in words["pytest"]
        assert words["pytest"][0] == shlex.split(next(x for x in lines if x.startswith("pytest ")))[1]
    _assert_no_marker(tmp_path, pytester.path)


def _assert_no_marker(*roots: Path) -> None:
    planted = [p for root in roots for p in root.rglob(MARKER)]
    assert not planted, f"a capture field ran as a command: {planted}"


@pytest.fixture(autouse=True)
def _no_inherited_key(monkeypatch):
    monkeypatch.delenv("CONFORMANCE_API_KEY", raising=False)
