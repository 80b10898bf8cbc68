"""The one order of release numbers (client releases, router and engine versions).

Rules: a version is its release part (before `-` or `+`), compared number by number (2.1.332 >
2.1.197 > 2.1.90; a missing part counts as 0), then a pre-release sorts before its release
(1.0.0-rc1 < 1.0.0), then the text after the release compares as text; a part that is not a
number sorts before every number (an `unknown` version is the oldest). Never raises: any string
has a key.
"""

from __future__ import annotations

import re

_SPLIT = re.compile(r"[.\-+_]")


def _parts(text: str) -> tuple:
    return tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in _SPLIT.split(text) if p)


def version_key(version: str | None) -> tuple:
    """A sortable key of a release number (see the module rules)."""
    text = (version or "").strip().lstrip("vV")
    m = re.search(r"[-+]", text)
    release, sep, rest = (text[: m.start()], m.group(0), text[m.end():]) if m else (text, "", "")
    nums = list(_parts(release))
    while nums and nums[-1] == (1, 0, ""):
        nums.pop()  # 1.2 == 1.2.0
    pre = 0 if sep == "-" and rest else 1  # a pre-release sorts before its release
    return (tuple(nums), pre, _parts(rest))
