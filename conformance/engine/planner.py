"""What the engine "generates" for a conversation: thinking, text and tool calls, then the limits.

Rules:
- A matching scenario plays its next turn (scenarios.py). Otherwise the plain answers below, in
  this order, all deterministic:
  1. a forced tool choice with no scenario -> one call of the forced (or first) tool, arguments
     filled from its schema;
  2. needle recall: when the last user text mentions a "secret phrase" / "needle" / "passphrase",
     the answer is `The secret phrase is X.` with X taken from the first sentence of the form
     `The secret phrase is X.` (also `secret code/word/password/passphrase`, `needle: X`; quotes
     optional) anywhere in the prompt; `I found no secret phrase in the prompt.` otherwise;
  3. `repeat|say|echo [exactly|back|verbatim]: TEXT` -> TEXT;
  4. `count from A to B` -> `A, A+1, ..., B`;
  5. a request for a long answer (`long answer`, `long essay`, `long story`, `at least N words`)
     -> LONG_ANSWER_SENTENCES numbered sentences (7,692 tokens: it hits any smaller max_tokens);
  6. otherwise DEFAULT_ANSWER.
- A forced tool choice (Anthropic any / tool, OpenAI required / a named function) is honoured
  over a scenario's plan: with a named tool only calls of that tool stay; a turn left with no call
  becomes one call of the forced (or first) tool, arguments filled from its schema.
- Limits, in order: stop sequences cut the text at the earliest match (stop_reason stop_sequence
  and the matched string; later tool calls are not emitted); the output budget
  (min(max_tokens, context left, output-cap)) truncates thinking, then text, at a token end, and
  drops tool calls that do not fit whole (stop_reason max_tokens).
- Fault `max-tokens-silent-truncation`: a max_tokens above the room the context leaves gets an
  answer that fills the room exactly and ends with end_turn / stop (a clamp reported as a
  natural end).
- `thinking` is produced only when the request enabled it (Anthropic enabled/adaptive, OpenAI a
  reasoning effort other than none).
- Fault `tool-choice-ignored` (decoding not constrained to the tool-call format, as llama.cpp
  with a Hermes-style template answered `required` / `any`): a forced choice plans as `auto`
  would, except that the calls `auto` would make are said in prose instead (no call, no
  call-shaped text), so the turn ends in text with end_turn. Without a forced choice it changes
  nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conformance.engine import faults as fault_modes
from conformance.engine import scenarios as engine_scenarios
from conformance.engine import tokenizer
from conformance.engine.conversation import Conversation, compact_json
from conformance.engine.faults import (
    CONTEXT_TRUNCATED,
    MAX_TOKENS_SILENT_TRUNCATION,
    OUTPUT_CAP,
    TOOL_CHOICE_IGNORED,
    UNBOUNDED_REASONING,
)

DEFAULT_ANSWER = (
    "Hello! This is the reference engine. No scripted task matched, so here is a plain answer: "
    "one two three four five six seven eight nine ten. Done."
)
DEFAULT_THINKING = "The request has no scripted task; I answer plainly."
LONG_ANSWER_SENTENCES = 600

_NEEDLE_ASK = re.compile(r"secret\s+(?:phrase|code|word|password|passphrase)|\bneedle\b|\bpassphrase\b", re.I)
_NEEDLE = re.compile(
    r"(?:\bsecret\s+(?:phrase|code|word|password|passphrase)|\bpassphrase|\bneedle)\s*(?:is|:|=)\s*:?\s*"
    r"[\"'“‘`]?([^\"'”’`\n]+?)[\"'”’`]?\s*(?:\.(?:\s|$)|\n|$)",
    re.I,
)
_ECHO = re.compile(r"\b(?:repeat|say|echo|reply with)(?:\s+(?:exactly|back|verbatim|only))*\s*:\s*(.+)", re.I | re.S)
_COUNT = re.compile(r"\bcount\s+from\s+(-?\d+)\s+to\s+(-?\d+)", re.I)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_LONG = re.compile(r"\blong\s+(?:answer|essay|story|text|reply|response)\b|\bat\s+least\s+\d+\s+words\b", re.I)


@dataclass
class Reply:
    thinking: str | None = None
    text: str = ""
    calls: list[tuple[str, object]] = field(default_factory=list)  # arguments: a dict, or a custom tool's raw text
    stop_reason: str = "end_turn"  # Anthropic names; routes map them
    stop_sequence: str | None = None
    output_tokens: int = 0
    scenario: str | None = None


@dataclass
class Context:
    faults: frozenset
    scenarios: list
    max_context: int
    prompt_tokens: int


def last_user_text(conv: Conversation) -> str:
    for m in reversed(conv.messages):
        if m.role == "user" and m.texts:
            return "\n".join(m.texts)
    return ""


def _needle_answer(conv: Conversation, faults) -> str:
    hay = conv.haystack()
    if conv.truncated_tokens:
        hay = tokenizer.drop_prefix(hay, conv.truncated_tokens)
    if CONTEXT_TRUNCATED in faults and len(hay) > 400:
        hay = hay[len(hay) // 4:]  # the silent drop of the prompt's start
    m = _NEEDLE.search(hay)
    if not m:
        return "I found no secret phrase in the prompt."
    return f"The secret phrase is {m.group(1).strip()}."


def _long_answer() -> str:
    return " ".join(f"This is sentence {i} of the long answer." for i in range(1, LONG_ANSWER_SENTENCES + 1))


def _plain_text(conv: Conversation, faults) -> str:
    q = last_user_text(conv)
    if _NEEDLE_ASK.search(q):
        return _needle_answer(conv, faults)
    m = _ECHO.search(q)
    if m:
        return m.group(1).strip().strip("\"'“”").strip()
    m = _COUNT.search(q)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if abs(b - a) <= 100000:
            step = 1 if b >= a else -1
            return ", ".join(str(i) for i in range(a, b + step, step))
    if _LONG.search(q):
        return _long_answer()
    return DEFAULT_ANSWER


def _forced_call(conv: Conversation) -> list[tuple[str, dict]]:
    if conv.tool_choice not in ("any", "tool") or not conv.tools:
        return []
    tool = conv.tools[0]
    if conv.tool_choice == "tool":
        tool = next((t for t in conv.tools if t.name == conv.tool_choice_name), tool)
    return [(tool.name, engine_scenarios.fill_object(tool.schema))]


def _calls_in_words(text: str, calls: list[tuple[str, dict]]) -> str:
    """`tool-choice-ignored`: what an unconstrained model writes instead of the calls it was forced
    to make: the step described in words, with neither a template's call marker nor call JSON."""
    steps = []
    for name, args in calls:
        if isinstance(args, str):  # a freeform tool's raw input (a patch): name the file it touches
            m = _PATCH_FILE.search(args)
            target = m.group(1).strip() if m else ""
        else:
            target = next((v.strip() for v in args.values() if isinstance(v, str) and v.strip()), "")
        steps.append(f"use the {name} tool" + (f" on {target[:80]}" if target else ""))
    said = f"To do this, I would {' and then '.join(steps)}. Let me know if you want me to go ahead."
    return f"{text}\n\n{said}" if text else said


