"""A loop's first request: a real client's captured one, found in the corpus, made the loop's own.

Rules:
- The first request is a real client's captured first request (`find_template`): the client
  that drives the wire (`conformance.clients.profile_for_wire`: Claude Code for the Anthropic
  wire, opencode for the OpenAI chat wire, Codex CLI for the Responses wire), found by the one
  corpus scan (`conformance.capture.corpus.scan`) under `conformance.core.paths.captured_dir()`
  or the folder the run names; the bundled recordings in `conformance/loop/templates/` are only
  a fallback when the corpus holds none, or none that offers the client's loop tools (a loop
  needs the tools its scenarios use: Codex's `apply_patch`, say). A request refused when it was captured is never a
  template (its loop would fail at turn 1 with the same refusal). Preference: a request offering the client's loop tools
  (`ClientProfile.loop_tools`), then one offering a namespace the scenario needs, then case
  `default`, then a `*tool-loop*` case, then the newest release (`conformance.core.versions`).
- A template remembers the client that sent it; an unknown client's template is driven with a
  persona built from its tools' shapes (`conformance.clients.persona.persona_by_shape`).
- Only three things change in it (`build_first_request`): the working directory the client named
  (`ClientProfile.cwd_in` over the Dialect's `context_texts`) becomes the sandbox root wherever
  it appears, the user's prompt text (the Dialect's `prompt_slot`) becomes the scenario prompt —
  inside the client's structure: Claude Code's `<system-reminder>` blocks, the `role: system`
  entry inside messages and cache_control stay; opencode's literal quotes around the prompt stay
  — and `model` when the run asks for one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conformance.capture.corpus import scan
from conformance.capture.format import Capture, CapturedRequest
from conformance.clients import ClientProfile, profile, profile_for_wire
from conformance.core.paths import captured_dir
from conformance.core.versions import version_key
from conformance.loop.conversation import conversation_for
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect_for_path

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


class TemplateError(LookupError):
    pass


@dataclass(frozen=True)
class Template:
    request: CapturedRequest
    source: str  # capture id and file, for reports
    client: str  # the client that sent it, as the capture names it

    @property
    def profile(self) -> ClientProfile:
        """The client's profile (the generic one for a client the suite does not know)."""
        return profile(self.client)

    @property
    def wire(self) -> Dialect:
        wire = dialect_for_path(self.request.path)
        if wire is None:
            raise TemplateError(f"template {self.source}: {self.request.path} is no wire's path")
        return wire


def _driver_of(wire: Dialect) -> ClientProfile:
    client = profile_for_wire(wire)
    if client is None:
        raise ValueError(f"no client the loop knows drives the {wire.name} wire")
    return client


def _first_loop_request(cap: Capture, wire: Dialect) -> CapturedRequest | None:
    """The capture's first request of a loop on `wire`: its generation path (under any base
    path; count_tokens is not a loop's request), tools offered, nothing the model said yet, and
    answered when it was captured (a refused request starts no loop)."""
    for ex in cap.main_exchanges():
        if ex.refused_at_capture:
            continue
        req, body = ex.request, ex.request.body
        if not isinstance(body, dict) or not body.get("tools"):
            continue
        if wire.serves_path(req.path) and not wire.is_count_tokens(req.path) and wire.is_first_request(body):
            return req
    return None


def offers_namespace(body: dict, namespace: str) -> bool:
    return any(isinstance(t, dict) and t.get("type") == "namespace" and t.get("name") == namespace
               for t in body.get("tools") or [])


def _corpus(root: Path | str | None, client: ClientProfile) -> tuple[Path | None, Iterator[tuple[Path, Capture]]]:
    """The corpus folder (`root`, or the bundled captured/; None when there is none) and the
    client's readable captures in it (a file that is not a capture is skipped)."""
    try:
        folder = Path(root) if root is not None else captured_dir()
    except FileNotFoundError:
        return None, iter(())
    return folder, (scan(folder, client=client.name, skip_unreadable=True) if folder.exists() else iter(()))


