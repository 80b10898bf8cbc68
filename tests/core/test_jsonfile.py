"""`read_json`: a JSON file's document, or the caller's own error saying which of the three causes
(missing, unreadable, not JSON) stopped it; and the two readers built on it keep their wording."""

from __future__ import annotations

import json

import pytest

from conformance.capture.format import CaptureFormatError, load_capture
from conformance.core.jsonfile import read_json
from conformance.report.baseline import BaselineError
from conformance.report.baseline import load as load_baseline


class OwnError(ValueError):
    pass


def test_reads_the_document(tmp_path):
    p = tmp_path / "doc.json"
    p.write_text(json.dumps({"é": [1, None]}, ensure_ascii=False), encoding="utf-8")
    assert read_json(p, OwnError) == {"é": [1, None]}
    assert read_json(str(p), OwnError) == {"é": [1, None]}


def test_missing_file(tmp_path):
    p = tmp_path / "absent.json"
    with pytest.raises(OwnError, match=r"absent\.json does not exist$") as info:
        read_json(p, OwnError)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(OwnError, match=r"^write .*absent\.json first$"):
        read_json(p, OwnError, missing="write {path} first")


def test_unreadable_file(tmp_path):
    folder = tmp_path / "a-folder.json"
    folder.mkdir()
    with pytest.raises(OwnError, match=r"a-folder\.json cannot be read \(.*\); it should be a UTF-8 text file") as info:
        read_json(folder, OwnError)
    assert isinstance(info.value.__cause__, OSError)
    latin = tmp_path / "latin.json"
    latin.write_bytes('"caf\u00e9"'.encode("latin-1"))
    with pytest.raises(OwnError, match="cannot be read") as info:
        read_json(latin, OwnError)
    assert isinstance(info.value.__cause__, UnicodeDecodeError)


def test_not_json(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text("{not json", encoding="utf-8")
    with pytest.raises(OwnError, match=r"broken\.json is not JSON \(Expecting property name") as info:
        read_json(p, OwnError)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)
    with pytest.raises(OwnError, match=r"^oops: .*broken\.json$"):
        read_json(p, OwnError, not_json="oops: {path}")


def test_callers_keep_their_error_type_and_hint(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(BaselineError, match=r"does not exist; write one with --conformance-baseline-write .*none\.json"):
        load_baseline(missing)
    with pytest.raises(CaptureFormatError, match=r"none\.json: no such capture file"):
        load_capture(missing)
    broken = tmp_path / "broken.json"
    broken.write_text("[", encoding="utf-8")
    with pytest.raises(BaselineError, match=r"^baseline file .*broken\.json is not JSON \("):
        load_baseline(broken)
    with pytest.raises(CaptureFormatError, match=r"broken\.json: not JSON \("):
        load_capture(broken)
