"""The official SDKs' own generated API tests, run against the reference engine and router.

Independent checks nobody here wrote: the `anthropic` and `openai` sdists from PyPI, at exactly
the versions installed in this project's environment, carry generated tests per endpoint
(`tests/api_resources/...`) that take their base URL from TEST_API_BASE_URL. This script:

1. downloads both sdists (`pip download --no-binary :all: --no-deps NAME==VERSION`) into a work
   folder (default `.sdk-tests/`, ignored by git: nothing fetched here is committed);
2. makes one virtual environment per SDK there, installs the sdist and its test requirements,
   each pinned to the version in the sdist's own `uv.lock` (when the package index in use does
   not have that exact version, the nearest older one it has, said in the output and in
   `<work>/venv-*/.installed`);
3. starts the reference engine and, in front of it, the reference router (`conformance engine`,
   `conformance router`, from this project's environment);
4. runs the endpoint tests for messages and count_tokens (anthropic), chat completions and
   responses (openai) against each target that serves that wire (the router serves the
   Anthropic wire only), with a JUnit report per run;
5. prints pass / skip / deliberate / fail / error counts per SDK x target (skips counted apart
   from passes; `deliberate`: a failure listed in DELIBERATE, matched on the test and its
   message, a documented difference, never a silent pass: the plugin sdk_deliberate.py turns it
   into an expected failure inside the SDK's run, so only a real failure prints FAILED) and,
   last, one `key=value` line.

Exit status: 0 when nothing failed or errored, 1 otherwise, 2 when the set-up failed.
Deliberate differences from the SDKs' expectations are listed in docs/sdk-api-tests.md.
Usage:
    python scripts/sdk_api_tests.py [--work DIR] [--python PY] [--keep-going]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Which endpoint tests run, per SDK (paths inside the sdist, and a -k selection), and which
# targets serve that wire. On the OpenAI side only `create` is in scope: the stored-completion
# and stored-response endpoints (retrieve, update, list, delete, cancel, compact) keep state on
# the server, which the reference engine deliberately does not (docs/sdk-api-tests.md).
SUITES = {
    "anthropic": {"tests": ["tests/api_resources/test_messages.py"], "select": "", "targets": ("engine", "router")},
    "openai": {"tests": ["tests/api_resources/chat/test_completions.py", "tests/api_resources/test_responses.py"],
               "select": "create", "targets": ("engine",)},
}
# Deliberate differences (docs/sdk-api-tests.md): (test file, test name pattern, failure message
# pattern) -> why. A failing test is counted as `deliberate` only when both patterns match; any
# other failure counts as failed.
DELIBERATE = [
    ("test_completions", r"create_with_all_params", r"max_tokens: Input should be an integer >= 1",
     "the generated test sends max_tokens=0; the OpenAI API refuses values below 1, so does the engine"),
    ("test_responses", r"create_overload_[12]", r"input: Field required",
     "the generated test sends no `input` at all; the engine (like vLLM) needs the conversation to answer"),
    ("test_responses", r"create_with_all_params", r"previous_response_id is not supported",
     "the engine stores no responses: previous_response_id / conversation state is refused, with that reason"),
]
# The SDK's test runner and what its conftest and test helpers import; pinned from its uv.lock.
# Type checkers, linters, stubs and the clients for other clouds are left out: no test here runs them.
TEST_REQUIREMENTS = ("pytest", "pytest-asyncio", "respx", "dirty-equals", "inline-snapshot", "time-machine",
                     "httpx2", "http-snapshot", "nest-asyncio", "pytest-xdist", "importlib-metadata", "rich",
                     "aiohttp", "httpx-aiohttp")


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def lock_pins(sdist: Path) -> dict[str, str]:
    """name -> version for every package the sdist's uv.lock pins to exactly one version."""
    lock = tomllib.loads((sdist / "uv.lock").read_text(encoding="utf-8"))
    versions: dict[str, set[str]] = {}
    for pkg in lock.get("package", []):
        if "version" in pkg:
            versions.setdefault(_norm(pkg["name"]), set()).add(pkg["version"])
    return {name: next(iter(v)) for name, v in versions.items() if len(v) == 1}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.+-]", v))


def available_pin(vpy: Path, name: str, pinned: str) -> str:
    """`name==pinned` if the index has it, else `name==` the nearest older version it has."""
    out = subprocess.run([str(vpy), "-m", "pip", "index", "versions", name], capture_output=True, text=True)
    m = re.search(r"Available versions: (.*)", out.stdout)
    have = [v.strip() for v in m.group(1).split(",")] if m else []
    if not have or pinned in have:
        return f"{name}=={pinned}"
    older = [v for v in have if _version_key(v) <= _version_key(pinned)]
    chosen = max(older or have, key=_version_key)
    print(f"note: {name}=={pinned} (the sdist's uv.lock) is not on the package index; using {chosen}", flush=True)
    return f"{name}=={chosen}"