def _long_text(tokens: int) -> str:
    """An answer longer than `tokens`, cut at its last token end within them."""
    parts, n, i = [], 0, 0
    while n <= tokens:
        i += 1
        s = f"This is sentence {i} of an answer that does not end by itself. "
        parts.append(s)
        n += tokenizer.count(s)
    return tokenizer.truncate("".join(parts), tokens)


def _reasoning_filler(tokens: int) -> str:
    parts, n, i = [], 0, 0
    while n < tokens:
        i += 1
        s = f"Let me reconsider step {i} of the problem once more before answering. "
        parts.append(s)
        n += tokenizer.count(s)
    return tokenizer.truncate("".join(parts), tokens)


def plan(conv: Conversation, ctx: Context) -> Reply:
    budget = max(0, ctx.max_context - ctx.prompt_tokens)
    if conv.max_tokens is not None:
        budget = min(budget, conv.max_tokens)
    if OUTPUT_CAP in ctx.faults:
        budget = min(budget, fault_modes.OUTPUT_CAP_TOKENS)

    room = max(0, ctx.max_context - ctx.prompt_tokens)
    if (MAX_TOKENS_SILENT_TRUNCATION in ctx.faults and conv.max_tokens is not None
            and conv.max_tokens > room > 0):
        # The answer runs to the end of the context, and the engine calls that a natural end.
        text = _long_text(room)
        return Reply(text=text, stop_reason="end_turn", output_tokens=tokenizer.count(text))

    if UNBOUNDED_REASONING in ctx.faults:
        thinking = _reasoning_filler(budget)
        return Reply(thinking=thinking, stop_reason="max_tokens", output_tokens=tokenizer.count(thinking))

    thinking = None
    text = ""
    calls: list[tuple[str, dict]] = []
    scenario_id = None
    ignores_choice = TOOL_CHOICE_IGNORED in ctx.faults and conv.tool_choice in ("any", "tool")
    match = engine_scenarios.find(ctx.scenarios, conv) if ctx.scenarios else None
    turn = engine_scenarios.plan(match, conv) if match else None
    if turn is not None and turn.calls and conv.tool_choice == "none":
        turn = None
    if turn is not None:
        scenario_id = turn.scenario
        thinking = turn.thinking
        text = turn.text or ""
        calls = turn.calls
    else:
        calls = [] if ignores_choice else _forced_call(conv)
        if not calls:
            text = _plain_text(conv, ctx.faults)
    if ignores_choice and calls:
        text, calls = _calls_in_words(text, calls), []
    elif not ignores_choice and conv.tool_choice in ("any", "tool") and conv.tools:
        # A forced choice wins over the scenario's plan: a named tool keeps only its calls, and a
        # turn the scenario planned as text becomes one call of the forced (or first) tool.
        if conv.tool_choice == "tool":
            calls = [c for c in calls if c[0] == conv.tool_choice_name]
        if not calls:
            text, calls = "", _forced_call(conv)
    if not conv.parallel_tools:
        calls = calls[:1]
    if conv.thinking:
        thinking = thinking or DEFAULT_THINKING
    else:
        thinking = None

    reply = Reply(scenario=scenario_id)
    used = 0
    if thinking is not None:
        t = tokenizer.count(thinking)
        if t > budget:
            reply.thinking = tokenizer.truncate(thinking, budget)
            reply.stop_reason = "max_tokens"
            reply.output_tokens = tokenizer.count(reply.thinking)
            return reply
        reply.thinking = thinking
        used += t

    if text and conv.stop:
        hits = [(text.find(s), s) for s in conv.stop if s and s in text]
        if hits:
            pos, seq = min(hits)
            reply.text = text[:pos]
            reply.stop_reason = "stop_sequence"
            reply.stop_sequence = seq
            used += tokenizer.count(reply.text)
            if used > budget:
                reply.text = tokenizer.truncate(reply.text, budget - (used - tokenizer.count(reply.text)))
                reply.stop_reason, reply.stop_sequence = "max_tokens", None
            reply.output_tokens = min(used, budget)
            return reply
    if text:
        t = tokenizer.count(text)
        if used + t > budget:
            reply.text = tokenizer.truncate(text, budget - used)
            reply.stop_reason = "max_tokens"
            reply.output_tokens = used + tokenizer.count(reply.text)
            return reply
        reply.text = text
        used += t
    for name, args in calls:
        c = tokenizer.count(name) + tokenizer.count(compact_json(args))
        if used + c > budget:
            reply.stop_reason = "max_tokens"
            break
        reply.calls.append((name, args))
        used += c
    if reply.stop_reason != "max_tokens":
        reply.stop_reason = "tool_use" if reply.calls else "end_turn"
    reply.output_tokens = used
    return reply
