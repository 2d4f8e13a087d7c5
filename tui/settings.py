"""Effective settings: the config file, overridden by the environment, overridden by flags.

This module only reads and checks settings; `storyloom.tui.session.create_narrator` turns
them into a narrator.

The config file is `platformdirs.user_config_dir("storyloom")/config.toml`:

```toml
narrator = "openai"            # offline | anthropic | openai
model = "llama3.1"             # top-level model/base_url/output belong to the narrator named here
base_url = "http://127.0.0.1:11434/v1"
budget = 2                     # corrections per turn
pace = 0.03                    # offline narrator: seconds per streamed chunk in the UI (0 to 1)
theme = "textual-dark"         # one of Textual's built-in themes
screen_reader = false          # play as plain lines (`storyloom play --screen-reader`)

[anthropic]                    # used whenever the narrator is anthropic
model = "claude-sonnet-5-5"

[openai]                       # used whenever the narrator is openai
output = "json"                # tools | json
```

API keys are never read from or written to the file: they come from
`ANTHROPIC_API_KEY` / `OPENAI_API_KEY` only, and are never shown.

Every value, from any layer, is checked here (`_check`) before anything uses it, so a value
that would crash or hang the game is refused with a message naming it and exit code 2, and
`storyloom config` reports the same problems.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import platformdirs

from storyloom.engine.limits import DEFAULT_BUDGET
from storyloom.saves.choices import SessionChoices

DEFAULT_STORY = "lighthouse"
UI_PACE = 0.03
"""Seconds between streamed chunks of the offline narrator in the UI (a human reading pace)."""
PACE_MAX = 1.0
"""The slowest pace allowed: a second a chunk is already a turn of a minute or more."""
DEFAULT_THEME = "textual-dark"
CONFIG_MAX_BYTES = 1 << 20
"""A config file is a few lines; anything larger is not one (and is not read whole)."""
NARRATORS = ("offline", "anthropic", "openai")
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
BASE_URL_VARS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


class SettingsError(Exception):
    """The config file or a setting is wrong; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    """Everything that decides how a story is played."""

    narrator: str = "offline"
    model: str | None = None
    base_url: str | None = None
    budget: int = DEFAULT_BUDGET
    pace: float | None = None
    theme: str = DEFAULT_THEME
    output: str = "tools"
    max_tokens: int = 1024
    thinking: bool = False
    screen_reader: bool = False
    """Play as plain printed lines for a screen reader instead of the full-screen app."""
    seed: int = 0
    faults: float = 0.0
    api_key: str | None = field(default=None, repr=False)
    """From the environment only; kept out of `repr` so it cannot leak into a log or traceback."""

    def masked(self) -> dict[str, Any]:
        """The settings for display: the key reduced to whether it is set, credentials cut from the URL."""
        data = asdict(self)
        var = KEY_VARS.get(self.narrator)
        data["api_key"] = (f"set ({var})" if self.api_key else f"not set ({var})") if var else "not needed"
        data["base_url"] = _without_credentials(self.base_url)
        return data

    def choices(self) -> SessionChoices:
        """What a save records of these settings (never a key)."""
        return SessionChoices(narrator=self.narrator, seed=self.seed, faults=self.faults, budget=self.budget)

    def with_choices(self, choices: SessionChoices) -> Settings:
        """These settings, playing on with `choices` (see `SessionChoices.continuing`)."""
        return replace(self, narrator=choices.narrator, seed=choices.seed, faults=choices.faults, budget=choices.budget)


def config_path() -> Path:
    """Where the config file lives: `platformdirs.user_config_dir("storyloom")/config.toml`."""
    return Path(platformdirs.user_config_dir("storyloom")) / "config.toml"


_FILE_KEYS = {
    "narrator",
    "model",
    "base_url",
    "budget",
    "pace",
    "theme",
    "output",
    "max_tokens",
    "thinking",
    "screen_reader",
}
_NARRATOR_KEYS = {"model", "base_url", "output", "max_tokens", "thinking"}
"""Keys that depend on which narrator plays (and may sit in an [anthropic] or [openai] table)."""
_ENV_KEYS = {
    "STORYLOOM_NARRATOR": "narrator",
    "STORYLOOM_MODEL": "model",
    "STORYLOOM_BASE_URL": "base_url",
    "STORYLOOM_BUDGET": "budget",
    "STORYLOOM_PACE": "pace",
    "STORYLOOM_THEME": "theme",
    "STORYLOOM_OUTPUT": "output",
    "STORYLOOM_MAX_TOKENS": "max_tokens",
    "STORYLOOM_SCREEN_READER": "screen_reader",
}
_FLAG_KEYS = (
    "narrator",
    "model",
    "base_url",
    "budget",
    "pace",
    "output",
    "max_tokens",
    "thinking",
    "screen_reader",
    "seed",
    "faults",
)


