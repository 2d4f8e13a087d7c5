"""Effective settings: the config file, overridden by the environment, overridden by flags.

This module only reads and checks settings; `storyloom.tui.session.create_narrator` turns
them into a narrator, through the registry of narrators (`storyloom.tui.narrators`).

The config file is `platformdirs.user_config_dir("storyloom")/config.toml`:

```toml
narrator = "openai"            # offline | anthropic | openai (tui/narrators.py)
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

API keys are never read from or written to the file: they come from the narrator's own
variable (`ANTHROPIC_API_KEY` / `OPENAI_API_KEY`) only, and are never shown.

What each setting may be is declared once, on its field of `Settings` (a `Rule`: its kind, bounds or
allowed values, and what a message says it must be); one function applies the rules. Every value,
from any layer, is validated against it before anything uses it, so a value that would crash or hang the game is
refused with a message naming it and exit code 2, and `storyloom config` reports the same problems.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import platformdirs

from storyloom.engine.limits import DEFAULT_BUDGET
from storyloom.saves.choices import SessionChoices
from storyloom.tui.narrators import DEFAULT_NARRATOR, MODEL_OPTIONS, NARRATORS, key_vars, narrator_names

DEFAULT_STORY = "lighthouse"
PACE_MAX = 1.0
"""The slowest pace allowed: a second a chunk is already a turn of a minute or more."""
DEFAULT_THEME = "textual-dark"
OUTPUTS = ("tools", "json")
"""How the openai narrator may be asked to return a turn (`engine/narrators/openai.OUTPUTS`)."""
CONFIG_MAX_BYTES = 1 << 20
"""A config file is a few lines; anything larger is not one (and is not read whole)."""


class SettingsError(Exception):
    """The config file or a setting is wrong; the message says which and how to fix it."""


@dataclass(frozen=True)
class Rule:
    """What one setting may be, declared on its field of `Settings` (`field(metadata=rule(...))`)."""

    expected: str | Callable[[], str]
    """What a message says it must be (a function where that depends on what is installed)."""
    kind: type[Any] = str
    """str, int, float or bool; text from the environment is read as the kind (a bool is no int)."""
    low: float | None = None
    high: float | None = None
    among: Callable[[], Collection[str]] | None = None
    """The values allowed, where there is a list of them."""
    test: Callable[[str], bool] | None = None
    """A further test of a text value."""

    def conform(self, value: Any) -> Any:
        """`value` as this setting holds it.

        Raises:
            ValueError: it is not what the setting may be.
        """
        read: Any = _from_text(self.kind, value) if isinstance(value, str) else value
        if self.kind is float and isinstance(read, int) and not isinstance(read, bool):
            read = float(read)
        if not isinstance(read, self.kind) or isinstance(read, bool) is not (self.kind is bool):
            raise ValueError(read)
        if (isinstance(read, str) and not read.strip()) or (isinstance(read, float) and not math.isfinite(read)):
            raise ValueError(read)
        if (self.low is not None and read < self.low) or (self.high is not None and read > self.high):
            raise ValueError(read)
        if (self.among is not None and read not in self.among()) or (self.test is not None and not self.test(read)):
            raise ValueError(read)
        return read

    def says(self) -> str:
        return self.expected() if callable(self.expected) else self.expected


def rule(expected: str | Callable[[], str], kind: type[Any] = str, **bounds: Any) -> dict[str, Rule]:
    """A field's metadata declaring what it may be (see `Rule`)."""
    return {"rule": Rule(expected, kind, **bounds)}


def _from_text(kind: type[Any], text: str) -> Any:
    """A value from the environment (or a flag) read as `kind`; left as text when it is not one."""
    if kind is bool and text.lower() in ("1", "true", "yes", "0", "false", "no"):
        return text.lower() in ("1", "true", "yes")
    if kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            return text
    return text


def _http_address(url: str) -> bool:
    return urlsplit(url).scheme in ("http", "https")


def _known_theme(theme: str) -> bool:
    return theme == DEFAULT_THEME or theme in _themes()


def _narrators_listed() -> str:
    return f"one of {', '.join(narrator_names())}"


def _themes_listed() -> str:
    return f"one of Textual's themes ({', '.join(sorted(_themes()))})"


@dataclass(frozen=True)
class Settings:
    """Everything that decides how a story is played, and, on each field, what it may be."""

    narrator: str = field(default=DEFAULT_NARRATOR, metadata=rule(_narrators_listed, among=narrator_names))
    model: str | None = field(default=None, metadata=rule("a non-empty string"))
    base_url: str | None = field(default=None, metadata=rule("an http:// or https:// address", test=_http_address))
    budget: int = field(default=DEFAULT_BUDGET, metadata=rule("a whole number of corrections, 0 or more", int, low=0))
    pace: float | None = field(
        default=None,
        metadata=rule(f"a number from 0 to {PACE_MAX:g} (seconds per streamed chunk)", float, low=0, high=PACE_MAX),
    )
    theme: str = field(default=DEFAULT_THEME, metadata=rule(_themes_listed, test=_known_theme))
    output: str = field(default="tools", metadata=rule(" or ".join(OUTPUTS), among=lambda: OUTPUTS))
    max_tokens: int = field(default=1024, metadata=rule("a whole number, at least 1", int, low=1))
    thinking: bool = field(default=False, metadata=rule("true or false", bool))
    screen_reader: bool = field(default=False, metadata=rule("true or false", bool))
    """Play as plain printed lines for a screen reader instead of the full-screen app."""
    seed: int = field(default=0, metadata=rule("a whole number", int))
    faults: float = field(default=0.0, metadata=rule("a number from 0 to 1", float, low=0, high=1))
    api_key: str | None = field(default=None, repr=False)
    """From the environment only; kept out of `repr` so it cannot leak into a log or traceback."""

    def masked(self) -> dict[str, Any]:
        """The settings for display: the key reduced to whether it is set, credentials cut from the URL."""
        data = asdict(self)
        var = NARRATORS[self.narrator].key_var
        data["api_key"] = (f"set ({var})" if self.api_key else f"not set ({var})") if var else "not needed"
        data["base_url"] = _without_credentials(self.base_url)
        return data

    def choices(self) -> SessionChoices:
        """What a save records of these settings (never a key)."""
        return SessionChoices(narrator=self.narrator, seed=self.seed, faults=self.faults, budget=self.budget)

    def with_choices(self, choices: SessionChoices) -> Settings:
        """These settings, playing on with `choices` (see `SessionChoices.continuing`)."""
        return replace(self, narrator=choices.narrator, seed=choices.seed, faults=choices.faults, budget=choices.budget)


