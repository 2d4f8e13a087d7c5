"""Effective settings: the config file, overridden by the environment, overridden by flags.

Also the one place that turns settings into a narrator, so the TUI, headless
play and replay all build narrators the same way.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from engine.lifecycle import DEFAULT_BUDGET
from engine.narrators.base import Narrator
from engine.packs import StoryPack

DEFAULT_STORY = "lighthouse"
UI_PACE = 0.03
"""Seconds between streamed chunks of the offline narrator in the UI (a human reading pace)."""


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
    theme: str = "textual-dark"
    output: str = "tools"
    max_tokens: int = 1024
    thinking: bool = False
    seed: int = 0
    faults: float = 0.0
    api_key: str | None = None

    def masked(self) -> dict[str, Any]:
        """The settings for display, with secrets masked."""
        data = asdict(self)
        if data["api_key"]:
            data["api_key"] = data["api_key"][:3] + "…" + "(set)"
        return data


def config_path() -> Path:
    """Where the config file lives: `platformdirs.user_config_dir("storyloom")/config.toml`."""
    return Path(platformdirs.user_config_dir("storyloom")) / "config.toml"


_FILE_KEYS = {"narrator", "model", "base_url", "budget", "pace", "theme", "output", "max_tokens"}


def load_settings(args: argparse.Namespace | None = None, env: Mapping[str, str] | None = None,
                  path: Path | None = None) -> Settings:
    """The effective settings: file < environment < flags.

    Raises:
        SettingsError: the config file is unreadable or holds a bad value.
    """
    env = os.environ if env is None else env
    settings = Settings()
    path = path or config_path()
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(f"{path}: cannot read the config file: {exc}") from None
        unknown = set(data) - _FILE_KEYS
        if unknown:
            raise SettingsError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; "
                                f"known: {', '.join(sorted(_FILE_KEYS))}")
        settings = _merge(settings, data, str(path))
    from_env: dict[str, Any] = {}
    if env.get("STORYLOOM_NARRATOR"):
        from_env["narrator"] = env["STORYLOOM_NARRATOR"]
    if env.get("STORYLOOM_MODEL"):
        from_env["model"] = env["STORYLOOM_MODEL"]
    settings = _merge(settings, from_env, "the environment")
    if args is not None:
        from_flags = {f.name: getattr(args, f.name) for f in fields(Settings)
                      if getattr(args, f.name, None) not in (None, False)}
        settings = _merge(settings, from_flags, "the command line")
    key_var = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}.get(settings.narrator)
    if key_var:
        settings = replace(settings, api_key=env.get(key_var) or None)
    return settings


def _merge(settings: Settings, values: Mapping[str, Any], source: str) -> Settings:
    try:
        merged = replace(settings, **values)
    except TypeError as exc:
        raise SettingsError(f"{source}: {exc}") from None
    if merged.narrator not in ("offline", "anthropic", "openai"):
        raise SettingsError(f"{source}: narrator must be offline, anthropic or openai, not {merged.narrator!r}")
    if not isinstance(merged.budget, int) or merged.budget < 0:
        raise SettingsError(f"{source}: budget must be a whole number of corrections, 0 or more")
    return merged


def create_narrator(settings: Settings, pack: StoryPack, *, interactive: bool) -> Narrator:
    """Build the narrator the settings ask for.

    Args:
        interactive: True in the UI, where the offline narrator streams at a reading pace;
            headless play and tests get every chunk at once.
    """
    if settings.narrator == "offline":
        from engine.narrators.offline import OfflineNarrator

        pace = settings.pace if settings.pace is not None else (UI_PACE if interactive else 0.0)
        return OfflineNarrator(pack, seed=settings.seed, faults=settings.faults, pace=pace)
    raise SettingsError(f"the {settings.narrator} narrator is not available yet")


def print_config(args: argparse.Namespace) -> int:
    """`storyloom config`: the effective settings, secrets masked."""
    try:
        settings = load_settings(None)
    except SettingsError as exc:
        print(f"storyloom: {exc}")
        return 2
    print(f"# config file: {config_path()}")
    for key, value in settings.masked().items():
        print(f"{key} = {value!r}")
    return 0
