"""Where saves live: the saves folder, the saves in it, and the names new and rescued saves get.

Nothing here parses or writes a save (`storyloom.saves.reader` and `storyloom.saves.writer`
do); to tell a rescued save from the save it continues, only the first line of each is read, and
`latest` only looks past a save's first line to pass over empty ones.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from storyloom.engine.files import open_regular
from storyloom.saves.errors import SaveExists, SaveUnreadable, SaveWriteError

SUFFIX = ".jsonl"
"""A save file's name ends so."""
HEADER_MAX_BYTES = 64 * 1024
"""A header line is a few hundred bytes; no reading (a listing's, a stream's, a preview's, the resume's
hint) looks further for it."""


def resume_record_path(header_line: bytes) -> Path:
    """Where the resume record of the save whose first line is `header_line` is kept (`saves/resume_record.py`):
    under `platformdirs.user_cache_dir("storyloom")/resume`, read when called (it honours `XDG_CACHE_HOME`)."""
    folder = Path(platformdirs.user_cache_dir("storyloom")) / "resume"
    return folder / f"{hashlib.sha256(header_line).hexdigest()}.resume"


def saves_dir() -> Path:
    """`platformdirs.user_data_dir("storyloom")/saves`."""
    return Path(platformdirs.user_data_dir("storyloom")) / "saves"


def list_saves(folder: Path | None = None) -> list[Path]:
    """The save files in the saves folder, newest first, with the rescues of those saves kept elsewhere.

    A save that stopped taking writes is written whole to another place (`rescue_paths`); a
    rescue in the temp folder is listed too when it continues a save of this folder, so
    `latest`, `storyloom saves` and the app's "Open save" find it.
    """
    folder = folder or saves_dir()
    found = _saves_in(folder)
    if folder == saves_dir() and found:
        rescues: list[Path] = []
        for other in rescue_folders()[1:]:
            try:
                if other.resolve() != folder.resolve():
                    rescues += _saves_in(other, RESCUED)
            except OSError:
                continue
        stems = {_origin(p) for p in found}
        rescues = [p for p in rescues if _origin(p) in stems]  # by name first: most listings read no save
        if rescues:
            headers = {_first_line(p) for p in found if _origin(p) in {_origin(r) for r in rescues}} - {b""}
            found += [p for p in rescues if _first_line(p) in headers]
    return sorted(found, key=_newest_first, reverse=True)


RESCUED = f"-rescued{SUFFIX}"
"""How a rescued save's name ends (then maybe `-2`, `-3`… before the suffix)."""


def _saves_in(folder: Path, kind: str = SUFFIX) -> list[Path]:
    try:
        return [
            p for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIX) and (kind == SUFFIX or _is_rescue(p))
        ]
    except OSError:
        return []


def _origin(path: Path) -> str:
    """The name of the save a save was first written as: `game` for `game.jsonl`, `game-rescued.jsonl`,
    `game-rescued-2.jsonl` and `game-rescued-rescued.jsonl` alike."""
    stem = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name
    while True:
        base, _, number = stem.rpartition("-")
        if number.isdigit() and base.endswith("-rescued"):
            stem = base
        elif stem.endswith("-rescued"):
            stem = stem[: -len("-rescued")]
        else:
            return stem


def _is_rescue(path: Path) -> bool:
    stem = path.name[: -len(SUFFIX)]
    base, _, number = stem.rpartition("-")
    return stem.endswith("-rescued") or (base.endswith("-rescued") and number.isdigit())


def _newest_first(path: Path) -> tuple[int, str]:
    try:
        return path.stat().st_mtime_ns, path.name
    except OSError:
        return 0, path.name


def _first_line(path: Path, limit: int = 1 << 16) -> bytes:
    """A save's header line (the same in a save and in every rescue of it), or b"" if unreadable.

    Read a kB at a time (a header is a few hundred bytes), never past `limit`."""
    try:
        fd = open_regular(path)  # never waits on a pipe
    except OSError:
        return b""
    line = b""
    try:
        while len(line) < limit:
            chunk = os.pread(fd, 1024, len(line))
            if not chunk:
                return b""
            end = chunk.find(b"\n")
            if end >= 0:
                return line + chunk[: end + 1]
            line += chunk
    except OSError:
        pass
    finally:
        os.close(fd)
    return b""


def rescue_of(path: Path, saves: list[Path] | None = None) -> Path | None:
    """The rescue that continues `path` (the same story, written further elsewhere), if there is one.

    A rescue holds every record of the save it was made from and then the turns played after it,
    so a save with a rescue is superseded: continuing it would fork the story. Among several, the
    longest rescue goes furthest.
    """
    rescues = [
        other
        for other in (list_saves() if saves is None else saves)
        if _is_rescue(other) and _origin(other) == _origin(path)
    ]
    if not rescues:
        return None  # nothing to read: almost always
    header = _first_line(path)
    if not header:
        return None
    try:
        size = path.stat().st_size
    except OSError:
        return None
    later: list[tuple[int, Path]] = []
    for other in rescues:
        try:
            if other.resolve() != path.resolve() and _first_line(other) == header:
                if (other_size := other.stat().st_size) > size:
                    later.append((other_size, other))
        except OSError:
            continue
    return max(later)[1] if later else None


def resolve_save(ref: str | Path, folder: Path | None = None) -> Path:
    """A save named by path, by file name in the saves folder, or `latest` (the newest save with a turn).

    `latest` is the newest save that no rescue supersedes (see `rescue_of`).

    Raises:
        SaveUnreadable: `latest` with no saves, or no such file.
    """
    folder = folder or saves_dir()
    if str(ref) == "latest":
        played = next((path for path in list_saves(folder) if not _only_a_header(path)), None)
        if played is None:
            raise SaveUnreadable(folder, "there are no saves yet: play a story first")
        saves = list_saves(folder)
        return rescue_of(played, saves) or played
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


def new_export_path(story_id: str, folder: Path | None = None) -> Path:
    """Where the app exports a transcript: `storyloom-<story>.md` in the saves folder, `-2`, `-3`… if taken."""
    return _fresh((folder or saves_dir()) / f"storyloom-{story_id}.md")


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
    """Where a save that cannot be written is written instead: beside it under a new name (a save
    deleted or changed in place leaves its folder writable, and that is where the player looks),
    then the saves folder, then the temp folder."""
    name = f"{failed.stem}-rescued{SUFFIX}"
    paths: list[Path] = []
    seen: set[Path] = set()
    for folder in (failed.parent, *rescue_folders()):
        try:
            place = folder.resolve()
            if place not in seen:
                seen.add(place)
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


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def place_new_save(path: Path, write: Callable[[int], None], exists: str) -> int:
    """Write a new save under a temporary name, locked, then link it into place; return its open fd.

    A crash never leaves a half-written save at `path`, and an existing file is never overwritten.

    Raises:
        SaveExists: a file is already at `path` (`exists` says what to do).
        SaveWriteError: the folder or the file cannot be written.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    except OSError as exc:
        raise SaveWriteError(path, f"cannot create the save: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        write(fd)
        os.link(temporary, path)
    except FileExistsError:
        os.close(fd)
        raise SaveExists(path, exists) from None
    except (OSError, SaveWriteError) as exc:
        os.close(fd)
        raise SaveWriteError(path, f"cannot write the save: {getattr(exc, 'strerror', None) or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    _fsync_dir(path.parent)
    return fd
