"""Names a user gives the engine's catalogs (`conformance.engine.named`): stripped, checked, refused with the way out."""

from __future__ import annotations

import pytest

from conformance.engine.named import checked_names


class Refused(ValueError):
    pass


def test_names_are_stripped_blanks_dropped_and_unknown_ones_refused():
    catalog = {"a": "one", "b": "two"}
    assert checked_names([" a", "", None, "b "], catalog, "fault", Refused) == ["a", "b"]
    with pytest.raises(Refused, match=r"unknown fault name\(s\): x, y; run `conformance faults` to list the 2 valid"):
        checked_names(["a", "x", "y"], catalog, "fault", Refused)
