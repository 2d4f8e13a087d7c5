"""Where saves live: the saves folder, the saves in it, and the names new and rescued saves get.

Nothing here parses or writes a save; it only names files (`storyloom.saves.reader` and
`storyloom.saves.writer` open them); `latest` only looks past a save's first line, to pass over empty ones.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from storyloom.saves.errors import SaveUnreadable
from storyloom.saves.format import SUFFIX


def saves_dir() -> Path:
    """`platformdirs.user_data_dir("storyloom")/saves`."""
    return Path(platformdirs.user_data_dir("storyloom")) / "saves"


def list_saves(folder: Path | None = None) -> list[Path]:
    """The save files in the saves folder, newest first."""
    folder = folder or saves_dir()
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIX)]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)


def resolve_save(ref: str | Path, folder: Path | None = None) -> Path:
    """A save named by path, by file name in the saves folder, or `latest` (the newest save with a turn).

    Raises:
        SaveUnreadable: `latest` with no saves, or no such file.
    """
    folder = folder or saves_dir()
    if str(ref) == "latest":
        played = next((path for path in list_saves(folder) if not _only_a_header(path)), None)
        if played is None:
            raise SaveUnreadable(folder, "there are no saves yet: play a story first")
        return played
    path = Path(ref)
    if not path.exists() and path.parent == Path(".") and (folder / path.name).exists():
        return folder / path.name
    if not path.exists() and path.parent == Path(".") and (folder / (path.name + SUFFIX)).exists():
        return folder / (path.name + SUFFIX)
    return path


def _only_a_header(path: Path) -> bool:
    """True for a save holding nothing but its header: a game that was left (or killed) before its
    first turn, or one open right now and not played yet. `latest` never means one of those.
    Reads only as far as the header line."""
    try:
        with path.open("rb") as handle:
            header = handle.readline()
            rest = handle.read(64)
    except OSError:
        return False  # `latest` names it, and resuming it says what is wrong
    return header.endswith(b"\n") and not rest.strip()


def new_save_path(story_id: str, folder: Path | None = None) -> Path:
    """A fresh file name in the saves folder: `<story>-<UTC time>.jsonl` (never an existing file)."""
    folder = folder or saves_dir()
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return _fresh(folder / f"{story_id}-{stamp}{SUFFIX}")


def rescue_paths(failed: Path) -> list[Path]:
    """Where a save that cannot be written is written instead: the saves folder, then the temp folder."""
    name = f"{failed.stem}-rescued{SUFFIX}"
    places = [saves_dir(), Path(tempfile.gettempdir())]
    return [_fresh(folder / name) for folder in places if folder.resolve() != failed.parent.resolve()]


def _fresh(path: Path) -> Path:
    """`path`, or the first of `<stem>-2`, `<stem>-3`, … beside it that is not taken."""
    n = 2
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate
