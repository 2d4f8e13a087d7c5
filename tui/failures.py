"""What a failed turn is called: one table for the status row, headless play, replay and the printer.

A turn fails in four ways a player must tell apart, because each asks for something else: the
correction budget was spent (try another command, or retry), the narrator stayed unreachable
(wait, or check the server), the model declined (change the command), or the narrator cannot
answer at all (a key, a model name, a full context: the message says what to fix). The engine
says which by the rule of the failure's issue; the words live here once, without Textual, so the
command line can use them without loading the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from storyloom.engine.events import TurnFailed


@dataclass(frozen=True)
class Failure:
    """How one kind of failure is said."""

    status: str
    """The turn's status row: a few words."""
    outcome: str
    """A transcript's line, after "turn N failed"."""


BUDGET_SPENT = Failure("couldn't make this turn consistent", "after its correction budget")
NARRATOR_FAILURES = {
    "narrator.unavailable": Failure(
        "narrator unavailable", "because the narrator was unavailable (every retry failed; no correction was spent)"
    ),
    "narrator.refusal": Failure(
        "the model declined this turn", "because the model declined to write it (no correction was spent)"
    ),
    "narrator.error": Failure(
        "the narrator could not answer", "because the narrator could not answer (no correction was spent)"
    ),
}
"""By the rule of the failure's issue; any other rule is a turn the engine rejected until the budget was spent."""


def failure(event: TurnFailed) -> Failure:
    """How this failed turn is said."""
    for issue in event.issues:
        if issue.rule in NARRATOR_FAILURES:
            return NARRATOR_FAILURES[issue.rule]
    return BUDGET_SPENT
