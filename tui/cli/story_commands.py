"""`storyloom stories | check-story PATH | config`: what can be played, and with which settings."""

from __future__ import annotations

import argparse
import json
import sys

from storyloom.engine.builtin import builtin_pack_ids
from storyloom.engine.narrators.offline.parse import pack_warnings
from storyloom.engine.packs import PackError, load_pack
from storyloom.engine.safety import safe_text
from storyloom.engine.story import binding
from storyloom.tui.cli.exits import EXIT_OK, EXIT_USAGE
from storyloom.tui.cli.printer import print_problems
from storyloom.tui.narrators import NARRATORS
from storyloom.tui.settings import DEFAULT_STORY, SettingsError, config_path, resolve_settings
from storyloom.tui.words import plural


def stories(args: argparse.Namespace) -> int:
    """List the built-in stories, the one `storyloom` plays when none is named first."""
    for pack_id in sorted(builtin_pack_ids(), key=lambda i: i != DEFAULT_STORY):
        pack = load_pack(pack_id)
        default = "  (the default)" if pack_id == DEFAULT_STORY else ""
        counts = f"{plural(len(pack.rooms), 'room')}, {plural(len(pack.items), 'item')}"
        print(f"{pack.id:<16} {safe_text(pack.title)}  ({counts}){default}")
    return EXIT_OK


def check_story(args: argparse.Namespace) -> int:
    """Check a story pack and list every problem (exit 2 when it has any); for a sound one, say what
    the story's rules bind, what the pack leaves free, and what can never happen in it."""
    try:
        pack = load_pack(args.path)
    except PackError as exc:
        print_problems(exc, sys.stderr)
        print(plural(len(exc.problems), "problem") + " found", file=sys.stderr)
        return EXIT_USAGE
    parts = ((pack.rooms, "room"), (pack.items, "item"), (pack.stats, "stat"), (pack.flags, "flag"))
    counts = ", ".join(plural(len(things), noun) for things, noun in parts)
    counts += f", {plural(len(pack.actions), 'action')}, {plural(len(pack.endings), 'ending')}"
    print(f"ok: {pack.id} \u2014 {safe_text(pack.title)}: {counts}")
    bound = binding(pack)
    print("bound (changed only by these actions; any item also by taking and dropping it):")
    for key, actions in bound.bound.items():
        print(f"  {safe_text(key)}: {safe_text(', '.join(actions))}")
    if not bound.bound:
        print("  nothing")
    print(f"free (the narrator's to change at will): {_listed(bound.free)}")
    print(f"never changes (no action changes it, and it is not free): {_listed(bound.fixed)}")
    print(f"actions whose requirements can never hold: {_listed(bound.never_done)}")
    print(f"endings that can never be reached: {_listed(bound.never_reached)}")
    warnings = pack_warnings(pack)
    print("warnings (words that mean different things in different places):" if warnings else "warnings: none")
    for warning in warnings:
        print(f"  {safe_text(warning)}")
    return EXIT_OK


SHOWN_VALUE_CHARS = 200
"""The longest value `storyloom config` prints whole; a longer one is shown by its start and length."""


def _listed(keys: list[str]) -> str:
    return safe_text(", ".join(keys)) if keys else "none"


def config(args: argparse.Namespace) -> int:
    """`storyloom config`: the effective settings, secrets masked, each with where it came from."""
    path = config_path()
    try:
        settings, origins = resolve_settings(None, None, path)
    except SettingsError as exc:
        print(f"storyloom: {exc}")
        return EXIT_USAGE
    state = "found" if path.is_file() else "not found; every value below is a default or from the environment"
    print(f"# config file: {path} ({state})")
    print("# precedence: config file < environment < command-line flags (flags are not shown here)")
    shown = settings.masked()
    for key, value in NARRATORS[settings.narrator].defaults().items():
        if shown.get(key) is None:
            shown[key] = value
            origins.setdefault(key, f"the {settings.narrator} narrator's default")
    for key, value in shown.items():
        text = "none" if value is None else json.dumps(value, ensure_ascii=False)
        if len(text) > SHOWN_VALUE_CHARS:  # a value pasted whole (a file, a log) is named, not printed back
            text = f"{text[:SHOWN_VALUE_CHARS]}… ({len(str(value)):,} characters)"
        print(f"{key} = {text}".ljust(40) + f"# {origins.get(key, 'default')}")
    from storyloom.tui._textual_internals import untested_note

    if note := untested_note():
        print(note)
    return EXIT_OK