def find_template(wire: Dialect, root: Path | str | None = None, *, fallback: bool = True,
                  namespace: str | None = None) -> Template:
    """The real client's first tool-bearing request for `wire` from the capture corpus (see the
    module rules for the preference); the bundled recording when the corpus has none."""
    client = _driver_of(wire)
    candidates = []
    folder, captures = _corpus(root, client)
    for f, cap in captures:
        req = _first_loop_request(cap, wire)
        if req is not None:
            offered = set(wire.offered_tools(req.body))
            complete = all(t in offered for t in client.loop_tools)
            has_namespace = namespace is not None and offers_namespace(req.body, namespace)
            rank = (complete, has_namespace, cap.case == "default", "tool-loop" in cap.case,
                    version_key(cap.client_version), str(f))
            candidates.append((rank, req, cap, f))
    best = max(candidates, key=lambda c: c[0]) if candidates else None
    if best is not None and (best[0][0] or not fallback):
        _, req, cap, f = best
        return Template(req, f"{cap.id} ({f})", cap.client)
    if not fallback:
        raise TemplateError(f"no {client.name} capture with a first {wire.name} request carrying tools under {folder}")
    f = TEMPLATES_DIR / f"{client.name}.json"
    _, bundled = next(scan(f))
    req = _first_loop_request(bundled, wire)
    if req is None:  # pragma: no cover - bundled data is tested
        raise TemplateError(f"bundled template {f} holds no usable first request")
    if best is not None and not all(t in set(wire.offered_tools(req.body)) for t in client.loop_tools):
        _, req, cap, f = best  # the bundled one lacks them too: the corpus's own is as good
        return Template(req, f"{cap.id} ({f})", cap.client)
    why = (f"its {client.name} first requests lack the loop tools {', '.join(client.loop_tools)}" if best is not None
           else f"it has no {client.name} first request")
    return Template(req, f"{bundled.id} (bundled fallback {f.name}; the corpus is used only where {why})",
                    bundled.client)


def find_stored_history(wire: Dialect, root: Path | str | None = None) -> tuple[list[dict], str]:
    """A stored session of the client of `wire` to resume: the history a later request of a
    captured conversation carries (the one with the most reasoning items carrying
    encrypted_content), and where it came from. Falls back to the bundled recording."""
    client = _driver_of(wire)
    talk = conversation_for(wire)

    def heaviest(captures: Iterator[tuple[Path, Capture]]) -> tuple[int, list[dict], str] | None:
        best: tuple[int, list[dict], str] | None = None
        for f, cap in captures:
            for n, ex in enumerate(cap.main_exchanges(), 1):
                body = ex.request.body
                on_wire = isinstance(body, dict) and wire.serves_path(ex.request.path)
                history = talk.stored_history(body) if on_wire else None
                if history:
                    weight = sum(1 for i in history if i.get("type") == "reasoning" and i.get("encrypted_content"))
                    if best is None or weight > best[0]:
                        best = (weight, history, f"{cap.id}#{n} ({f})")
        return best

    folder, captures = _corpus(root, client)
    # the bundled recording is only a fallback, read when the corpus has no stored session
    best = heaviest(captures) or heaviest(scan(TEMPLATES_DIR / f"{client.name}.json", client=client.name))
    if best is None:  # pragma: no cover - bundled data is tested
        raise TemplateError(f"no stored {client.name} session with reasoning items under {folder} or {TEMPLATES_DIR}")
    return best[1], best[2]


def build_first_request(template: Template, prompt: str, sandbox_root: Path, model: str | None) -> dict:
    """The template's request with the sandbox as working directory, the scenario's prompt and
    the run's model (see the module rules)."""
    wire, body = template.wire, template.request.body
    old_cwd = template.profile.cwd_in(wire.context_texts(body))
    if old_cwd:
        old_js, new_js = json.dumps(old_cwd)[1:-1], json.dumps(str(sandbox_root))[1:-1]
        body = json.loads(json.dumps(body, ensure_ascii=False).replace(old_js, new_js))
    original = wire.prompt(body)
    if original is None:
        raise TemplateError("the template's first user message has no text to replace")
    # opencode `run` wraps a prompt containing spaces in literal double quotes (docs/wire-facts.md).
    quoted = len(original) >= 2 and original.startswith('"') and original.rstrip().endswith('"')
    return wire.with_model(wire.with_prompt(body, f'"{prompt}"' if quoted else prompt), model)
