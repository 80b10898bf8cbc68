"""The machine's own folders and login name in captured text, replaced by stable placeholders.

Rules (used by `conformance.capture.redact`, on by default for every capture):
- The home folders (the recorder's own, and a client's scratch HOME the recapture names) become
  HOME_PLACEHOLDER; each working folder a request names (any registered client's
  `working_directory` patterns, and the generic profile's, read from every string of the body)
  becomes WORK_PLACEHOLDER, numbered from the second one on (`/home/user/project-2`). A folder
  also written as a slug (`/tmp/x/project` as `-tmp-x-project`, as Qwen Code names its memory
  folder) has its slug replaced by the placeholder's slug.
- A home folder of a generic account (`/root`, `/home/user`) names nobody and stays. A folder
  matches only whole: not inside a longer path or a closing tag, not followed by a letter,
  digit, `_` or `-` (`/srv/x` is not `/srv/xy`); the longest folder is replaced first, so a project inside the home folder is the
  project placeholder.
- The login name becomes LOGIN_PLACEHOLDER as a whole word, unless it is a generic account name
  (`root`, `user`, ...): those name nobody, and replacing a common word would change prose.
- Placeholders are absolute paths, so a capture still replays: the reference engine joins a
  scenario's relative paths onto the working folder, whichever it is. Each keeps the length of
  what it replaces (padded with `_`, or cut), so a body keeps its byte size and its recorded
  content-length stays true.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Iterable
from typing import Any

from conformance.clients.profile import GENERIC, PROFILES

HOME_PLACEHOLDER = "/home/user"
WORK_PLACEHOLDER = "/home/user/project"
LOGIN_PLACEHOLDER = "user"
GENERIC_LOGINS = frozenset({"root", "user", "admin", "ubuntu", "runner", "node", "nobody", "debian", "vscode"})
MIN_FOLDER = 5  # shorter "folders" (`/`, `/tmp`) name nobody and would hit unrelated text
_END = r"(?![\w-])"
_START = r"(?<![\w<~.-])"  # not inside a longer path or name, nor a closing tag


def own_home() -> str:
    return os.path.expanduser("~")


def own_login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME / USER
        return ""


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, list):
        for x in obj:
            yield from _strings(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _strings(x)


def fit(placeholder: str, length: int) -> str:
    """The placeholder at `length` characters: padded with `_`, or cut (module rules)."""
    return placeholder.ljust(length, "_")[:length]


def _slug(path: str) -> str:
    return path.replace("/", "-")


class LocalFolders:
    """The folders and login name of one capture session and their placeholders (module rules)."""

    def __init__(self, homes: Iterable[str] = (), login: str = "") -> None:
        self._placeholders: dict[str, str] = {}
        self._works = 0
        self._compiled: list[tuple[re.Pattern[str], str]] = []
        for home in homes:
            if os.path.basename(home.rstrip("/")) not in GENERIC_LOGINS:  # `/root` names nobody (and is a word)
                self._add(home.rstrip("/"), HOME_PLACEHOLDER)
        self._login = None
        self._login_placeholder = fit(LOGIN_PLACEHOLDER, len(login))
        if login and login not in GENERIC_LOGINS and len(login) >= 3:
            self._login = re.compile(rf"(?<![\w-]){re.escape(login)}{_END}")

    def _add(self, real: str, placeholder: str) -> None:
        if len(real) < MIN_FOLDER or real in self._placeholders or not real.startswith("/"):
            return
        placeholder = fit(placeholder, len(real))
        self._placeholders[real] = placeholder
        pairs = [(real, placeholder), (_slug(real), _slug(placeholder))]
        self._compiled += [(re.compile(_START + re.escape(r) + _END), p) for r, p in pairs]
        self._compiled.sort(key=lambda pair: -len(pair[0].pattern))

    def learn(self, body: Any) -> None:
        """Find the working folders a request body names (module rules)."""
        patterns = [rx for p in (*PROFILES.values(), GENERIC) for rx in p.working_directory]
        for text in _strings(body):
            for rx in patterns:
                for m in rx.finditer(text):
                    real = m.group(1).rstrip(".,;/")
                    if real not in self._placeholders and len(real) >= MIN_FOLDER:
                        self._works += 1
                        suffix = f"-{self._works}" if self._works > 1 else ""
                        self._add(real, WORK_PLACEHOLDER + suffix)

    def replace(self, text: str) -> str:
        for rx, placeholder in self._compiled:
            text = rx.sub(placeholder, text)
        if self._login is not None:
            text = self._login.sub(self._login_placeholder, text)
        return text

