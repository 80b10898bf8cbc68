"""OpenAI Responses API wire: the item half of the stream machine — every output item, from its
`output_item.added` through its deltas and parts to its `output_item.done`.

Rules:
- `ItemTracker` holds the items of one stream by id and by output_index, in the order added, and
  applies the item-level events of `rules.ITEM_EVENTS` to them; what it finds wrong it reports
  through the machine's `report` (the rule ids of `rules.py`: index, item_open, done_text,
  grammar for an event addressed to the wrong item kind).
- Severity by consequence (docs/wire-responses.md): an error where the openai SDK raises or Codex
  loses data (an event for an item never added or already done, a duplicate output_index, a
  message part indexed wrongly), a warning where both tolerate it.
- A `*.done` text is compared with the concatenated deltas; an item that is not done when the
  stream ends keeps what was streamed into it (`with_streamed_text`).
- `delta_target` names, after a delta the general path applied, where the next delta of the same
  item and part would go without any report (the stream machine's fast path, stream.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.wire.responses.rules import (
    DONE_TEXT,
    GRAMMAR,
    INDEX,
    ITEM_OPEN,
    ITEM_TEXT_FIELD,
    ItemEvent,
)
from conformance.wire.sse import SSEEvent


@dataclass
class PartState:
    """One content / summary part of an item, as streamed."""

    text: list[str] = field(default_factory=list)
    deltas: int = 0
    text_done: bool = False
    done: bool = False
    added: bool = True


@dataclass
class ItemState:
    """One output item, as added and streamed into."""

    item: dict  # the item as added, then as done
    output_index: int
    event: int  # the event that added it
    done: bool = False
    parts: dict[tuple[str, int], PartState] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)  # arguments / input deltas
    deltas: int = 0
    text_done: bool = False


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ItemTracker:
    """The output items of one stream. `report(check_id, message, ev, etype, **kw)` records a violation."""

    def __init__(self, report: Callable[..., None]) -> None:
        self._v = report
        self.items: dict[str, ItemState] = {}  # item id -> item
        self.by_index: dict[int, ItemState] = {}
        self.order: list[ItemState] = []

    def lifecycle(self, etype: str, data: dict, ev: SSEEvent) -> None:
        """An `output_item.added` or `output_item.done` event."""
        item, oi = data.get("item"), data.get("output_index")
        if not isinstance(item, dict) or not isinstance(oi, int):
            return  # the schema reported it
        iid = item.get("id") if isinstance(item.get("id"), str) else f"#output_index {oi}"
        if etype == "response.output_item.added":
            if oi in self.by_index:
                self._v(INDEX, f"output_index {oi} added twice (the openai SDK raises: duplicate output index)", ev,
                        etype, expected=f"output_index {len(self.order)}", seen=oi, pointer="/output_index")
                return
            if oi != len(self.order):
                self._v(INDEX, f"output_index {oi} but {len(self.order)} item(s) so far (a gap; clients tolerate it)",
                        ev, etype, severity="warning", expected=len(self.order), seen=oi, pointer="/output_index")
            st = ItemState(copy.deepcopy(item), oi, ev.index)
            field_name = ITEM_TEXT_FIELD.get(item.get("type"))
            if field_name and isinstance(item.get(field_name), str) and item[field_name]:
                st.text.append(item[field_name])
            for slot in ("content", "summary"):
                for k, part in enumerate(item.get(slot) or [] if isinstance(item.get(slot), list) else []):
                    if isinstance(part, dict):
                        st.parts[(slot, k)] = PartState([_str(part.get("text") or part.get("refusal"))])
            self.items[iid] = st
            self.by_index[oi] = st
            self.order.append(st)
            return
        st = self.items.get(iid) or self.by_index.get(oi)
        if st is None:
            # Codex and the SDK take the done item as it is: tolerated, but nothing was streamed for it
            self._v(ITEM_OPEN, f"output_item.done for {iid!r} that was never added", ev, etype, severity="warning",
                    expected="response.output_item.added first", seen=iid, pointer="/item/id")
            st = ItemState(copy.deepcopy(item), oi, ev.index)
            self.items[iid] = st
            self.by_index.setdefault(oi, st)
            self.order.append(st)
            st.done = True
            return
        if st.done:
            self._v(ITEM_OPEN, f"output_item.done for {iid!r} a second time (Codex records the item twice)", ev,
                    etype, expected="one output_item.done per item", seen=iid, pointer="/item/id")
            return
        if st.output_index != oi or (st.item.get("id") is not None and st.item.get("id") != item.get("id")) \
                or st.item.get("type") != item.get("type"):
            self._v(ITEM_OPEN, f"output_item.done changes the item's identity: added {label(st.item)} at "
                    f"output_index {st.output_index}, done {label(item)} at {oi} (the openai SDK raises)", ev, etype,
                    expected=label(st.item), seen=label(item), pointer="/item")
        st.done = True
        self._done_item_text(st, item, ev, etype)
        st.item = copy.deepcopy(item)

    def _done_item_text(self, st: ItemState, item: dict, ev: SSEEvent, etype: str) -> None:
        """The done item's texts against what was streamed for it."""
        field_name = ITEM_TEXT_FIELD.get(item.get("type"))
        if field_name:
            if st.deltas or st.text_done:
                self._same(field_name, "".join(st.text), item.get(field_name), ev, etype, f"/item/{field_name}")
            return
        for (slot, k), part in st.parts.items():
            parts = item.get(slot)
            if not isinstance(parts, list):
                continue
            if not 0 <= k < len(parts) or not isinstance(parts[k], dict):  # a negative index names no part
                if part.deltas:
                    self._v(DONE_TEXT, f"the done item has no {slot}[{k}], which was streamed", ev, etype,
                            expected=f"{slot}[{k}] with the streamed text", seen=f"{len(parts)} part(s)",
                            pointer=f"/item/{slot}")
                continue
            if part.deltas or part.text_done:
                key = "refusal" if parts[k].get("type") == "refusal" else "text"
                self._same(f"{slot}[{k}].{key}", "".join(part.text), parts[k].get(key), ev, etype,
                           f"/item/{slot}/{k}/{key}")

    def _same(self, what: str, streamed: str, done: Any, ev: SSEEvent, etype: str, ptr: str) -> None:
        if isinstance(done, str) and done != streamed:
            self._v(DONE_TEXT, f"{etype}: {what} differs from the concatenated deltas", ev, etype,
                    expected=preview_text(streamed), seen=preview_text(done), pointer=ptr)

    def event(self, etype: str, spec: ItemEvent, data: dict, ev: SSEEvent) -> None:
        """An item-level event of `ITEM_EVENTS` (a delta, a done text, a part added or done)."""
        iid, oi = data.get("item_id"), data.get("output_index")
        st = self.items.get(iid) if isinstance(iid, str) else None
        if st is None:
            self._v(ITEM_OPEN, f"{etype} for item {iid!r}, which was never added (the openai SDK raises)", ev, etype,
                    expected="response.output_item.added for the item first", seen=repr(iid), pointer="/item_id")
            return
        if st.done:
            self._v(ITEM_OPEN, f"{etype} for item {iid!r} after its output_item.done", ev, etype,
                    expected="every event of an item before its output_item.done", seen=repr(iid), pointer="/item_id")
            return
        if isinstance(oi, int) and oi != st.output_index:
            self._v(ITEM_OPEN, f"{etype} for item {iid!r} names output_index {oi}, the item is at "
                    f"{st.output_index} (the openai SDK looks items up by output_index)", ev, etype,
                    expected=st.output_index, seen=oi, pointer="/output_index")
        itype = st.item.get("type")
        if spec.item_types and itype not in spec.item_types:
            self._v(GRAMMAR, f"{etype} for a {itype!r} item (it belongs to " + " / ".join(spec.item_types)
                    + " items)", ev, etype, severity="error" if spec.sdk_strict else "warning",
                    expected=" / ".join(spec.item_types), seen=repr(itype), pointer="/item_id")
            return
        if spec.action == "touch":
            return
        if spec.index_key is None:  # the item's own text: arguments / input
            if spec.action == "delta":
                if st.text_done:
                    self._v(ITEM_OPEN, f"{etype} after the {spec.key} were done", ev, etype,
                            expected=f"no {spec.key} delta after its done event", seen="a delta", pointer="/delta")
                st.text.append(_str(data.get("delta")))
                st.deltas += 1
            else:
                if st.deltas or not isinstance(data.get(spec.key), str):
                    self._same(spec.key, "".join(st.text), data.get(spec.key), ev, etype, f"/{spec.key}")
                elif data[spec.key] and not "".join(st.text):
                    self._no_deltas(etype, spec.key, ev)
                if not st.deltas and isinstance(data.get(spec.key), str):
                    st.text = [data[spec.key]]
                st.text_done = True
            return
        k = data.get(spec.index_key)
        if not isinstance(k, int):
            return  # the schema reported it
        slot_key = (spec.slot, k)
        part = st.parts.get(slot_key)
        if spec.action == "part_added":
            count = sum(1 for s, _ in st.parts if s == spec.slot)
            if part is not None:
                self._v(INDEX, f"{spec.index_key} {k} of item {iid!r} added twice", ev, etype,
                        severity="error" if itype == "message" else "warning", expected=count, seen=k,
                        pointer=f"/{spec.index_key}")
                return
            if k != count:
                self._v(INDEX, f"{spec.index_key} {k} but item {iid!r} has {count} part(s) so far"
                        + (" (the openai SDK indexes message parts by it)" if itype == "message" else ""), ev, etype,
                        severity="error" if itype == "message" else "warning", expected=count, seen=k,
                        pointer=f"/{spec.index_key}")
            p = data.get("part") if isinstance(data.get("part"), dict) else {}
            st.parts[slot_key] = PartState([_str(p.get("text") or p.get("refusal"))])
            return
        if part is None:
            strict = spec.sdk_strict
            self._v(ITEM_OPEN, f"{etype} for {spec.slot} part {k} of item {iid!r}, which was never added"
                    + (" (the openai SDK indexes the message's parts and raises)" if strict else ""), ev, etype,
                    severity="error" if strict else "warning",
                    expected=f"the part's added event first ({spec.index_key} {k})", seen="no part",
                    pointer=f"/{spec.index_key}")
            part = st.parts[slot_key] = PartState(added=False)
        if spec.action == "part_done":
            p = data.get("part") if isinstance(data.get("part"), dict) else {}
            key = "refusal" if p.get("type") == "refusal" else "text"
            if part.done:
                self._v(ITEM_OPEN, f"{etype}: part {k} of item {iid!r} done twice", ev, etype, severity="warning",
                        expected="one done event per part", seen="a second one", pointer=f"/{spec.index_key}")
            if part.deltas or part.text_done:
                self._same(f"part {k}", "".join(part.text), p.get(key), ev, etype, f"/part/{key}")
            part.done = True
            return
        if part.done:
            self._v(ITEM_OPEN, f"{etype} for part {k} of item {iid!r} after its part was done", ev, etype,
                    expected="deltas before the part's done event", seen="a late event", pointer=f"/{spec.index_key}")
            return
        if spec.action == "delta":
            if part.text_done:
                self._v(ITEM_OPEN, f"{etype} after the text of part {k} was done", ev, etype,
                        expected="no delta after the text's done event", seen="a delta", pointer="/delta")
            part.text.append(_str(data.get("delta")))
            part.deltas += 1
            return
        done = data.get(spec.key)
        if part.deltas or not isinstance(done, str):
            self._same(f"{spec.slot}[{k}].{spec.key}", "".join(part.text), done, ev, etype, f"/{spec.key}")
        elif done and not "".join(part.text):
            self._no_deltas(etype, spec.key, ev)
        if not part.deltas and isinstance(done, str):
            part.text = [done]
        part.text_done = True

    def delta_target(self, spec: ItemEvent, data: dict) -> tuple[int, int | None, ItemState | PartState] | None:
        """After `event` applied the delta `data` (`spec.action` "delta"): (output_index, part
        index or None, the state its text goes to) when a next delta naming the same item id,
        output_index and part index, exact ints >= 0, would be applied by `event` with no report
        and no other effect than `text.append(delta)` and `deltas += 1`: the item is open and at
        that output_index, of a kind the event belongs to, the part exists and is not done, the
        text is not done. None otherwise."""
        iid, oi = data.get("item_id"), data.get("output_index")
        st = self.items.get(iid) if isinstance(iid, str) else None
        if st is None or st.done or type(oi) is not int or oi < 0 or oi != st.output_index:
            return None
        if spec.item_types and st.item.get("type") not in spec.item_types:
            return None
        if spec.index_key is None:
            return None if st.text_done else (oi, None, st)
        k = data.get(spec.index_key)
        part = st.parts.get((spec.slot, k)) if type(k) is int and k >= 0 else None
        if part is None or part.done or part.text_done:
            return None
        return oi, k, part

    def _no_deltas(self, etype: str, key: str, ev: SSEEvent) -> None:
        self._v(DONE_TEXT, f"{etype} carries the whole {key} but no delta streamed it (tolerated: nothing showed "
                "while it was generated)", ev, etype, severity="warning", expected="deltas before the done event",
                seen="none", pointer=f"/{key}")


