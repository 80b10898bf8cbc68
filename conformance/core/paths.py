"""Where the bundled data lives.

Rules: `captured/` and `fixtures/` sit at the repository top level (the product card fixes the
layout) and are shipped inside the wheel as `conformance/_data/...`. Installed, the package copy
wins; in a source checkout (editable install) the top-level folders are used. Nothing else in the
package computes these paths. This module imports nothing of the package: the reference engine
and router (the doubles) may use it, and nothing else of the judge.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # the conformance package


def data_root(name: str) -> Path:
    """Return the folder of bundled data `name` ("captured" or "fixtures")."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PACKAGE.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"bundled data folder {name!r} not found (looked in {installed} and {checkout}); "
        "the installation is incomplete: reinstall with `pip install agent-loop-conformance` or from a checkout"
    )


def captured_dir() -> Path:
    return data_root("captured")


def fixtures_dir() -> Path:
    return data_root("fixtures")
