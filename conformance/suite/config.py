"""The suite's configuration: one dataclass, one resolution order.

Rules:
- Configuration order, highest first: marker > command-line option (and its CONFORMANCE_*
  environment variable) > fixture override > default. `SuiteConfig.resolve` is the only place
  that order is applied: the command-line layer holds only options the user actually gave
  (option defaults are None), so a fixture override can still change what the user left unset.
- Marker: `@pytest.mark.conformance(model="m", deadline_total=30, ...)` takes field names.
  Fixture override: a `conformance_overrides` fixture returning a dict of field names.
- Options owned by other areas (engine URL, concurrency, repeat, ...) are read by name through
  `SuiteConfig.option(name)`; they need no field here.
- The wire names (`--conformance-api`) are the registered wires' (plugin.py repeats them as its
  option choices, kept equal by a test: loading the plugin loads no registry); the client names
  (`--conformance-client`) are the registered client profiles', checked here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from conformance.clients.profile import PROFILES
from conformance.net.transport import Deadlines
from conformance.wire.registry import DIALECTS

APIS = ("auto", *DIALECTS)


def known_clients() -> tuple[str, ...]:
    """What `--conformance-client` accepts: all, or a registered profile's name (asked when a run
    is resolved, so a profile registered after this module loaded counts)."""
    return ("all", *PROFILES)


class ConfigError(ValueError):
    """Bad configuration: the message says what, why and how to fix."""


@dataclass(frozen=True)
class SuiteConfig:
    target: str | None = None
    api: str = "auto"
    model: str | None = None  # sent in every request instead of the captured model
    model_map: dict[str, str] = field(default_factory=dict)  # captured/sent -> served (see README)
    api_key: str | None = None
    client: str = "all"
    captures: Path | None = None  # None = the bundled corpus (conformance.core.paths.captured_dir())
    deadline_connect: float = 10.0
    deadline_first_content: float = 60.0
    deadline_total: float = 180.0
    engine_version: str = ""
    router_version: str = ""
    report_dir: Path = Path("reports")
    baseline: Path | None = None
    baseline_write: Path | None = None
    salt: bool = False
    model_headers: tuple[str, ...] = ("x-litellm-model-id", "x-served-model", "x-model")
    engine_url: str | None = None  # set by the option owned by the attribution area, when present
    run_token: str = ""
    raw_options: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def deadlines(self) -> Deadlines:
        return Deadlines(self.deadline_connect, self.deadline_first_content, self.deadline_total)

    def option(self, name: str, default: Any = None) -> Any:
        """Any plugin option by dest name without the `conformance_` prefix (e.g. "concurrency")."""
        value = self.raw_options.get(f"conformance_{name}", self.raw_options.get(name))
        return default if value is None else value

    def served_model(self, sent: str | None) -> str | None:
        """The model expected to answer when `sent` is asked for (model map, else itself)."""
        if sent is None:
            return None
        return self.model_map.get(sent, sent)

    @classmethod
    def resolve(cls, *layers: dict[str, Any]) -> SuiteConfig:
        """Later layers win; None values are 'not set'. Call as resolve(fixture, cli, marker)."""
        names = {f.name for f in fields(cls)}
        merged: dict[str, Any] = {}
        for layer in layers:
            for key, value in (layer or {}).items():
                if key not in names:
                    raise ConfigError(
                        f"unknown conformance setting {key!r}; known settings: {', '.join(sorted(names - {'raw_options'}))}")
                if value is not None:
                    merged[key] = value
        return cls(**_coerce(merged))

    def replace(self, **changes: Any) -> SuiteConfig:
        return dataclasses.replace(self, **changes)


def parse_model_map(values: list[str] | str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if not values:
        return out
    if isinstance(values, str):
        values = [values]
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" not in item:
                raise ConfigError(f"--conformance-model-map entry {item!r} is not NAME=SERVED (e.g. claude-sonnet-4-5=qwen3-8b)")
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _coerce(d: dict[str, Any]) -> dict[str, Any]:
    if "api" in d and d["api"] not in APIS:
        raise ConfigError(f"api {d['api']!r} is not one of {APIS}")
    if "client" in d and d["client"] not in known_clients():
        raise ConfigError(f"client {d['client']!r} (--conformance-client) is not a known client; known clients: "
                          f"{', '.join(known_clients())} (each a module in conformance/clients/profiles/; a new client is a new module there)")
    for key in ("captures", "report_dir", "baseline", "baseline_write"):
        if key in d and d[key] is not None and not isinstance(d[key], Path):
            d[key] = Path(d[key])
    for key in ("deadline_connect", "deadline_first_content", "deadline_total"):
        if key in d:
            try:
                d[key] = float(d[key])
            except (TypeError, ValueError):
                raise ConfigError(f"{key} must be a number of seconds, got {d[key]!r}") from None
            if d[key] <= 0:
                raise ConfigError(f"{key} must be positive, got {d[key]!r}")
    if "model_map" in d and not isinstance(d["model_map"], dict):
        d["model_map"] = parse_model_map(d["model_map"])
    if "model_headers" in d and isinstance(d["model_headers"], (list, str)):
        hs = d["model_headers"]
        d["model_headers"] = tuple([hs] if isinstance(hs, str) else hs)
    if "target" in d and d["target"]:
        t = str(d["target"]).strip()
        if not t.startswith(("http://", "https://")):
            raise ConfigError(f"--target {t!r} is not an http(s) URL; pass e.g. --target=http://127.0.0.1:4000")
        d["target"] = t.rstrip("/")
    return d


def cli_layer(config) -> dict[str, Any]:
    """The command-line layer from a pytest Config: only options the user gave (and env vars)."""
    opt = config.getoption
    layer: dict[str, Any] = {
        "target": opt("conformance_target") or os.environ.get("CONFORMANCE_TARGET") or None,
        "api": opt("conformance_api"),
        "model": opt("conformance_model"),
        "model_map": parse_model_map(opt("conformance_model_map")) or None,
        "api_key": opt("conformance_api_key") or os.environ.get("CONFORMANCE_API_KEY") or None,
        "client": opt("conformance_client"),
        "captures": opt("conformance_captures"),
        "deadline_connect": opt("conformance_deadline_connect"),
        "deadline_first_content": opt("conformance_deadline_first_content"),
        "deadline_total": opt("conformance_deadline_total"),
        "engine_version": opt("conformance_engine_version"),
        "router_version": opt("conformance_router_version"),
        "report_dir": opt("conformance_report_dir"),
        "baseline": opt("conformance_baseline"),
        "baseline_write": opt("conformance_baseline_write"),
        "salt": True if opt("conformance_salt") else None,
        "model_headers": opt("conformance_model_header") or None,
        "engine_url": opt("conformance_engine_url", None),
    }
    return layer


def raw_options(config) -> dict[str, Any]:
    return {k: v for k, v in vars(config.option).items() if k.startswith("conformance_")}
