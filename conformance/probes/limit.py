"""The context limit of a target: the one discovery, used by the context probes and the suite.

Rules:
- The limit is the option (`--conformance-context-limit`) when one is given, else what the target
  advertises, else unknown (and said so, never guessed).
- What the target advertises is read in this order, the first found wins:
  1. the served model's entry in GET /v1/models (the entry whose id is the model sent, else the
     first listed): `max_model_len` (vLLM), `context_length`, `context_window`,
     `max_context_length`, then llama.cpp's `meta.n_ctx` (the served context; `n_ctx_train` is
     the model's, not the server's);
  2. llama.cpp's GET /props `n_ctx`, top level or under `default_generation_settings`.
  Only a 2xx document counts; /props is asked only when /v1/models told nothing.
- The advertised value is read even when the option is given: `context.advertised_matches` judges
  it against what the target accepts.
- The documents come through the caller's getter (`Fetch`: path -> (status, parsed JSON or None)),
  so each caller keeps its own sender and deadlines: the probes their target's
  (`discover_limit`), the suite its session's (`SuiteSession.get_json`). The reading is here only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.core.bounded_json import parse as parse_json
from conformance.net.transport import Deadlines
from conformance.probes.common import Target
from conformance.wire.conversation import int_or_none

OPTION = "--conformance-context-limit"
MODEL_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
# Asking for a document: short deadlines, a live server answers at once.
FETCH_FIRST_CONTENT_S = 10.0
FETCH_TOTAL_S = 15.0

Fetch = Callable[[str], tuple[int | None, Any]]


@dataclass
class LimitInfo:
    configured: int | None = None  # from the option
    advertised: int | None = None
    source: str = "unknown"  # where the advertised value came from

    @property
    def limit(self) -> int | None:
        return self.configured or self.advertised

    @property
    def known(self) -> bool:
        return self.limit is not None

    @property
    def origin(self) -> str:
        """Where `limit` came from: the option, the advertised value's source, or "" when unknown."""
        if self.configured:
            return OPTION
        return self.source if self.advertised is not None else ""

    def describe(self) -> str:
        adv = f"{self.advertised} ({self.source})" if self.advertised else "unknown (the target advertises none)"
        if self.configured:
            return f"limit {self.configured} (from the option); advertised {adv}"
        return f"limit {adv}"


def _ok(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


def advertised_by_models(doc: Any, model: str | None) -> tuple[int, str] | None:
    """(limit, source) from a /v1/models document, or None when it tells none."""
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        return None
    models = [m for m in doc["data"] if isinstance(m, dict)]
    chosen = next((m for m in models if m.get("id") == model), models[0] if models else None)
    if chosen is None:
        return None
    for key in MODEL_KEYS:
        if int_or_none(chosen.get(key)) is not None:
            return chosen[key], f"/v1/models {key}"
    meta = chosen.get("meta")
    if isinstance(meta, dict) and int_or_none(meta.get("n_ctx")) is not None:
        return meta["n_ctx"], "/v1/models meta.n_ctx"
    return None


def advertised_by_props(doc: Any) -> tuple[int, str] | None:
    """(limit, source) from a llama.cpp /props document, or None."""
    if not isinstance(doc, dict):
        return None
    n_ctx = int_or_none(doc.get("n_ctx"))
    if n_ctx is None:
        settings = doc.get("default_generation_settings")
        n_ctx = int_or_none(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return (n_ctx, "/props n_ctx") if n_ctx is not None else None


def discover(fetch: Fetch, model: str | None, configured: int | None = None) -> LimitInfo:
    """The limit: the option, and what the target advertises (module rules)."""
    info = LimitInfo(configured=configured)
    status, doc = fetch("/v1/models")
    found = advertised_by_models(doc, model) if _ok(status) else None
    if found is None:
        status, doc = fetch("/props")
        found = advertised_by_props(doc) if _ok(status) else None
    if found is not None:
        info.advertised, info.source = found
    return info


def _target_fetch(target: Target) -> Fetch:
    """GET a document through the probe target's sender (synchronous: `discover` runs in a thread)."""
    deadlines = Deadlines(connect=target.deadlines.connect, first_content=FETCH_FIRST_CONTENT_S, total=FETCH_TOTAL_S)

    def fetch(path: str) -> tuple[int | None, Any]:
        raw = target.net.send_sync(target.wire, path, method="GET", deadlines=deadlines, content_started=False)
        try:
            return raw.status, parse_json(raw.body())
        except ValueError:
            return raw.status, None

    return fetch


async def discover_limit(target: Target, configured: int | None = None) -> LimitInfo:
    """The probe target's limit (`discover` through the target's own sender)."""
    return await asyncio.to_thread(discover, _target_fetch(target), target.model, configured)
