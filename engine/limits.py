"""Numbers the engine and the settings share, in a module light enough to load before the engine.

Settings are read before the first frame is painted; the engine (pydantic models) is not.
"""

DEFAULT_BUDGET = 2
"""Corrections a turn may use before it fails and the retry key appears."""

COMMAND_MAX_CHARS = 500
"""The longest command a player may give, in characters. A command is a sentence or two; a pasted
book would be read, judged, saved and sent with every later request. The input line stops here and
says so, headless play refuses a longer line and goes on, and the engine refuses one too."""


def command_too_long(command: str) -> str | None:
    """What the player is told about a command longer than `COMMAND_MAX_CHARS`, or None when it fits."""
    if len(command) <= COMMAND_MAX_CHARS:
        return None
    return (
        f"a command is at most {COMMAND_MAX_CHARS} characters and this one has {len(command):,}: say it in fewer words"
    )


HISTORY_TURNS = 50
"""The model's history of committed turns keeps at least this many of the latest and at most twice as
many: when it would go over, it starts again from the latest `HISTORY_TURNS`. A long story does not
grow each request (or memory) without bound, and the cached start of the conversation stays the same
for `HISTORY_TURNS` turns at a time. The world state, sent with every request, holds what endures."""

UNDO_TURNS = 200
"""How many of the latest committed turns can be taken back, one at a time: each keeps the state
before it, so a story of any length holds no more than this many states."""
