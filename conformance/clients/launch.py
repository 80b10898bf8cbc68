"""The one launcher of a client's real CLI, for the live tests (`conformance.loop.live`) and the
recapture (`conformance.capture.recapture`): finding its binary, its scratch environment, its
config files and its command line for a prompt on a wire. Standard library only.

Rules:
- The CLI is the installed binary itself: `find_binary(client, path)` takes the path given, else
  the profile's env variable (`CONFORMANCE_CLAUDE_BIN`, ...), else the profile's binary on PATH.
  One release (`find_release_binary`): the npm prefix in `CONFORMANCE_CLIENTS_DIR_<version with
  dots as underscores>` (`release_env`), else `CONFORMANCE_CLIENTS_DIR`'s `<client>@<version>`
  prefix (`release_prefix`) or its top, else the CLI above, each only if its `--version` is that
  release. Nothing is downloaded here; a missing CLI is `ClientNotFound`, saying what to install.
- Every run is offline and confined to a scratch folder (docs/loop.md, "Live clients"): HOME,
  TMPDIR and the XDG folders inside `<root>/home`, the project in `<root>/project`, `PATH` =
  SAFE_PATH, LANG, TERM and NO_COLOR fixed, the profile's offline settings (`Launch.env`), and the
  base URL and key through the profile's variables or its config file (`config.py`).
- `Settings` is what a run changes from the client's defaults. Two settings differ between the
  live tests and the recapture on purpose, and only these:
  - `forbid_shell` (live runs: True): the model's commands never run on the host — the profile's
    `no_shell_argv` (Claude Code disallows Bash) or `no_shell_config` (opencode denies bash and
    webfetch). The recapture records the clients' defaults (False). Codex keeps its shell either
    way: its own sandbox confines every command (the profile's argv).
  - `catalog` (Codex, `config.py`): live runs use the binary's own model entry (BUNDLED), the
    recapture none or the minimal entry its corpus was recorded with (MINIMAL).
  Every other setting (environment, config files, argv, retries, the provider's name) is one.
- `run` starts the CLI in its own process group with stdin closed; at the deadline it kills that
  group (only the group it started) and says the run timed out.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from conformance.clients.config import LOCAL_MODEL, Settings, write_config
from conformance.clients.profile import ClientProfile, launchable
from conformance.wire.dialect import Dialect

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
COMMON_ENV = {"LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1"}
XDG_DIRS = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_CACHE_HOME": ".cache",
            "XDG_STATE_HOME": ".local/state"}


class ClientNotFound(FileNotFoundError):
    pass


def _launchable(client: ClientProfile) -> None:
    if client.launch is None or not client.binary:
        names = ", ".join(p.name for p in launchable())
        raise ValueError(f"the suite cannot run {client.name}'s CLI: one of {names}")


def binary_in_prefix(prefix: Path, client: ClientProfile) -> Path:
    """The CLI's launcher inside an npm prefix: DIR/node_modules/.bin/<binary>."""
    return prefix / "node_modules" / ".bin" / client.binary


def release_prefix(clients_dir: Path, client: ClientProfile, version: str) -> Path:
    """The npm prefix of one release: DIR/<client>@<version>."""
    return clients_dir / f"{client.name}@{version}"


def release_env(version: str) -> str:
    """The env variable naming the npm prefix of one release: CONFORMANCE_CLIENTS_DIR_2_1_197."""
    return "CONFORMANCE_CLIENTS_DIR_" + "".join(c if c.isalnum() else "_" for c in version)


def find_binary(client: ClientProfile, path: str | Path | None = None) -> Path:
    """The CLI to run: `path`, else the env variable, else PATH. Clear error when absent."""
    _launchable(client)
    given = path or os.environ.get(client.binary_env)
    if given:
        p = Path(given)
        if p.is_dir():
            p = p / client.binary
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ClientNotFound(f"{client.name}: {p} is not an executable file (from "
                                 f"{'the path given' if path else client.binary_env})")
        return p
    found = shutil.which(client.binary)
    if not found:
        raise ClientNotFound(
            f"{client.name}: `{client.binary}` is not on PATH and {client.binary_env} is not set; install it with "
            f"`npm install --prefix DIR {client.npm_package}` and set "
            f"{client.binary_env}=DIR/node_modules/.bin/{client.binary}")
    return Path(found)