RULES: dict[str, Rule] = {f.name: f.metadata["rule"] for f in fields(Settings) if "rule" in f.metadata}
"""What each setting may be, as `Settings` declares it."""


def _validated(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """One layer's values, each conformed to the rule `Settings` declares for it.

    Raises:
        SettingsError: "{source}: {key} must be {what it may be}, not {the value}", for the first bad one.
    """
    checked = {}
    for key, value in values.items():
        try:
            checked[key] = RULES[key].conform(value)
        except ValueError:
            raise SettingsError(f"{source}: {key} must be {RULES[key].says()}, not {_shown(value)}") from None
    return checked


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
    from_flags = _flags(args)
    narrator = _narrator(top, from_env, from_flags, path)
    entry = NARRATORS[narrator]
    if top.get("narrator", narrator) != narrator:  # the file's model and URL belong to its own narrator
        top = {k: v for k, v in top.items() if k not in MODEL_OPTIONS}
    table = data.get(narrator, {}) if entry.has_table else {}
    env_vars = {name: var for var, name in _ENV_KEYS.items() if name in from_env}
    if entry.base_url_var and env.get(entry.base_url_var) and "base_url" not in from_env:
        from_env = {**from_env, "base_url": env[entry.base_url_var]}
        env_vars["base_url"] = entry.base_url_var
    settings, origins = Settings(), {}
    for layer, source in (
        (top, str(path)),
        (table, f"{path} [{narrator}]"),
        (from_env, "the environment"),
        (from_flags, "the command line"),
    ):
        settings = replace(settings, **_validated(layer, source))
        origins.update(
            {key: f"{source} ({env_vars[key]})" if key in env_vars and layer is from_env else source for key in layer}
        )
    if entry.key_var and env.get(entry.key_var):
        settings = replace(settings, api_key=env[entry.key_var])
        origins["api_key"] = entry.key_var
    return settings, origins


def _flags(args: argparse.Namespace | None) -> dict[str, Any]:
    """The settings given on the command line (a flag left out, or a switch left off, is not one)."""
    if args is None:
        return {}
    given = {name: getattr(args, name, None) for name in _FLAG_KEYS}
    return {name: value for name, value in given.items() if value is not None and value is not False}


def _narrator(top: Mapping[str, Any], from_env: Mapping[str, Any], from_flags: Mapping[str, Any], path: Path) -> str:
    """Which narrator plays: it decides which of the file's tables and key variables apply."""
    for layer, source in ((from_flags, "the command line"), (from_env, "STORYLOOM_NARRATOR"), (top, str(path))):
        if "narrator" in layer:
            return str(_validated({"narrator": layer["narrator"]}, source)["narrator"])
    return DEFAULT_NARRATOR


def _read_file(path: Path) -> dict[str, Any]:
    data = _parse_file(path)
    for table, keys in (("", data), *((name, data[name]) for name in _tables() if name in data)):
        _check_table(table, keys, path)
    return data


def _parse_file(path: Path) -> dict[str, Any]:
    """The config file as TOML (none: no settings), or a message saying why it cannot be read."""
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
        return tomllib.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read the config file: {exc}") from None
    except RecursionError:
        raise SettingsError(f"{path}: cannot read the config file: its values are nested too deeply") from None


def _check_table(table: str, keys: Any, path: Path) -> None:
    """One table of the file (the top level is ""): known keys, no key, every value valid, even in a
    table this story does not use."""
    if not isinstance(keys, dict):
        raise SettingsError(f"{path}: [{table}] must be a table of settings")
    where = f"{path} [{table}]" if table else str(path)
    if "api_key" in keys:
        entry = NARRATORS.get(table)
        variables = entry.key_var if entry and entry.key_var else " or ".join(key_vars())
        raise SettingsError(
            f"{where}: API keys are never read from the config file (it is easy to share "
            f"by mistake); remove api_key and set {variables} in the environment instead"
        )
    allowed = MODEL_OPTIONS if table else _FILE_KEYS | set(_tables())
    unknown = set(keys) - allowed
    if unknown:
        raise SettingsError(
            f"{where}: unknown setting(s) {', '.join(_shown(k, quoted=False) for k in sorted(unknown))}; "
            f"known: {', '.join(sorted(allowed))}"
        )
    _validated({key: value for key, value in keys.items() if key not in _tables()}, where)


def _tables() -> tuple[str, ...]:
    """The narrators the config file may hold a table for."""
    return tuple(name for name, entry in NARRATORS.items() if entry.has_table)


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


def _without_credentials(url: str | None) -> str | None:
    """A URL with any user:password part replaced, so it can be printed."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))
