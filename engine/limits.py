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