def load_settings(
    args: argparse.Namespace | None = None, env: Mapping[str, str] | None = None, path: Path | None = None
) -> Settings:
    """The effective settings: file < environment < flags.

    Raises:
        SettingsError: the config file is unreadable or holds a bad value.
    """
    return resolve_settings(args, env, path)[0]


def resolve_settings(
    args: argparse.Namespace | None, env: Mapping[str, str] | None, path: Path | None
) -> tuple[Settings, dict[str, str]]:
    """The effective settings and, for each that is not a default, where it came from (`storyloom config`)."""
    env = os.environ if env is None else env
    path = path or config_path()
    data = _read_file(path)
    top = {k: v for k, v in data.items() if not isinstance(v, dict)}
    from_env = {name: env[var] for var, name in _ENV_KEYS.items() if env.get(var)}
    from_flags = (
        {}
        if args is None
        else {
            name: getattr(args, name)
            for name in _FLAG_KEYS
            if getattr(args, name, None) is not None and getattr(args, name) is not False
        }
    )
    narrator = from_flags.get("narrator") or from_env.get("narrator") or top.get("narrator") or "offline"
    if narrator not in NARRATORS:
        source = (
            "the command line"
            if "narrator" in from_flags
            else ("STORYLOOM_NARRATOR" if "narrator" in from_env else str(path))
        )
        raise SettingsError(f"{source}: narrator must be one of {', '.join(NARRATORS)}, not {_shown(narrator)}")
    if top.get("narrator", narrator) != narrator:  # the file's model and URL belong to its own narrator
        top = {k: v for k, v in top.items() if k not in _NARRATOR_KEYS}
    table = data.get(narrator, {}) if narrator in KEY_VARS else {}
    env_vars = {name: var for var, name in _ENV_KEYS.items() if name in from_env}
    vendor_var = BASE_URL_VARS.get(narrator, "")
    if env.get(vendor_var) and "base_url" not in from_env:
        from_env = {**from_env, "base_url": env[vendor_var]}
        env_vars["base_url"] = vendor_var
    settings, origins = Settings(), {}
    for layer, source in (
        (top, str(path)),
        (table, f"{path} [{narrator}]"),
        (from_env, "the environment"),
        (from_flags, "the command line"),
    ):
        settings = _merge(settings, layer, source)
        origins.update(
            {key: f"{source} ({env_vars[key]})" if key in env_vars and layer is from_env else source for key in layer}
        )
    key_var = KEY_VARS.get(settings.narrator)
    if key_var and env.get(key_var):
        settings = replace(settings, api_key=env[key_var])
        origins["api_key"] = key_var
    return settings, origins


def _read_file(path: Path) -> dict[str, Any]:
    from storyloom.engine.files import NotARegularFile, read_regular_file

    try:
        blob = read_regular_file(path, CONFIG_MAX_BYTES)
    except FileNotFoundError:
        return {}
    except (NotARegularFile, IsADirectoryError) as exc:
        raise SettingsError(f"{path}: the config file must be a regular file: {exc.strerror}") from None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    if blob.startswith(BOM):  # some editors start a UTF-8 file with a byte-order mark; TOML has no use for it
        blob = blob[len(BOM) :]
    try:
        data = tomllib.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read the config file: {exc}") from None
    except RecursionError:
        raise SettingsError(f"{path}: cannot read the config file: its values are nested too deeply") from None
    for table, keys in (("", data), *((name, data[name]) for name in KEY_VARS if name in data)):
        if not isinstance(keys, dict):
            raise SettingsError(f"{path}: [{table}] must be a table of settings")
        allowed = _NARRATOR_KEYS if table else _FILE_KEYS | set(KEY_VARS)
        where = f"{path} [{table}]" if table else str(path)
        if "api_key" in keys:
            raise SettingsError(
                f"{where}: API keys are never read from the config file (it is easy to share "
                f"by mistake); remove api_key and set {KEY_VARS.get(table, 'ANTHROPIC_API_KEY or OPENAI_API_KEY')} "
                f"in the environment instead"
            )
        unknown = set(keys) - allowed
        if unknown:
            raise SettingsError(
                f"{where}: unknown setting(s) {', '.join(_shown(k, quoted=False) for k in sorted(unknown))}; "
                f"known: {', '.join(sorted(allowed))}"
            )
        for key, value in keys.items():
            if key not in KEY_VARS:  # every value is checked, even in a table this story does not use
                _check(key, value, where)
    return data


