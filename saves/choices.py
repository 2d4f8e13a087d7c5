"""What the player chose for a session that its save keeps: the front end fills it, saves read it.

The front end has its own, larger settings (keys, theme, pace); a save takes only
these fields, so saves/ never imports the front end and never sees a key.
Kept free of the engine's heavy modules: the front end builds it before the first frame.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from storyloom.engine.limits import DEFAULT_BUDGET

if TYPE_CHECKING:
    from storyloom.saves.format import SaveHeader


@dataclass(frozen=True)
class SessionChoices:
    """The player's choices a save header records (or a resume carries on).

    Attributes:
        narrator: the narrator's name (`offline`, `anthropic`, `openai`).
        seed: the offline narrator's seed.
        faults: the offline narrator's fault rate.
        budget: corrections per turn, for a new save (a resumed one keeps its own).
    """

    narrator: str = "offline"
    seed: int = 0
    faults: float = 0.0
    budget: int = DEFAULT_BUDGET

    def continuing(self, header: SaveHeader) -> SessionChoices:
        """The choices for continuing a save: the offline narrator keeps the save's seed and fault
        rate, so a resumed story goes on exactly as it would have without the break."""
        if self.narrator == "offline" == header.narrator:
            return replace(self, seed=header.seed, faults=header.faults)
        return self
