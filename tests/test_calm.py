"""The calm-reading check (`pytest_frame_geometry.calm`): it names each rule that recordings of the
transcript before issue 24 break, and passes a view that moves only by the text that arrives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from pytest_frame_geometry.calm import RULES, Sheet, assert_calm, calm_violations, count_by_rule

from tests.calm_recordings import STATUSES

RECORDINGS = Path(__file__).parent / "calm_recordings"
SCROLLBAR = " ▁▂▃▄▅▆▇█"


def recorded(name: str) -> dict[str, list[Sheet]]:
    """A recording made by `tests/calm_recordings/record.py`, per terminal size, as sheets: the
    transcript's rows under its top padding, without the messages' left border and padding."""
    with gzip.open(RECORDINGS / name, "rt", encoding="utf-8") as f:
        data = json.load(f)
    out: dict[str, list[Sheet]] = {}
    for size, recording in data.items():
        sheets, same = [], False
        for k, frame in enumerate(recording["frames"]):
            marks = tuple(frame["marks"])
            same = ("alternative_started" in marks or same) and "turn_committed" not in marks
            rows = tuple(row[2:].rstrip(SCROLLBAR) for row in frame["rows"][1:])
            flags = {
                "idle": frame["busy"] == "False",
                "same": same or "alternative_started" in marks,
                "full": frame["full"] == "True",
            }
            sheets.append(Sheet(k, rows, float(frame["time"]), marks, marks[-1] if marks else "", flags))
        out[size] = sheets
    return out


def judge(sheets: list[Sheet]) -> dict[str, Any]:
    return {
        "statuses": STATUSES,
        "idle": lambda s: s.flags["idle"],
        "same": lambda s: s.flags["same"],
        "reset": lambda before, after: "prose_replaced" in after.marks,
    }


@pytest.mark.parametrize("size,step", [("80x24", 4), ("120x40", 8)])
def test_the_check_names_each_rule_the_transcript_broke_before_issue_24(size: str, step: int) -> None:
    """Recorded at main b65c801: a new game whose first turn makes the scrollbar appear, a correction,
    turns of one to eight paragraphs and ctrl+g with the same prose. The reserve lifted the view by
    its step (4 rows at 80x24, 8 at 120x40) for one line of text, and a new message rose before its
    command row was painted (rule 2); half words hopped rows and the scrollbar re-wrapped the story
    (4); idle turns left blank rows under them (5); the same prose was blanked and typed again (3,
    6); "writing…" flashed (9). Nothing moved down (1)."""
    sheets = recorded("before-24.json.gz")[size]
    found = calm_violations(sheets, **judge(sheets))
    counts = count_by_rule(found)
    assert counts[1] == 0
    for rule in (2, 3, 4, 5, 6, 9):
        assert counts[rule] > 0, (rule, counts)
    details = {v.detail.split(":")[0] for v in found}
    assert f"the view rose {step} rows while 1 rows of text arrived" in details  # the reserve's step
    assert "the view rose 2 rows while 0 rows of text arrived" in details  # a blank frame after Enter
    assert "1 row(s) lost a half word to the next row" in details
    fills = next(k for k, sheet in enumerate(sheets) if sheet.flags["full"])  # the scrollbar appears
    assert any("re-wrapped" in v.detail and fills <= v.index <= fills + 2 for v in found), "no re-wrap seen"
    with pytest.raises(AssertionError) as failed:
        assert_calm(sheets, **judge(sheets))
    for rule in (2, 3, 4, 5, 6, 9):
        assert f"rule {rule}, {RULES[rule]}" in str(failed.value)


@pytest.mark.parametrize("size", ["80x24", "120x40"])
def test_the_same_game_recorded_after_issue_24_is_calm(size: str) -> None:
    """The same script (`tests/calm_recordings/record.py`) on this code: no rule is broken."""
    sheets = recorded("after-24.json.gz")[size]
    assert_calm(sheets, **judge(sheets))


def sheet(k: int, *rows: str, time: float | None = None, **flags: Any) -> Sheet:
    return Sheet(k, tuple(rows), time, flags=flags)


def test_a_view_rising_by_the_rows_of_text_that_arrive_is_calm() -> None:
    frames = [
        sheet(0, "one", "two thr", ""),
        sheet(1, "one", "two three four", ""),  # appended to the row
        sheet(2, "two three four", "five", ""),  # up one row for one row of text
        sheet(3, "five", "", "six"),  # up one row: a blank separator and a new paragraph
        sheet(4, "five", "", "six"),
    ]
    assert calm_violations(frames) == []


def test_each_rule_is_named_on_the_frame_that_broke_it() -> None:
    def rules(*frames: Sheet, **kw: Any) -> list[tuple[int, int]]:
        kw.setdefault("idle", lambda s: False)
        return [(v.rule, v.index) for v in calm_violations(list(frames), **kw)]

    assert rules(sheet(0, "a", "b", ""), sheet(1, "", "a", "b")) == [(1, 1)]
    assert rules(sheet(0, "a", "b", "c", ""), sheet(1, "c", "d", "", "")) == [(2, 1)]  # up 2 for 1 row of text
    assert rules(sheet(0, "a", "b"), sheet(1, "a", "")) == [(3, 1)]
    assert rules(sheet(0, "a", "the lamp is co"), sheet(1, "a", "the lamp is")) == [(4, 1)]  # a half word hopped
    assert rules(sheet(0, "a", "b", "", "", ""), idle=lambda s: True) == [(5, 0)]
    same = {"same": lambda s: s.flags.get("same", False)}
    assert rules(sheet(0, "a", "b", same=True), sheet(1, "a", "b c", same=True), **same) == [(6, 1)]
    resized = {"resized": lambda s: s.flags.get("resized", False), "idle": lambda s: s.index == 1}
    assert rules(sheet(0, "a", "", resized=True), sheet(1, "a", "", "", "b"), **resized) == [(7, 1)]
    status = {**resized, "statuses": ("corrected",)}  # a status row is not a gap: one blank row parts turns
    assert rules(sheet(0, "a", "", resized=True), sheet(1, "a", "corrected", "", "b"), **status) == []
    up = {"scrolled": lambda s: s.flags.get("up", False)}
    assert rules(sheet(0, "a", "b", up=True), sheet(1, "a", "b c", up=True), **up) == [(8, 1)]
    flicker = [sheet(0, "a", "", time=0.0), sheet(1, "a", "writing…", time=0.1), sheet(2, "a", "b", time=0.15)]
    assert rules(*flicker, statuses=("writing",)) == [(9, 2)]
    held = [sheet(0, "a", "writing…", time=0.0), sheet(1, "a", "b", time=0.3)]
    assert rules(*held, statuses=("writing",)) == []