def save_theme(theme: str, path: Path | None = None) -> None:
    """Remember the theme chosen in the palette: the file's `theme` line is set, every other line kept.

    Raises:
        OSError: the file cannot be written.
    """
    path = path or config_path()
    lines = path.read_text(encoding="utf-8-sig").splitlines() if path.is_file() else []
    tables = next((n for n, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    setting = f"theme = {json.dumps(theme)}"
    found = next((n for n in range(tables) if re.match(r"\s*theme\s*=", lines[n])), None)
    if found is None:
        lines.insert(tables, setting)  # a top-level key must come before the first [table]
    else:
        lines[found] = setting
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    partial.replace(path)  # whole or not at all: a crash never leaves a half-written config


def _merge(settings: Settings, values: Mapping[str, Any], source: str) -> Settings:
    """Apply one layer, checking each value's type and range (strings from the environment are parsed)."""
    checked = {key: _check(key, value, source) for key, value in values.items()}
    return replace(settings, **checked)


def _check(key: str, value: Any, source: str) -> Any:
    def bad(expected: str) -> SettingsError:
        return SettingsError(f"{source}: {key} must be {expected}, not {_shown(value)}")

    if key in ("budget", "max_tokens", "seed"):
        number = _parse(value, int)
        if number is None or isinstance(number, bool):
            raise bad("a whole number")
        if (key == "budget" and number < 0) or (key == "max_tokens" and number < 1):
            raise bad("a whole number of corrections, 0 or more" if key == "budget" else "at least 1")
        return number
    if key in ("pace", "faults"):
        number = _parse(value, float)
        highest = PACE_MAX if key == "pace" else 1.0
        if number is None or isinstance(number, bool) or not 0 <= number <= highest or not math.isfinite(number):
            raise bad(f"a number from 0 to {highest:g}" + (" (seconds per streamed chunk)" if key == "pace" else ""))
        return float(number)
    if key in ("thinking", "screen_reader"):
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "0", "false", "no"):
            return value.lower() in ("1", "true", "yes")
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if not isinstance(value, str) or not value.strip():
        raise bad("a non-empty string")
    if key == "narrator" and value not in NARRATORS:
        raise bad(f"one of {', '.join(NARRATORS)}")
    if key == "output" and value not in ("tools", "json"):
        raise bad("tools or json")
    if key == "base_url" and urlsplit(value).scheme not in ("http", "https"):
        raise bad("an http:// or https:// address")
    if key == "theme" and value != DEFAULT_THEME and value not in _themes():
        raise bad(f"one of Textual's themes ({', '.join(sorted(_themes()))})")
    return value


BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark."""
SHOWN_CHARS = 60
"""How much of a wrong value a message repeats: enough to recognise it, never a whole pasted file."""


def _shown(value: Any, *, quoted: bool = True) -> str:
    """A wrong value as a message quotes it, cut to `SHOWN_CHARS` with how long it was."""
    text = repr(value) if quoted else str(value)
    if len(text) <= SHOWN_CHARS:
        return text
    size = f"{len(value):,} characters" if isinstance(value, str) else f"{len(text):,} characters written out"
    return f"{text[:SHOWN_CHARS]}… ({size})"


def _themes() -> set[str]:
    """The themes the app can use (Textual is loaded only when a theme other than the default is set)."""
    from textual.theme import BUILTIN_THEMES

    return set(BUILTIN_THEMES)


def _parse(value: Any, kind: type) -> Any:
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            return None
    if kind is float and isinstance(value, int):
        return float(value)
    return value if isinstance(value, kind) else None


def _without_credentials(url: str | None) -> str | None:
    """A URL with any user:password part replaced, so it can be printed."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))
