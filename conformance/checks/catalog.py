"""The whole check catalog: every module that registers a check, imported on demand.

Rules: listing is complete only after `load_all()`; the registry itself (conformance.core.registry)
imports no rule module, so this list lives here, on the floor that may see them all. The wire
modules are listed, not discovered: they are few and importing them must stay cheap; the checks
package is discovered.
"""

from __future__ import annotations

import importlib
import pkgutil

from conformance.core.registry import CheckSpec, registered

# Modules outside conformance.checks that own rules.
RULE_MODULES = (
    "conformance.wire.sse",
    "conformance.wire.anthropic",
    "conformance.wire.openai",
    "conformance.wire.responses",
)


def load_all() -> list[CheckSpec]:
    """Import every registering module and return all checks sorted by id."""
    for name in RULE_MODULES:
        importlib.import_module(name)
    import conformance.checks as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name != "catalog":
            importlib.import_module(f"conformance.checks.{info.name}")
    return registered()
