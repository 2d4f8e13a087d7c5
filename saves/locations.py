"""Where saves live: the saves folder, the saves in it, and the names new and rescued saves get.

Nothing here reads or writes a save; it only names files (`storyloom.saves.reader` and
`storyloom.saves.writer` open them).
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
    """A save named by path, by file name in the saves folder, or `latest`.

    Raises:
        SaveUnreadable: `latest` with no saves, or no such file.
    """
    folder = folder or saves_dir()
    if str(ref) == "latest":
        saves = list_saves(folder)
        if not saves:
            raise SaveUnreadable(folder, "there are no saves yet: play a story first")
        return saves[0]
    path = Path(ref)
    if not path.exists() and path.parent == Path(".") and (folder / path.name).exists():
        return folder / path.name
    if not path.exists() and path.parent == Path(".") and (folder / (path.name + SUFFIX)).exists():
        return folder / (path.name + SUFFIX)
    return path


def new_save_path(story_id: str, folder: Path | None = None) -> Path:
    """A fresh file name in the saves folder: `<story>-<UTC time>.jsonl` (never an existing file)."""
    folder = folder or saves_dir()
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return _fresh(folder / f"{story_id}-{stamp}{SUFFIX}")


def rescue_folders() -> list[Path]:
    """Where rescued saves go, in order: the saves folder, then the temp folder (when there is a usable one).

    `tempfile.gettempdir` raises when no temp folder takes a file (a full disk): that place is
    then left out rather than crashing the game that is trying to save its story.
    """
    places = [saves_dir()]
    try:
        places.append(Path(tempfile.gettempdir()))
    except OSError:
        pass
    return places


def rescue_paths(failed: Path) -> list[Path]:
    """Where a save that cannot be written is written instead: the saves folder, then the temp folder."""
    name = f"{failed.stem}-rescued{SUFFIX}"
    paths = []
    for folder in rescue_folders():
        try:
            if folder.resolve() != failed.parent.resolve():
                paths.append(_fresh(folder / name))
        except OSError:
            continue  # a folder that cannot even be looked at takes no save
    return paths


def _fresh(path: Path) -> Path:
    """`path`, or the first of `<stem>-2`, `<stem>-3`, … beside it that is not taken."""
    n = 2
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate
