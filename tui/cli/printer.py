"""Engine events as plain text: the one printer used by headless play, text replay and the save commands.

Everything printed that a model, a pack or a save wrote goes through `safe_text`
first, so no escape sequence or control character reaches the terminal.
"""

from __future__ import annotations

from typing import TextIO

from storyloom.engine.events import (
    AlternativeChosen,
    AlternativeStarted,
    BranchStarted,
    BranchSwitched,
    CorrectionStarted,
    Event,
    ProseDelta,
    ProseReplaced,
    StoryEnded,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
    ValidationFailed,
)
from storyloom.engine.packs import PackError, StoryPack
from storyloom.engine.safety import safe_text
from storyloom.tui.failures import failure


class EventPrinter:
    """Prints a story's events as text, in one of two readings of the same events.

    - A transcript (`live=False`, headless play): each committed turn's prose once on
      `out`, so stdout is the story; rejections, corrections and failures are notes on `err`.
    - A live view (`live=True`, text replay): the player's inputs and each committed turn's
      prose, with one short line per correction (the rule it answered; the prose kept or
      swapped), failures, cancels and undos marked inline on `out`. With `drafts`, the prose
      of every attempt as it streams instead, rejected ones too, and `[corrected]` where a
      correction swapped it.

    Args:
        out: where the story goes.
        err: where the transcript's notes go.
        live: print the live view instead of the transcript.
        streaming: flush the live view after each event, so its prose shows as it is replayed (a
            replay at `--speed inf` has no pace to show: it flushes when its buffer is full).
        drafts: the live view streams every attempt's prose, rejected drafts included.
    """

    def __init__(self, out: TextIO, err: TextIO, *, live: bool = False, streaming: bool = True, drafts: bool = False):
        self.out, self.err, self.live, self.streaming, self.drafts = out, err, live, streaming, drafts
        self._open = False
        """The live view is in the middle of a paragraph of prose."""
        self._rejected: list[str] = []
        """The rules each rejected attempt of the turn in flight broke (the live view without drafts)."""
        self._swapped = False
        """The last correction of the turn in flight replaced the prose."""

    def __call__(self, event: Event) -> None:
        if self.live:
            self._live(event)
            if self.streaming:
                self.out.flush()
        else:
            self._transcript(event)

    def end(self) -> None:
        """Close the paragraph being streamed (the live view)."""
        self._close()
        self.out.flush()

    def _transcript(self, event: Event) -> None:
        if isinstance(event, TurnCommitted):
            print(safe_text(event.narrative), file=self.out)
        elif isinstance(event, StoryEnded):
            print_ending(event.title, event.text, self.out)
        elif isinstance(event, TurnUndone):
            print("\n(undone: the last committed turn is taken back)", file=self.out)
        elif isinstance(event, AlternativeStarted):
            print(f"\n(another version of turn {event.turn}: version {event.alternative})", file=self.out)
        elif isinstance(event, AlternativeChosen):
            print(f"\n({_chosen(event)})\n{safe_text(event.narrative)}", file=self.out)
        elif isinstance(event, BranchStarted | BranchSwitched):
            print(f"\n({branched(event)})", file=self.out)
        elif isinstance(event, ValidationFailed):
            rules = ", ".join(sorted({issue.rule for issue in event.issues}))
            self._note(f"turn {event.turn}, attempt {event.attempt} rejected ({rules})")
        elif isinstance(event, CorrectionStarted):
            self._note(f"turn {event.turn}: correction {event.correction} of {event.budget}")
        elif isinstance(event, ProseReplaced) and (event.text or not event.changed):  # not a transient-retry clear
            what = "rewrites the prose" if event.changed else "keeps the prose"
            self._note(f"turn {event.turn}: the correction {what}")
        elif isinstance(event, TurnFailed):
            self._note(f"turn {event.turn} failed {failure(event).outcome}:")
            for issue in event.issues:
                print(f"  [{issue.rule}] {issue.path or '/'}: {safe_text(issue.message)}", file=self.err)

    def _live(self, event: Event) -> None:
        if not self.drafts and self._corrections(event):
            return
        write = self.out.write
        if isinstance(event, ProseDelta):
            write(safe_text(event.text))
            self._open = True
            return
        if isinstance(event, ProseReplaced) and event.changed:
            self._close()
            if event.text:
                write(f"[corrected]\n{safe_text(event.text)}")
                self._open = True
            return
        if isinstance(
            event,
            TurnStarted
            | AlternativeStarted
            | AlternativeChosen
            | TurnCommitted
            | TurnFailed
            | TurnCancelled
            | TurnUndone
            | BranchStarted
            | BranchSwitched
            | StoryEnded,
        ):
            self._close()
            if marker := _marker(event):
                write(marker)

    def _corrections(self, event: Event) -> bool:
        """The live view without drafts: keep what the attempts say until the turn ends, then print the
        committed prose after one line per correction. True when the event is handled here."""
        if isinstance(event, ValidationFailed):
            self._rejected.append(", ".join(sorted({issue.rule for issue in event.issues})))
        elif isinstance(event, ProseReplaced):
            if event.text or not event.changed:  # not a transient retry's clearing
                self._swapped = event.changed
        elif isinstance(event, ProseDelta):
            pass
        elif isinstance(event, TurnCommitted | TurnFailed | TurnCancelled):
            answered = self._rejected[:-1] if isinstance(event, TurnFailed) else self._rejected
            last = {TurnCommitted: "prose swapped" if self._swapped else "prose kept", TurnCancelled: "cancelled"}
            for number, rules in enumerate(answered, 1):
                outcome = last.get(type(event), "") if number == len(self._rejected) else "rejected again"
                self.out.write(f"[correction {number} for {rules}: {outcome}]\n")
            if answered and isinstance(event, TurnCommitted):
                self.out.write("\n")
            self._rejected, self._swapped = [], False
            if isinstance(event, TurnCommitted) and event.narrative:
                self.out.write(safe_text(event.narrative))
                self._open = True
            return False
        else:
            return False
        return True

    def _note(self, text: str) -> None:
        print(f"storyloom: {text}", file=self.err)

    def say(self, text: str, *, skipped: bool = False) -> None:
        """A meta-command's answer (a listing, or why it did nothing): a note on `err`, ending in
        "; skipped" when the command was not played (a commands file goes on with the next line)."""
        self._note(f"{text}; skipped" if skipped else text)

    def _close(self) -> None:
        if self._open:
            self.out.write("\n\n")
            self._open = False


