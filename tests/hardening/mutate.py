"""Hypothesis strategies that damage story packs and save files in every way a hand or a disk can.

Byte-level damage (flips, insertions, deletions, truncation) tests the parsers;
structural damage (a value replaced by any other value, a key removed or added) gets
past them and tests the validation behind. A damaged save is re-chained (every hash
recomputed) so it reaches the checks beyond the hash chain: events of the wrong shape,
commits the rules refuse, states that do not match their hashes.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from hypothesis import strategies as st

from storyloom.saves.format import record_hash
from tests.hardening.corpus import ALL

TEXT = (
    st.sampled_from(list(ALL.values()))
    | st.text(max_size=24)
    | st.sampled_from(["", "shore", "player", "nowhere", "north", "lamp", "x" * 5000, "../../etc/passwd", "\ud800"])
)
SCALAR = (
    st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, -1, 10**4000])
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(["id", "at", "name", "exits"]), inner, max_size=4)
    ),
    max_leaves=8,
)
JSON_VALUE = st.none() | VALUE


# --- bytes ---------------------------------------------------------------------------------------------------


@st.composite
def damaged_bytes(draw: Any, blob: bytes) -> bytes:
    """`blob` with a few random byte-level injuries."""
    data = bytearray(blob)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "zero"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(
                st.binary(min_size=1, max_size=8)
                | st.sampled_from([b"\xff\xfe", b"\x1b]0;x\x07", b"\n", b"\x00", b'"', b"[[[[", b"\xc3"])
            )
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del data[at:]
        elif kind == "zero":
            data[at : at + 64] = bytes(len(data[at : at + 64]))
    return bytes(data)


# --- TOML ----------------------------------------------------------------------------------------------------


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """One value in TOML's inline syntax (enough for packs: every table written inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return '""'


def dump_toml(data: dict[str, Any]) -> str:
    """A pack as TOML: scalars at the top, each table as a [section] of inline values."""
    lines = [f"{_key(k)} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"\n[{_key(k)}]")
            lines += [f"{_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*prefix, i))
    return found


def _edit(data: Any, path: tuple, how: str, new: Any, extra_key: str) -> Any:
    if not path:
        return new if how == "replace" else data
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        out = dict(data)
        if not rest and how == "delete":
            out.pop(head, None)
        elif not rest and how == "add" and isinstance(data[head], dict):
            out[head] = {**data[head], extra_key: new}
        else:
            out[head] = _edit(data[head], rest, how, new, extra_key)
        return out
    out = list(data)
    if not rest and how == "delete":
        del out[head]
    else:
        out[head] = _edit(data[head], rest, how, new, extra_key)
    return out


@st.composite
def edited(draw: Any, data: Any, value: Any = VALUE) -> Any:
    """`data` with one to three values replaced, removed, or added beside."""
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)))
        how = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        data = _edit(data, path, how, draw(value), draw(st.text(min_size=1, max_size=6)))
    return data


@st.composite
def damaged_pack(draw: Any, text: str) -> bytes:
    """A pack damaged structurally (and written as TOML again) or byte by byte."""
    if draw(st.booleans()):
        return draw(damaged_bytes(text.encode("utf-8")))
    data = draw(edited(tomllib.loads(text)))
    if not isinstance(data, dict):
        data = {"id": data}
    return dump_toml(data).encode("utf-8", "surrogatepass")


# --- saves ---------------------------------------------------------------------------------------------------


def rechain(records: list[Any]) -> bytes:
    """Records written as a save again, every `seq`, `prev` and `hash` recomputed where they still can be."""
    prev = "0" * 64
    lines = []
    for seq, record in enumerate(records):
        if isinstance(record, dict):
            record = {**record, "seq": seq, "prev": prev}
            record.pop("hash", None)
            try:
                record["hash"] = record_hash(record)
            except (TypeError, ValueError):
                record["hash"] = "0" * 64
            prev = record["hash"]
        lines.append(
            json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            )
        )
    return b"\n".join(lines) + b"\n"


@st.composite
def damaged_save(draw: Any, blob: bytes) -> bytes:
    """A save damaged byte by byte, line by line, or record by record (then re-chained)."""
    kind = draw(st.sampled_from(["bytes", "lines", "records", "records", "records"]))
    if kind == "bytes":
        return draw(damaged_bytes(blob))
    lines = blob.splitlines(keepends=True)
    if kind == "lines":
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["delete", "duplicate", "swap", "garbage"]))
        if how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(j, lines[i])
        elif how == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(i, draw(st.binary(max_size=40)) + b"\n")
        return b"".join(lines)
    records = [json.loads(line) for line in lines]
    index = draw(st.integers(0, len(records) - 1))
    target = draw(st.sampled_from(["data", "data", "kind", "record"]))
    if target == "data":
        records[index] = {**records[index], "data": draw(edited(records[index]["data"], JSON_VALUE))}
    elif target == "kind":
        records[index] = {
            **records[index],
            "kind": draw(
                st.sampled_from(
                    ["turn_committed", "turn_undone", "attempt_finished", "turn_started", "header", "resumed", "bogus"]
                )
            ),
        }
    else:
        records[index] = draw(edited(records[index], JSON_VALUE))
    return rechain(records)
