"""The report folder is the suite's own: a marker says the suite made it, a folder with other
files and no marker is refused, and nothing the suite did not write is removed."""

from __future__ import annotations

import pytest

from conformance.report.artifacts import MARKER, ReportDirError, prepare, refusal


def _previous_run(folder):
    """What a run leaves: records, run settings, one failure folder, the summary and the page."""
    (folder / "results").mkdir()
    (folder / "results" / "results-1-abc.jsonl").write_text("{}\n")
    (folder / "results" / "run.json").write_text("{}\n")
    failure = folder / "failures" / "claude-code" / "2.1" / "default" / "test_replay"
    failure.mkdir(parents=True)
    (failure / "failure.txt").write_text("x\n")
    (failure / "1.response.raw").write_bytes(b"x")
    (folder / "summary.md").write_text("x\n")
    (folder / "report.html").write_text("x\n")


def test_a_new_folder_is_made_and_marked(tmp_path):
    folder = tmp_path / "a" / "reports"
    prepare(folder)
    assert (folder / MARKER).is_file()
    prepare(folder)  # the suite's own now: prepared again without complaint


def test_an_empty_folder_is_adopted(tmp_path):
    prepare(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER]


def test_a_folder_with_files_and_no_marker_is_refused_and_left_as_it_was(tmp_path):
    _previous_run(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(ReportDirError, match=f"holds files the suite did not write \\(no {MARKER} marker\\)"):
        prepare(tmp_path)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_marked_folder_loses_the_previous_run_and_keeps_everything_else(tmp_path):
    prepare(tmp_path)
    _previous_run(tmp_path)
    mine = [tmp_path / "notes.txt", tmp_path / "results" / "my-analysis.csv",
            tmp_path / "failures" / "claude-code" / "keep.md"]
    for path in mine:
        path.write_text("mine\n")
    prepare(tmp_path)
    assert all(p.read_text() == "mine\n" for p in mine)
    assert not (tmp_path / "summary.md").exists() and not (tmp_path / "report.html").exists()
    assert not list((tmp_path / "results").glob("results-*")) and not (tmp_path / "results" / "run.json").exists()
    assert not (tmp_path / "failures" / "claude-code" / "2.1").exists()


def test_a_folder_under_a_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    problem = refusal(tmp_path / "f" / "reports")
    assert problem and "which is a file" in problem and "\n" not in problem
    with pytest.raises(ReportDirError, match="which is a file"):
        prepare(tmp_path / "f" / "reports")
    assert "is a file" in refusal(tmp_path / "f")


def test_the_repository_reports_folder_is_the_suites_own():
    from conformance.core.paths import captured_dir

    reports = captured_dir().parent / "reports"
    assert (reports / MARKER).is_file() and refusal(reports) is None