def client_version(binary: Path, timeout: float = 30) -> str:
    """What `binary --version` says (`2.1.197 (Claude Code)`, `1.18.33`, `codex-cli 0.171.0`: the
    first dotted version number), run in a throwaway HOME; "unknown" when it says none."""
    with tempfile.TemporaryDirectory(prefix="conformance-version-") as home:
        try:
            out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=timeout,
                                 stdin=subprocess.DEVNULL, env={"PATH": SAFE_PATH, "HOME": home})
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
    found = re.search(r"\d+\.\d+\.\d+\S*", out.stdout)
    return found.group(0) if found else "unknown"


_VERSIONS: dict[str, str] = {}  # binary path -> what its --version said (one process each)


def _version_of(binary: Path) -> str:
    key = str(binary)
    if key not in _VERSIONS:
        _VERSIONS[key] = client_version(binary)
    return _VERSIONS[key]


def _runnable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_release_binary(client: ClientProfile, version: str) -> Path:
    """The CLI of one release of `client`, which must report that version:
    1. DIR/node_modules/.bin/<cli> with DIR from CONFORMANCE_CLIENTS_DIR_<version, dots as
       underscores> (what .ci/run exports for each release it installs);
    2. else under CONFORMANCE_CLIENTS_DIR=D: D/<client>@<version> (the recapture's prefix per
       release), then D itself (where the current pins are installed);
    3. else the CLI `find_binary` finds (CONFORMANCE_*_BIN, PATH) when it is that release.
    ClientNotFound naming the env variable to set when none is."""
    _launchable(client)
    env = release_env(version)
    pkg = f"{client.npm_package}@{version}"
    given = os.environ.get(env)
    if given:
        p = binary_in_prefix(Path(given), client)
        if not _runnable(p):
            raise ClientNotFound(f"{client.name} {version}: {p} is not an executable file (from {env}={given}); "
                                 f"install the release with `npm install --prefix {given} {pkg}`")
        seen = _version_of(p)
        if seen != version:
            raise ClientNotFound(f"{client.name} {version}: {p} (from {env}) is release {seen}, not {version}")
        return p
    candidates: list[Path] = []
    shared = os.environ.get("CONFORMANCE_CLIENTS_DIR")
    if shared:
        candidates += [binary_in_prefix(release_prefix(Path(shared), client, version), client),
                       binary_in_prefix(Path(shared), client)]
    try:
        candidates.append(find_binary(client))
    except ClientNotFound:
        pass
    looked = []
    for p in candidates:
        if _runnable(p):
            seen = _version_of(p)
            if seen == version:
                return p
            looked.append(f"{p} is {seen}")
    raise ClientNotFound(
        f"{client.name} {version}: no binary of this release ({'; '.join(looked) or 'none found'}); install it "
        f"with `npm install --prefix DIR {pkg}` and set {env}=DIR")


# ----------------------------------------------------------------------------- one run
@dataclass
class Prepared:
    """One run, ready to start: the command line (the binary first), as recorded (the CLI's
    name first, `<project>` for the project folder), its environment and folders. The config
    files stay in the scratch folder: they hold the key."""

    argv: list[str]
    shown: list[str]
    env: dict[str, str]
    home: Path
    project: Path


@dataclass
class Finished:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    elapsed: float


def environment(client: ClientProfile, home: Path, base_url: str, api_key: str) -> dict[str, str]:
    """The scratch environment of one run (module rules); creates the folders it names."""
    launch = client.launch
    env = {"PATH": SAFE_PATH, "HOME": str(home), "TMPDIR": str(home / "tmp"), **COMMON_ENV,
           **{k: str(home / v) for k, v in XDG_DIRS.items()}, **launch.env,
           **{k: str(home / v) for k, v in launch.home_dirs.items()}}
    if launch.base_url_env:
        env[launch.base_url_env] = base_url
    if launch.api_key_env:
        env[launch.api_key_env] = api_key
    for folder in ("tmp", *launch.home_dirs.values()):
        (home / folder).mkdir(parents=True, exist_ok=True)
    return env