def prepare(sdk: str, work: Path, python: str) -> tuple[Path, Path]:
    """(unpacked sdist, its venv's python), downloading and installing when not done yet."""
    version = metadata.version(sdk)
    src = work / f"{sdk}-{version}"
    venv = work / f"venv-{sdk}-{version}"
    vpy = venv / "bin" / "python"
    if not (src / "pyproject.toml").exists():
        work.mkdir(parents=True, exist_ok=True)
        run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
             f"{sdk}=={version}", "-d", str(work)])
        archive = next(p for p in work.glob(f"{sdk}-{version}.tar.gz"))
        run(["tar", "xzf", str(archive), "-C", str(work)])
    if not (venv / ".installed").exists():
        run([python, "-m", "venv", str(venv)])
        pins = lock_pins(src)
        wanted = [available_pin(vpy, n, pins[n]) for n in TEST_REQUIREMENTS if n in pins]
        run([str(vpy), "-m", "pip", "install", "-q", str(src), *wanted])
        (venv / ".installed").write_text("\n".join(wanted) + "\n", encoding="utf-8")
    return src, vpy


@contextlib.contextmanager
def targets() -> Iterator[dict[str, str]]:
    """The reference engine, and the reference router in front of it (their own processes)."""
    from conformance.engine.launch import spawn_engine

    with spawn_engine("--port", "0") as engine:
        router = subprocess.Popen([sys.executable, "-c", "import sys; from conformance.cli import main; "
                                   "sys.exit(main())", "router", "--upstream", engine.url, "--port", "0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = router.stdout.readline()
            m = re.search(r"(http://\S+)", line)
            if not m:
                raise RuntimeError(f"the reference router did not start: {line!r}")
            yield {"engine": engine.url, "router": m.group(1)}
        finally:
            router.terminate()
            try:
                router.wait(10)
            except subprocess.TimeoutExpired:
                router.kill()


def deliberate_reason(classname: str, name: str, text: str) -> str | None:
    """Why a failed test (its class path, name and failure text) is a documented difference, or None."""
    for module, name_pattern, message, why in DELIBERATE:
        if module in classname and re.search(name_pattern, name) and re.search(message, text):
            return why
    return None


def counts(junit: Path) -> dict[str, int]:
    """Outcome counts from a JUnit report. The plugin (sdk_deliberate.py) reports a deliberate
    difference as an expected failure, which JUnit writes as a skip of type pytest.xfail."""
    out = {"passed": 0, "skipped": 0, "deliberate": 0, "failed": 0, "errors": 0}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        skipped = case.find("skipped")
        if "failure" in kinds:
            out["failed"] += 1
        elif "error" in kinds:
            out["errors"] += 1
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            out["deliberate"] += 1
        elif skipped is not None:
            out["skipped"] += 1
        else:
            out["passed"] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / ".sdk-tests", help="download and venv folder")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the SDK venvs")
    ap.add_argument("--only", choices=sorted(SUITES), help="run one SDK's tests")
    args = ap.parse_args(argv)
    try:
        prepared = {sdk: prepare(sdk, args.work, args.python) for sdk in SUITES if args.only in (None, sdk)}
    except (subprocess.CalledProcessError, StopIteration, OSError) as exc:
        print(f"sdk_api_tests: set-up failed: {exc}", file=sys.stderr)
        return 2
    table: dict[str, dict[str, int]] = {}
    with targets() as urls:
        for sdk, (src, vpy) in prepared.items():
            for target in SUITES[sdk]["targets"]:
                junit = args.work / f"junit-{sdk}-{target}.xml"
                env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
                env["TEST_API_BASE_URL"] = urls[target] + ("/v1" if sdk == "openai" else "")
                # The deliberate differences run as expected failures (plugin sdk_deliberate.py):
                # the output says "xfailed" for them and FAILED only for a real failure.
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "scripts"), env.get("PYTHONPATH")]))
                cmd = [str(vpy), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "sdk_deliberate",
                       "-o", "addopts=", f"--junitxml={junit}", *SUITES[sdk]["tests"]]
                if SUITES[sdk]["select"]:
                    cmd += ["-k", SUITES[sdk]["select"]]
                print(f"=== {sdk} {metadata.version(sdk)} -> {target} ({env['TEST_API_BASE_URL']})", flush=True)
                proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
                tail = proc.stdout.strip().splitlines()[-25:]
                print("\n".join(tail), flush=True)
                if not junit.exists():
                    print(proc.stderr[-3000:], file=sys.stderr)
                    table[f"{sdk}-{target}"] = {"passed": 0, "skipped": 0, "deliberate": 0, "failed": 0, "errors": 1}
                    continue
                table[f"{sdk}-{target}"] = counts(junit)
    print()
    for key, c in table.items():
        print(f"{key:18s} passed {c['passed']:4d}  skipped {c['skipped']:4d}  deliberate {c['deliberate']:4d}  "
              f"failed {c['failed']:4d}  errors {c['errors']:4d}")
    print(" ".join(f"{key}_{kind}={n}" for key, c in table.items() for kind, n in c.items()))
    bad = sum(c["failed"] + c["errors"] for c in table.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
