"""JSON baselines of recorded frame sequences: the order of states a player sees, reviewed once and kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

UPDATE_ENV = "FRAMES_UPDATE"


class FrameBaselines:
    """JSON baselines of recorded frame sequences, compared or rewritten.

    Args:
        directory: where the baseline files live.
        update: rewrite baselines instead of comparing.
    """

    def __init__(self, directory: Path, update: bool) -> None:
        self.directory = directory
        self.update = update

    def check(self, name: str, data: Any) -> None:
        """Compare `data` (JSON-serialisable) with the baseline `name`, or write it when updating.

        Raises:
            AssertionError: the baseline is missing or differs (with the path and how to update).
        """
        path = self.directory / f"{name}.json"
        text = _dump(data)
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        if not path.is_file():
            raise AssertionError(
                f"no frame baseline {path}; run with --frames-update (or {UPDATE_ENV}=1) to write it, then review it"
            )
        expected = json.loads(path.read_text(encoding="utf-8"))
        actual = json.loads(text)
        if expected != actual:
            diff = (
                [
                    f"  {key}: expected {expected.get(key)!r}\n  {' ' * len(key)}  actual   {actual.get(key)!r}"
                    for key in sorted(set(expected) | set(actual))
                    if expected.get(key) != actual.get(key)
                ]
                if isinstance(expected, dict) and isinstance(actual, dict)
                else [f"  {expected!r} != {actual!r}"]
            )
            raise AssertionError(f"frames differ from the baseline {path}:\n" + "\n".join(diff))


def _dump(data: Any) -> str:
    """JSON with one value per line, so a baseline diff shows which state changed."""
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        keys = sorted(data)
        body = ",\n".join(
            f" {json.dumps(k)}: [\n" + ",\n".join(f"  {json.dumps(v, ensure_ascii=False)}" for v in data[k]) + "\n ]"
            for k in keys
        )
        return "{\n" + body + "\n}\n"
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
