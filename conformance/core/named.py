"""Tables of named objects, one object per name: the wires (`conformance.wire.registry`) and the
client profiles (`conformance.clients.profile`).

Rules:
- A name belongs to one object: registering the same object again is a no-op (a module imported
  twice), another object under a taken name is refused with a ValueError naming what it is.
- Removing an object removes it only while it is the one registered under its name.
- Objects are told apart by identity (`is`), never by equality: two wires or two clients that
  happen to compare equal are still two.
"""

from __future__ import annotations

from typing import Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


def add_named(table: dict[str, N], item: N, what: str) -> N:
    """`item` under its name in `table` (`what` names the kind in the refusal: "a wire")."""
    existing = table.get(item.name)
    if existing is not None and existing is not item:
        raise ValueError(f"{what} named {item.name!r} is registered already")
    table[item.name] = item
    return item


def remove_named(table: dict[str, N], item: N) -> None:
    """`item` out of `table`, if it is the one registered under its name."""
    if table.get(item.name) is item:
        del table[item.name]
