"""The fast paths of loading and verifying a save give exactly the answers of the slow ones.

Loading checks each record's hash over its bytes as written (`_hashed_as_written`) before
falling back to re-encoding it (`record_hash`): a save loads, or is refused with the same
error on the same record, either way. Nothing here is timed.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyloom.engine.state import canonical_json
from storyloom.saves import careful, reader
from storyloom.saves.errors import SaveError, TamperedRecord
from storyloom.saves.format import record_hash
from storyloom.saves.reader import load_save, parse_save
from tests.test_saves_kit import played_save

texts = st.text(st.characters(exclude_categories=("Cs",)))  # a lone surrogate cannot be written as UTF-8
keys = texts.filter(lambda t: len(t) <= 8) | st.sampled_from(["hash", "kind", "data", "state_hash"])
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=12
)


def _signed(
    data: dict[str, Any],
    kind: str = "turn_started",
    seq: int = 4,
    time: str = "2026-11-29T23:00:00.000Z",
    prev: str = "a" * 64,
) -> tuple[bytes, dict[str, Any]]:
    record: dict[str, Any] = {"seq": seq, "time": time, "kind": kind, "data": data, "prev": prev}
    record["hash"] = record_hash(record)
    return canonical_json(record).encode(), record


@given(st.dictionaries(keys, json_values, max_size=5), texts, texts)
def test_every_record_the_journal_writes_is_proven_by_its_bytes(data: dict[str, Any], kind: str, time: str) -> None:
    """Only a record whose data holds a `hash` key of its own is left to the full check."""
    line, record = _signed(data, kind=kind, time=time)
    assert careful.hashed_as_written(line, json.loads(line)) == (b'"hash":' not in canonical_json(data).encode())
    assert record_hash(json.loads(line)) == record["hash"]


@given(st.dictionaries(keys, json_values, min_size=1, max_size=5), st.data())
def test_a_line_the_fast_check_accepts_is_one_the_full_check_accepts(data: dict[str, Any], draw: st.DataObject) -> None:
    line, _ = _signed(data)
    at = draw.draw(st.integers(0, len(line) - 1))
    changed = line[:at] + draw.draw(st.binary(min_size=0, max_size=3)) + line[at + 1 :]
    try:
        parsed = careful.parse_line(Path("s.jsonl"), changed, 2)  # what loading hands the check
    except SaveError:
        return
    if careful.hashed_as_written(changed, parsed):
        assert record_hash(parsed) == parsed["hash"]
        assert changed == line or json.loads(line) == parsed


@functools.cache
def _small_save(folder: str) -> bytes:
    path, _, _ = played_save(Path(folder) / "s.jsonl", ["look", "take rope", "north", "up"], faults=0.5)
    return path.read_bytes()


def _outcome(blob: bytes, fast: bool) -> Any:
    with pytest.MonkeyPatch.context() as patched:
        if not fast:
            for module in (reader, careful):  # the streamed reading's header check and the careful chain check
                patched.setattr(module, "hashed_as_written", lambda line, record: False)
        try:
            save = parse_save(Path("s.jsonl"), blob)
        except SaveError as exc:
            return type(exc).__name__, exc.line, exc.seq, exc.reason
    return [(r.seq, r.kind, r.data, r.hash) for r in save.records], save.warnings, save.last_hash


@settings(max_examples=150)
@given(draw=st.data())
def test_a_damaged_save_gets_the_same_verdict_with_or_without_the_fast_check(
    tmp_path_factory: pytest.TempPathFactory, draw: st.DataObject
) -> None:
    blob = _small_save(str(tmp_path_factory.getbasetemp()))
    at = draw.draw(st.integers(0, len(blob) - 1))
    damaged = blob[:at] + draw.draw(st.binary(min_size=0, max_size=2)) + blob[at + 1 :]
    assert _outcome(damaged, True) == _outcome(damaged, False)


def test_a_save_whose_lines_were_respelled_with_the_same_content_still_loads(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    original = load_save(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(json.dumps(json.loads(line), indent=None) + "\n" for line in lines), encoding="utf-8")
    respelled = load_save(path)
    assert [(r.seq, r.data) for r in respelled.records] == [(r.seq, r.data) for r in original.records]


def test_an_altered_narrative_is_still_named_as_tampered(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    blob = path.read_bytes()
    lines = blob.split(b"\n")
    at = next(i for i, line in enumerate(lines) if b'"kind":"turn_committed"' in line)
    lines[at] = lines[at].replace(b"rope", b"ropf", 1)
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TamperedRecord) as caught:
        load_save(path)
    assert caught.value.line == at + 1


any_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)  # NaN, lone surrogates
    | st.text(st.characters(min_codepoint=0xD7FF, max_codepoint=0xE000), max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=10,
)
json_texts = st.builds(lambda value: json.dumps(value), any_values)  # \u escapes, NaN and Infinity included
json_edits = st.lists(
    st.tuples(
        st.integers(0, 10_000),
        st.sampled_from(
            [
                '"',
                "\\",
                "\\u",
                "\\ud800",
                "e",
                "E",
                "-",
                ".",
                "0",
                "01",
                "1e999",
                "NaN",
                "Infinity",
                ",",
                ":",
                "[",
                "]",
                "{",
                "}",
                "\t",
                "\x00",
                " ",
                "\ufeff",
                "9" * 30,
                "true",
                "null",
                "",
            ]
        ),
    ),
    max_size=3,
)


@settings(max_examples=300)
@given(json_texts, json_edits)
def test_every_line_the_fast_parser_reads_is_read_the_same_by_the_json_module(text: str, edits: list) -> None:
    for at, piece in edits:
        at %= len(text) + 1
        text = text[:at] + piece + text[at + 1 :]
    try:
        fast = careful.parse_json(text)
    except ValueError:
        fast = "refused"
    try:
        slow = json.loads(text, parse_constant=careful.no_constant)
    except ValueError:
        slow = "refused"
    assert repr(fast) == repr(slow)
