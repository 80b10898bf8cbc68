"""The engine's catalogs switched on by name (faults.py, variations.py): reading the names a user gave.

Rules: names are stripped and blanks dropped; an unknown name is refused with the bad names and
the `conformance` subcommand that lists the valid ones. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def checked_names(names: Iterable[str | None], catalog: Mapping[str, object], what: str,
                  refusal: type[ValueError]) -> list[str]:
    """The stripped, non-blank `names`; `refusal` naming the ones `catalog` lacks, and `conformance
    <what>s`, which lists the valid ones."""
    names = [n.strip() for n in names if n and n.strip()]
    bad = [n for n in names if n not in catalog]
    if bad:
        raise refusal(f"unknown {what} name(s): {', '.join(bad)}; run `conformance {what}s` to list the "
                      f"{len(catalog)} valid names")
    return names
