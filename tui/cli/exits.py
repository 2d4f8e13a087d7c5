"""The exit codes of every `storyloom` command, in one table.

A script (CI, a walk-through) can tell from the code alone what went wrong,
whichever command it ran.
"""

from __future__ import annotations

EXIT_OK = 0
"""Done: every turn committed, the save is sound, the replay matches its record."""
EXIT_FAILURE = 1
"""Something failed: a save is not sound, a replay diverged, records could not be saved, an error."""
EXIT_USAGE = 2
"""Bad arguments, or an input that cannot be read or played (a story, a commands file, a save, the settings)."""
EXIT_TURN_FAILED = 3
"""Headless play: a turn failed, its budget spent or its narrator failing (the save stays valid and resumable)."""
