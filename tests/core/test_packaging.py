"""A non-editable install, used from another directory, finds everything the suite bundles."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, f"building the wheel failed:\n{proc.stdout}\n{proc.stderr}"
    (whl,) = out.glob("agent_loop_conformance-*.whl")
    return whl


def test_wheel_ships_captures_fixtures_and_schemas(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("captured", "fixtures"):
        for src in (ROOT / folder).rglob("*"):
            if src.is_file() and "__pycache__" not in src.parts:
                rel = src.relative_to(ROOT).as_posix()
                assert f"conformance/_data/{rel}" in names, f"{rel} is not in the wheel"
    schemas = list((ROOT / "conformance" / "wire").glob("*/schemas/*.json"))
    assert schemas
    for src in schemas:
        assert src.relative_to(ROOT).as_posix() in names


def test_installed_copy_resolves_data_from_any_directory(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    code = (
        "import conformance.core.paths as d, conformance.wire.base as b, json;"
        "print(json.dumps([str(d.captured_dir()), str(d.fixtures_dir()),"
        " str(b.schema_path('anthropic.message').parent)]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd="/tmp", capture_output=True, text=True,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for path in eval(proc.stdout):  # noqa: S307 - our own JSON list of paths
        assert path.startswith(str(site)), f"{path} resolved outside the installed copy"
        assert Path(path).is_dir()
    assert (site / "conformance/_data/fixtures/faults.json").is_file()