def branched(event: BranchStarted | BranchSwitched) -> str:
    """What a branch or a switch says, in the transcript and the live view alike."""
    if isinstance(event, BranchStarted):
        if not event.turn:
            return f"branch {event.branch}: the story from its start again; branch {event.parent} is kept"
        return f"branch {event.branch}: continued from after turn {event.turn} of branch {event.parent}, which is kept"
    return f"branch {event.branch}: back where it stood, " + (
        f"after turn {event.turn}" if event.turn else "at the story's start"
    )


def _chosen(event: AlternativeChosen) -> str:
    return f"turn {event.turn}: version {event.alternative} of {event.alternatives} chosen"


def print_intro(pack: StoryPack, out: TextIO) -> None:
    """The story's title and opening prose, before the first command."""
    print(safe_text(pack.title), file=out)
    print(file=out)
    print(safe_text(pack.intro.strip()), file=out)


def print_ending(title: str, text: str, out: TextIO) -> None:
    """The ending the story reached, in the transcript (just reached, or a resumed story's)."""
    print(f"\n{safe_text(title)}\n\n{safe_text(text)}", file=out)


def print_problems(exc: PackError, err: TextIO) -> None:
    """Every problem of a story pack that cannot be played, one a line (a pack's text is untrusted)."""
    for problem in exc.problems:
        print(safe_text(str(problem)), file=err)


def _marker(event: Event) -> str:
    """What the live view prints where a turn starts, ends or changes ("" for a commit: its prose is there)."""
    if isinstance(event, TurnStarted):
        again = " (retry)" if event.retry else ""
        return f"> {safe_text(event.player_input)}{again}\n\n"
    if isinstance(event, AlternativeStarted):
        return f"> {safe_text(event.player_input)} (another version: {event.alternative})\n\n"
    if isinstance(event, AlternativeChosen):
        return f"[{_chosen(event)}]\n{safe_text(event.narrative)}\n\n"
    if isinstance(event, TurnFailed):
        reasons = "; ".join(safe_text(i.message) for i in event.issues)
        return f"[turn {event.turn} failed {failure(event).outcome}: {reasons}]\n\n"
    if isinstance(event, TurnCancelled):
        return f"[turn {event.turn} cancelled]\n\n"
    if isinstance(event, TurnUndone):
        return "[undo]\n\n"
    if isinstance(event, BranchStarted | BranchSwitched):
        return f"[{branched(event)}]\n\n"
    if isinstance(event, StoryEnded):
        return f"*** {safe_text(event.title)} ***\n{safe_text(event.text)}\n\n"
    return ""
