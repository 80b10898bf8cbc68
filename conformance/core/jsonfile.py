"""Reading one JSON document from a file, with an error that says what, why and how to fix.

Rules:
- `read_json(path, error, ...)` returns the parsed document or raises the caller's own `error`
  type (so callers keep catching what they always caught), for three causes: the file is
  missing, it cannot be read (permissions, a folder, not UTF-8 text), it is not JSON (or nests
  deeper than the one bounded parser reads: a file may come from a stranger).
- The caller words each cause: a message template with `{path}` and, where there is one, `{why}`
  (the underlying error). The defaults are plain; a caller adds its own hint (what to run, which
  contract to read).
- A missing file raises without the FileNotFoundError chained (the message says it all); the
  other causes keep the underlying error as `__cause__` for a debugger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.core.bounded_json import parse as parse_json

MISSING = "{path} does not exist"
UNREADABLE = "{path} cannot be read ({why}); it should be a UTF-8 text file you may read"
NOT_JSON = "{path} is not JSON ({why})"


def read_json(path: Path | str, error: type[Exception], *, missing: str = MISSING, unreadable: str = UNREADABLE,
              not_json: str = NOT_JSON) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(missing.format(path=path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(unreadable.format(path=path, why=exc)) from exc
    try:
        return parse_json(text)
    except ValueError as exc:  # not JSON, or past the bounded parser's depth or size
        raise error(not_json.format(path=path, why=exc)) from exc
