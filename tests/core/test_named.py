"""Tables of named objects (`conformance.core.named`): one object per name, told apart by identity."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.core.named import add_named, remove_named


@dataclass(frozen=True)
class Thing:
    name: str


def test_one_object_per_name_told_apart_by_identity():
    table: dict[str, Thing] = {}
    first = Thing("a")
    assert add_named(table, first, "a thing") is first
    assert add_named(table, first, "a thing") is first  # the same object again: a no-op
    twin = Thing("a")  # equal, but another object
    with pytest.raises(ValueError, match="a thing named 'a' is registered already"):
        add_named(table, twin, "a thing")
    remove_named(table, twin)  # not the registered one: nothing leaves
    assert table == {"a": first} and table["a"] is first
    remove_named(table, first)
    assert table == {}
