"""Which client sent a request: its profile, its version, and a note when the request disagrees.

    identify(headers, body, wire) -> (profile, version, note)

Rules:
- Evidence comes from the profiles' `Identity`, never from code here. The User-Agent (a pattern
  whose group 1 is the version) and header facts (`x-app: cli`) can be borrowed: Qwen Code in
  Anthropic mode sends `user-agent: claude-cli/0.24.4 (external, cli)` and `x-app: cli`. Body
  facts cannot: a client's system mark (Claude Code's billing-header line) and its tool names.
- Body facts are read only from a generation request that offers tools or carries a system mark
  (`has_body_facts`); a count_tokens request, a probe or a title request without tools says
  nothing either way.
- Body facts that contradict the User-Agent win: the request offers tools, yet none of the
  User-Agent client's tool names and none of its system marks; or another client's system mark is
  there and the User-Agent client's is not. The request is then the client the body names (its
  system mark, else at least STRONG_TOOLS of its tool names), else the generic profile, and the
  note says "sent <other>'s User-Agent". The version is read only from the identified client's own
  User-Agent, or from a borrowed one its profile declares (`Identity.borrowed_user_agents`: Qwen
  Code puts its own version in Claude Code's); any other borrowed number stays in the note.
- No User-Agent or header fact: the client the body names, else the generic profile ("other")
  with version "unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.clients.profile import GENERIC, PROFILES, ClientProfile
from conformance.wire.dialect import Dialect
from conformance.wire.registry import is_count_tokens_path

# Three of a client's own tool names together are its signature; one or two may be shared by
# chance (Qwen Code offers `edit` and `glob`, as opencode does).
STRONG_TOOLS = 3
UNKNOWN_VERSION = "unknown"


def _user_agent(headers: Mapping[str, str]) -> str:
    return next((v for k, v in headers.items() if k.lower() == "user-agent"), "")


def by_user_agent(user_agent: str) -> tuple[ClientProfile, str] | None:
    """(profile, version) of the client whose User-Agent pattern matches, or None."""
    for p in PROFILES.values():
        for rx in p.identity.user_agents:
            m = rx.search(user_agent or "")
            if m:
                return p, m.group(1)
    return None


def by_headers(headers: Mapping[str, str]) -> ClientProfile | None:
    """The client whose header facts the request carries (all of them), or None."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for p in PROFILES.values():
        facts = p.identity.headers
        if facts and all(lowered.get(k.lower()) == v for k, v in facts.items()):
            return p
    return None


def _facts(body: Any, wire: Dialect | None) -> tuple[str, set[str]]:
    """(system text, offered tool names) of a request, empty when it is not a JSON object."""
    if wire is None or not isinstance(body, dict):
        return "", set()
    return wire.system_text(body) or "", set(wire.offered_tools(body))


def has_body_facts(body: Any, wire: Dialect | None, path: str = "") -> bool:
    """Can this request's body tell clients apart (module rules)?"""
    if wire is None or is_count_tokens_path(path):
        return False
    system, tools = _facts(body, wire)
    return bool(tools) or any(mark in system for p in PROFILES.values() for mark in p.identity.system_marks)


def _marked(p: ClientProfile, system: str) -> bool:
    return any(mark in system for mark in p.identity.system_marks)


def by_body(system: str, tools: set[str]) -> ClientProfile | None:
    """The client the body names: its system mark, else the most of its tool names (at least
    STRONG_TOOLS), else None."""
    marked = [p for p in PROFILES.values() if _marked(p, system)]
    if marked:
        return marked[0]
    hits = sorted(((len(tools & p.identity.tool_names), p.name) for p in PROFILES.values()), reverse=True)
    if hits and hits[0][0] >= STRONG_TOOLS and (len(hits) == 1 or hits[1][0] < hits[0][0]):
        return PROFILES[hits[0][1]]
    return None


def _contradicts(claimed: ClientProfile, system: str, tools: set[str]) -> bool:
    if _marked(claimed, system):
        return False
    own_tools = claimed.identity.tool_names
    if tools and own_tools and not tools & own_tools:
        return True
    return any(_marked(p, system) for p in PROFILES.values() if p is not claimed)


def identify(headers: Mapping[str, str], body: Any, wire: Dialect | None,
             path: str = "") -> tuple[ClientProfile, str, str]:
    """(profile, version, note) of the client that sent a request (module rules). `path` tells a
    count_tokens request (no body facts) from a generation request."""
    user_agent = _user_agent(headers)
    claimed = by_user_agent(user_agent)
    claimed_profile = claimed[0] if claimed else by_headers(headers)
    version = claimed[1] if claimed else UNKNOWN_VERSION
    if not has_body_facts(body, wire, path):
        return claimed_profile or GENERIC, version, ""
    system, tools = _facts(body, wire)
    if claimed_profile is None:
        return by_body(system, tools) or GENERIC, UNKNOWN_VERSION, ""
    if not _contradicts(claimed_profile, system, tools):
        return claimed_profile, version, ""
    named = by_body(system, tools) or GENERIC
    borrowed = f"User-Agent `{user_agent}`" if claimed else "header " + ", ".join(
        f"`{k}: {v}`" for k, v in claimed_profile.identity.headers.items())
    why = "offers " + ", ".join(sorted(tools)[:6]) if tools else "another client's system prompt"
    note = f"sent {claimed_profile.display}'s {borrowed}, but its body is not {claimed_profile.display}'s ({why})"
    own = next((m.group(1) for rx in named.identity.borrowed_user_agents if (m := rx.search(user_agent))), None)
    return named, own or UNKNOWN_VERSION, note