def wire_environment(client: ClientProfile, wire: Dialect, base_url: str, api_key: str,
                     model: str | None) -> dict[str, str]:
    """The variables that point the CLI at `base_url` on `wire`, for a client whose wire is chosen
    per run (`Launch.wire_env`; empty for the others)."""
    values = {"{base_url}": base_url.rstrip("/"), "{api_key}": api_key, "{model}": model or LOCAL_MODEL}

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    return {k: fill(v) for k, v in client.launch.wire_env.get(wire.name, {}).items()}


def describe_environment(client: ClientProfile) -> str:
    """The environment of a run in words, for a capture's meta and the corpus manifest."""
    launch = client.launch
    per_wire = sorted({k for env in launch.wire_env.values() for k in env})
    settings = [f"{k}=<proxy>" for k in (launch.base_url_env,) if k] + [
        f"{k}=<fake>" for k in (launch.api_key_env,) if k] + [f"{k}={v}" for k, v in launch.env.items()] + [
        f"{k}=<per wire>" for k in per_wire]
    config = f", {launch.config} with the provider (see each case's meta)" if launch.config else ""
    homes = "".join(f", {k}=<scratch HOME>/{v}" for k, v in launch.home_dirs.items())
    return (f"HOME, TMPDIR and XDG_* dirs=<scratch> PATH={SAFE_PATH}{homes} " + " ".join(settings) + config
            + ", stdin /dev/null")


def _argv(client: ClientProfile, *, prompt: str, project: str, model: str | None, settings: Settings,
          wire: Dialect) -> list[str]:
    """The arguments after the binary: each placeholder is a whole argument, so a prompt that
    happens to hold `{project}` stays as written."""
    launch = client.launch  # a client without model_argv names its model in its config file
    model_args = [model if a == "{model}" else a for a in launch.model_argv] if model else []
    values = {"{prompt}": [prompt], "{project}": [project],
              "{options}": [*launch.wire_argv.get(wire.name, ()), *(launch.no_shell_argv if settings.forbid_shell else ()),
                            *model_args, *settings.flags]}
    return [out for arg in launch.argv for out in values.get(arg, [arg])]


def prepare(client: ClientProfile, binary: Path, *, wire: Dialect, prompt: str, base_url: str, api_key: str,
            root: Path, settings: Settings | None = None) -> Prepared:
    """Set up one run of `client` on `wire` in the scratch folder `root` (HOME and project inside
    it, created here; the caller seeds the project): environment, config files, command line."""
    _launchable(client)
    settings = settings or Settings()
    home, project = root / "home", root / "project"
    project.mkdir(parents=True, exist_ok=True)
    env = {**environment(client, home, base_url, api_key),
           **wire_environment(client, wire, base_url, api_key, settings.model), **settings.env}
    write_config(client, binary, wire=wire, env=env, project=project, base_url=base_url, api_key=api_key,
                 settings=settings)
    args = _argv(client, prompt=prompt, project=str(project), model=settings.model, settings=settings, wire=wire)
    shown = _argv(client, prompt=prompt, project="<project>", model=settings.model, settings=settings, wire=wire)
    return Prepared([str(binary), *args], [client.binary, *shown], env, home, project)


def run(prepared: Prepared, deadline: float) -> Finished:
    """Run the prepared CLI to its end or to `deadline` seconds (module rules)."""
    start = time.monotonic()
    proc = subprocess.Popen(prepared.argv, cwd=prepared.project, env=prepared.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this call started, nothing else
        except ProcessLookupError:
            pass
        try:
            stdout, stderr = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = b"", b""
    return Finished(proc.returncode, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"),
                    timed_out, time.monotonic() - start)