def with_streamed_text(item: dict, states: dict[str, ItemState]) -> dict:
    """An item not done yet carries what was streamed into it (a cut stream keeps its partial text)."""
    st = states.get(item.get("id")) if isinstance(item.get("id"), str) else None
    if st is None or st.done:
        return item
    item = copy.deepcopy(item)
    field_name = ITEM_TEXT_FIELD.get(item.get("type"))
    if field_name:
        item[field_name] = "".join(st.text)
        return item
    for (slot, k), part in st.parts.items():
        parts = item.setdefault(slot, [])
        if not isinstance(parts, list) or k < 0:  # a negative index names no part (the schema says so)
            continue
        while len(parts) <= k:
            parts.append({"type": "output_text" if item.get("type") == "message" else
                          ("summary_text" if slot == "summary" else "reasoning_text"), "text": ""})
        if isinstance(parts[k], dict):
            parts[k]["refusal" if parts[k].get("type") == "refusal" else "text"] = "".join(part.text)
    return item


def label(item: dict) -> str:
    return f"{item.get('type')} {item.get('id') or item.get('call_id') or ''}".strip()


def item_difference(a: dict, b: dict) -> str | None:
    """The first way output item `b` differs from the streamed item `a` (None: the same)."""
    for key in ("type", "id", "call_id", "name", "namespace", "arguments", "input"):
        if key in a or key in b:
            if a.get(key) != b.get(key) and not (key == "id" and (a.get(key) is None or b.get(key) is None)):
                return f"{key} {preview_text(a.get(key))} vs {preview_text(b.get(key))}"
    for slot in ("content", "summary"):
        pa, pb = a.get(slot), b.get(slot)
        if isinstance(pa, list) and isinstance(pb, list):
            ta = [p.get("text") or p.get("refusal") for p in pa if isinstance(p, dict)]
            tb = [p.get("text") or p.get("refusal") for p in pb if isinstance(p, dict)]
            if ta != tb:
                return f"{slot} texts {preview_text(ta)} vs {preview_text(tb)}"
    return None


def preview_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text[:120] + ("…" if len(text) > 120 else ""))
