"""The narrators a player can choose: one `NarratorEntry` each, in `NARRATORS`.

Everything that names a narrator reads this table: the command line's `--narrator` choices and
help, which flags and config tables apply to which narrator (`tui/settings.py`), the factory
(`tui/session.create_narrator`), `storyloom config`'s defaults and the turn details' token line.
Adding a provider is its module in `engine/narrators/` (speaking `engine/narration.Narrator`)
and one entry here; `tests/test_narrator_registry.py` checks that a new entry is offered,
validated and built everywhere.

This module is read before the first frame: a narrator's module (and its SDK) is imported only
when that narrator is built or its defaults are shown.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storyloom.engine.narration import Narrator
    from storyloom.engine.packs import StoryPack
    from storyloom.tui.settings import Settings

UI_PACE = 0.03
"""Seconds between streamed chunks of the offline narrator in the UI (a human reading pace)."""

MODEL_OPTIONS = frozenset({"model", "base_url", "output", "max_tokens", "thinking"})
"""The settings that belong to a model narrator: they may sit in its own table of the config file
(`[anthropic]`), and the file's top-level ones apply only to the narrator the file names."""

Build = Callable[["Settings", "StoryPack", bool], "Narrator"]
"""Builds a narrator from the effective settings and the story (True: the interactive UI)."""


@dataclass(frozen=True)
class NarratorEntry:
    """One narrator a player can choose, as every part of storyloom that names it needs it."""

    name: str
    """What `--narrator`, the config file and a save's header call it."""
    summary: str
    """What it is, in a few words, for `--help` ("built in, no key")."""
    build: Build
    options: frozenset[str]
    """The settings it reads besides the budget (its flags' help names it for these)."""
    module: str
    """The engine module that speaks to it; its `DEFAULT_MODEL` and `DEFAULT_BASE_URL`, where it has
    them, are what `storyloom config` shows when none is set."""
    key_var: str | None = None
    """The environment variable its API key comes from (never the config file)."""
    base_url_var: str | None = None
    """The vendor's own variable for its address (`ANTHROPIC_BASE_URL`), below `STORYLOOM_BASE_URL`."""
    counts_tokens: bool = True
    """False when its turns have no token figures to show (the turn details say so)."""

    @property
    def has_table(self) -> bool:
        """True when the config file may hold a `[name]` table for it (a model narrator)."""
        return bool(self.options & MODEL_OPTIONS)

    def defaults(self) -> dict[str, str]:
        """The model and address it uses when none is set (imports its module)."""
        module = importlib.import_module(self.module)
        found = {"model": getattr(module, "DEFAULT_MODEL", None), "base_url": getattr(module, "DEFAULT_BASE_URL", None)}
        return {key: value for key, value in found.items() if isinstance(value, str)}


def _offline(settings: Settings, pack: StoryPack, interactive: bool) -> Narrator:
    from storyloom.engine.narrators.offline import OfflineNarrator

    pace = settings.pace if settings.pace is not None else (UI_PACE if interactive else 0.0)
    return OfflineNarrator(pack, seed=settings.seed, faults=settings.faults, pace=pace)


def _anthropic(settings: Settings, pack: StoryPack, interactive: bool) -> Narrator:
    from storyloom.engine.narrators.anthropic import AnthropicNarrator

    return AnthropicNarrator(
        api_key=settings.api_key,
        model=settings.model,
        base_url=settings.base_url,
        max_tokens=settings.max_tokens,
        thinking=settings.thinking,
    )


def _openai(settings: Settings, pack: StoryPack, interactive: bool) -> Narrator:
    from storyloom.engine.narrators.openai import OpenAINarrator

    return OpenAINarrator(
        base_url=settings.base_url,
        api_key=settings.api_key,
        model=settings.model,
        output=settings.output,
        max_tokens=settings.max_tokens,
    )


NARRATORS: dict[str, NarratorEntry] = {
    entry.name: entry
    for entry in (
        NarratorEntry(
            name="offline",
            summary="built in, no key",
            build=_offline,
            options=frozenset({"pace", "seed", "faults"}),
            module="storyloom.engine.narrators.offline",
            counts_tokens=False,
        ),
        NarratorEntry(
            name="anthropic",
            summary="Claude, with ANTHROPIC_API_KEY",
            build=_anthropic,
            options=frozenset({"model", "base_url", "max_tokens", "thinking"}),
            module="storyloom.engine.narrators.anthropic",
            key_var="ANTHROPIC_API_KEY",
            base_url_var="ANTHROPIC_BASE_URL",
        ),
        NarratorEntry(
            name="openai",
            summary="any OpenAI-compatible server, a local Ollama by default",
            build=_openai,
            options=frozenset({"model", "base_url", "output", "max_tokens"}),
            module="storyloom.engine.narrators.openai",
            key_var="OPENAI_API_KEY",
            base_url_var="OPENAI_BASE_URL",
        ),
    )
}
"""Every narrator a player can choose, in the order help lists them (the first is the default)."""

DEFAULT_NARRATOR = "offline"


def narrator_names() -> tuple[str, ...]:
    """The narrators a player can choose, as `--narrator` offers them."""
    return tuple(NARRATORS)


def taking(option: str) -> tuple[str, ...]:
    """The narrators that read a setting, for its flag's help ("anthropic/openai: …")."""
    return tuple(name for name, entry in NARRATORS.items() if option in entry.options)


def key_vars() -> tuple[str, ...]:
    """Every environment variable an API key may come from."""
    return tuple(entry.key_var for entry in NARRATORS.values() if entry.key_var)


def counts_tokens(name: str) -> bool:
    """Whether a narrator's turns carry token figures (an unknown one is assumed to)."""
    entry = NARRATORS.get(name)
    return entry is None or entry.counts_tokens


def listed(names: tuple[str, ...], last: str = "or") -> str:
    """Names as a sentence lists them: "offline, anthropic or openai"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def narrator_help() -> str:
    """`--narrator`'s help: each narrator with what it is."""
    described = tuple(f"{name} ({entry.summary})" for name, entry in NARRATORS.items())
    return f"who tells the story: {listed(described)} (default: {DEFAULT_NARRATOR}, or the config file's)"
