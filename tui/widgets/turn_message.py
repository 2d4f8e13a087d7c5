"""One turn on screen, from the first streamed word to committed, failed, cancelled or retried."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message

from storyloom.engine.events import (
    AlternativeChosen,
    AlternativeStarted,
    AttemptFinished,
    CorrectionStarted,
    Event,
    NarratorRetrying,
    ProseDelta,
    ProseReplaced,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
)
from storyloom.tui._textual_internals import KeepsRowsWhenTaller, no_layout_virtual_size
from storyloom.tui.failures import BUDGET_SPENT, failure
from storyloom.tui.widgets.archived_turns import TurnRecord
from storyloom.tui.widgets.prose import Paragraph, Prose, plain, rows_ahead
from storyloom.tui.widgets.status_row import StatusRow


class _Asked(Message):
    """What the player asked of one turn message: posted to the screen, which alone acts on it."""

    def __init__(self, message: TurnMessage) -> None:
        super().__init__()
        self.message = message

    @property
    def control(self) -> TurnMessage:
        return self.message


class TurnMessage(KeepsRowsWhenTaller, Vertical, can_focus=True):
    """The single widget a turn lives in for its whole life.

    The same object (and id, `turn-N`) shows the streaming prose, the quiet
    correcting status, the committed turn, a failure or a cancel, and a manual
    retry of the same turn. It only renders engine events; it never changes
    game state: retry and details are requests posted to the screen.
    """

    virtual_size = no_layout_virtual_size()

    DEFAULT_CSS = """
    TurnMessage {
        height: auto;
        padding: 0 1 0 1;
        border-left: tall $background;
        & > .-command { color: $text-muted; text-style: bold; }
        &:focus { border-left: tall $accent; background: $boost; }
        &.-undone > Prose, &.-failed > Prose, &.-cancelled > Prose { color: $text-muted; }
        &.-apart { padding: 1 1 0 1; }
    }
    """

    BINDINGS = [
        Binding("left", "browse(-1)", "Versions", key_display="← →"),
        Binding("right", "browse(1)", "Next version", show=False),
    ]
    """Only keys that cannot be typed text: every printable key goes to the input line, whatever
    has focus (the app hands it there). Retry, details and another version of a focused message are
    the screen's ctrl+r, ctrl+d and ctrl+g."""

    class RetryRequested(_Asked):
        """The player asked to retry this (failed or cancelled) turn."""

    class DetailsRequested(_Asked):
        """The player asked to see what went wrong with this turn and what the corrections changed."""

    class RegenerateRequested(_Asked):
        """The player asked for another version of this (latest committed) turn."""

    class VersionRequested(_Asked):
        """The player browsed to another committed version of this turn (1-based)."""

        def __init__(self, message: TurnMessage, version: int) -> None:
            super().__init__(message)
            self.version = version

    def __init__(self, turn: int, player_input: str, *, reserve: int = 0, apart: bool = False) -> None:
        """Args:
        turn: the engine's turn number.
        player_input: the command this turn answers.
        reserve: blank rows the message above gave back (`release_reserve`): the prose starts
            that tall, so taking them moves nothing on screen. Until its children are composed the
            message is held at that height by `min-height` (its command and status rows come with them).
        apart: a blank row above it, when the turn above ends with a status in words (an empty
            status row is the blank row between turns).
        """
        super().__init__(id=f"turn-{turn}", classes="-apart" if apart else None)
        self.turn = turn
        """The engine's turn number (never reused)."""
        self.player_input = player_input
        self.events: list[Event] = []
        """Every event of the latest try of this turn, for the details screen."""
        self.outcome = "streaming"
        """"streaming", "correcting", "committed", "failed", "cancelled" or "undone"."""
        self.can_retry = False
        """True while the engine would retry this turn (it is the session's pending turn)."""
        self.failure = BUDGET_SPENT
        """How the latest failure of this turn is said (when its outcome is "failed")."""
        self.can_regenerate = False
        """True while the engine would write another version of this turn (the latest, not fixed)."""
        self.versions: list[tuple[str, tuple[Event, ...]]] = []
        """Each committed version of this turn: its prose and the events of its try (for details)."""
        self.chosen = 0
        """The version that shows (1-based; 0 before the first commit)."""
        self.writing_version = 0
        """The version being written now (0 when none: the turn itself, or nothing in flight)."""
        self.fixed = False
        """True once the next command was played: the version that shows counts for good."""
        self.prose = Prose(reserve=max(0, reserve - 1) if apart else reserve)  # the blank row above takes one
        self.status = StatusRow()
        self._held = 0
        """Blank rows under the status row, held after the turn settled on shorter prose (`close_gap`)."""
        if reserve:  # the rows it takes are blank already: it rises with its first row of text
            self.styles.min_height = reserve

    @classmethod
    def restored(
        cls,
        turn: int,
        player_input: str,
        versions: list[str],
        chosen: int,
        events: Sequence[Event] = (),
        *,
        apart: bool = False,
    ) -> TurnMessage:
        """The latest turn of a resumed story, committed, with its versions to browse (their prose)
        and the recorded events of its tries, for its details."""
        message = cls(turn, player_input, apart=apart)
        message.outcome = "committed"
        message.versions = [(prose, tuple(events)) for prose in versions]
        message.prose.set_text(versions[chosen - 1])
        message._choose(chosen, len(versions))
        return message

    def compose(self) -> ComposeResult:
        command = Paragraph(classes="-command")
        command.update(plain(f"› {self.player_input}"))
        yield command
        yield self.prose
        yield self.status

    @property
    def hidden_rows(self) -> int:
        """Rows its streaming prose was laid out with below its text (`Prose.hidden`), which the transcript
        keeps below the view: the first shows under the text, blank, where the status row stands when
        there are none; the status row and the rest are below the view."""
        return self.prose.hidden

    @property
    def has_details(self) -> bool:
        """Whether there is anything to show in the details screen: issues or corrections."""
        return any(e.event in ("validation_failed", "turn_failed") for e in self.events)

    def show(self, event: Event) -> None:
        """Render one engine event of this turn."""
        if isinstance(event, TurnStarted | AlternativeStarted):
            self._start(event)
            return
        if isinstance(event, AlternativeChosen):
            self._choose(event.alternative, event.alternatives, event.narrative)
            return
        self.events.append(event)
        if isinstance(event, ProseDelta):
            if self.status.kind in ("writing", "retrying"):  # the words arrived, or the retried request answers
                self.status.clear()
            self.prose.ahead = 0 if self.status.showing else rows_ahead()  # a status painted stays in view its time
            self.prose.append(event.text)
            return
        self.prose.settle()  # the stream is over: paint what is pending, give back the reserved lines
        if isinstance(event, CorrectionStarted):
            self.outcome = "correcting"
            self.status.correcting(event.correction, event.budget)
        elif isinstance(event, ProseReplaced):
            if event.changed:
                self.prose.set_text(event.text)
        elif isinstance(event, NarratorRetrying):
            self.status.retrying(event.delay)
        elif isinstance(event, TurnCommitted):
            self._committed(event)
        elif isinstance(event, TurnFailed | TurnCancelled):
            self._ended(event)

    def _committed(self, event: TurnCommitted) -> None:
        """A try committed: a new turn's only version, or another version, shown as the chosen one."""
        self.outcome = "committed"
        if not self.writing_version:
            self.versions.clear()
        self.versions.append((event.narrative, tuple(self.events)))
        self.writing_version = 0
        self._choose(len(self.versions), len(self.versions))

    def _ended(self, event: TurnFailed | TurnCancelled) -> None:
        """A try failed or was cancelled: another version is lost (the chosen one stays), a turn offers a retry."""
        if self.writing_version:
            self._version_lost(
                "another version failed" if isinstance(event, TurnFailed) else "another version cancelled"
            )
        elif isinstance(event, TurnFailed):
            self.outcome = "failed"
            self.failure = failure(event)
            self.add_class("-failed")
            self.offer_retry(True)
        else:
            self.outcome = "cancelled"
            self.add_class("-cancelled")
            self.offer_retry(True)

    def _start(self, event: TurnStarted | AlternativeStarted) -> None:
        """A try of this turn starts: the turn itself, a retry of it, or another version of it."""
        self.events = [event]
        self.outcome = "streaming"
        self.can_retry = self.can_regenerate = False
        self.remove_class("-undone", "-failed", "-cancelled")
        if isinstance(event, AlternativeStarted):
            self.writing_version = event.alternative
            self.prose.rewrite()
            self.status.writing(event.alternative)
        else:
            if event.retry:
                self.prose.rewrite()
            self.status.writing()
        self.refresh_bindings()

    def _choose(self, version: int, count: int, narrative: str | None = None) -> None:
        """Show one committed version: its prose (swapped in one step if it differs) and `‹ n/N ›`."""
        self.chosen = version
        if narrative is None and 1 <= version <= len(self.versions):
            narrative, events = self.versions[version - 1]
            self.events = list(events)
        elif 1 <= version <= len(self.versions):
            self.events = list(self.versions[version - 1][1])
        if narrative is not None and narrative != self.prose.text:
            self.prose.set_text(narrative)
        self.status.versions(version, count, self._note())
        if self.is_mounted:
            self.refresh_bindings()

    def _version_lost(self, note: str) -> None:
        """Another version failed or was cancelled: the chosen one shows again, as it was, and counts."""
        self.writing_version = 0
        self.outcome = "committed"
        lost = self.events
        self._choose(self.chosen, len(self.versions))
        self.events = lost  # d shows what went wrong with the lost version
        self.status.versions(self.chosen, len(self.versions), f"{note} · ^d details" if self.has_details else note)

    def _note(self) -> str:
        """What the status row says of the version shown besides its number: "corrected" when a
        correction changed prose the reader had seen, before it was committed."""
        if not 1 <= self.chosen <= len(self.versions):
            return ""
        shown = asked = False
        for event in self.versions[self.chosen - 1][1]:
            shown = shown or (isinstance(event, ProseDelta) and bool(event.text.strip()))
            asked = asked or isinstance(event, CorrectionStarted)
            if shown and asked and isinstance(event, ProseReplaced) and event.changed:
                return "corrected"
        return ""

    def fix_version(self) -> None:
        """The next command was played: this turn's shown version is the one that counts from now on."""
        self.fixed = True
        self.can_regenerate = False
        if self.outcome == "committed":
            self.status.fixed(self.chosen, len(self.versions), self._note())
        self.refresh_bindings()

    def open_versions(self) -> None:
        """The turn after this one was undone: this is the latest turn again, its versions browsable."""
        self.fixed = False
        if self.outcome == "committed" and (len(self.versions) > 1 or self._note()):
            self.status.versions(self.chosen, len(self.versions), self._note())
        self.refresh_bindings()

    def offer_regenerate(self, can: bool) -> None:
        """Say whether the engine would write another version of this turn now."""
        if self.can_regenerate != can:
            self.can_regenerate = can
            self.refresh_bindings()

    def offer_retry(self, can_retry: bool) -> None:
        """Say whether this failed or cancelled turn can still be retried."""
        self.can_retry = can_retry
        if self.outcome == "failed":
            self.status.failed(can_retry=can_retry, words=self.failure.status)
        elif self.outcome == "cancelled":
            self.status.cancelled(can_retry=can_retry)
        self.refresh_bindings()

    def close_gap(self) -> int:
        """The turn settled on prose shorter than the message was (a correction or another version with
        fewer rows): give back the blank rows the longer prose held. Returns how many.

        When the settled status row says something in words, the next turn will stand a blank row
        below it anyway (`apart`): that row is held here, under the status, so a turn one row shorter
        moves nothing at all; the next turn's blank row above its command takes it. Any other rows
        are given back: the transcript follows its foot, so what is above moves down by them, once,
        in the frame that shows the settled turn (its status changes then too); while the words
        were being written nothing moved. The alternative, a gap the reader sees under the newest
        turn until the next command takes it, reads as unfinished (see `Prose.release`).
        """
        height = self.outer_size.height
        closed = self.release_reserve()
        if closed and self.status.plain_text:
            self._held = 1
            self.styles.min_height = height - closed + 1
            closed -= 1
        if closed:
            self.prose.closed += 1
        return closed

    def release_reserve(self) -> int:
        """Give back the blank rows at the foot of the message, for what is shown next to take (see `Prose.release`)."""
        held, self._held = self._held, 0
        self.styles.min_height = None
        return held + self.prose.release()

    def mark_undone(self) -> None:
        """This committed turn was undone: keep it on screen, say it no longer counts."""
        self.outcome = "undone"
        self.add_class("-undone")
        self.status.undone()

    def record(self) -> TurnRecord:
        """This turn as it is shown now, for folding it into an `ArchivedTurns` block."""
        return TurnRecord(
            self.turn,
            self.player_input,
            self.prose.text,
            self.outcome,
            self.status.plain_text,
            details=details_events(self.events) if self.has_details else (),
            apart=self.has_class("-apart"),
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "retry":
            return self.can_retry
        if action == "details":
            return self.has_details
        if action == "regenerate":
            return self.can_regenerate
        if action == "browse":  # on a fixed turn too: the screen asks to continue from it on a new branch
            return self.can_browse or (self.fixed and len(self.versions) > 1)
        return True

    @property
    def can_browse(self) -> bool:
        """Whether left/right show another version: more than one, nothing in flight, not fixed."""
        return len(self.versions) > 1 and not self.fixed and not self.writing_version and self.outcome == "committed"

    def action_regenerate(self) -> None:
        if self.can_regenerate:
            self.post_message(self.RegenerateRequested(self))

    def action_browse(self, step: int) -> None:
        if self.can_browse or (self.fixed and len(self.versions) > 1):
            version = self.chosen + step
            if 1 <= version <= len(self.versions):
                self.post_message(self.VersionRequested(self, version))

    def action_retry(self) -> None:
        if self.can_retry:
            self.post_message(self.RetryRequested(self))

    def action_details(self) -> None:
        if self.has_details:
            self.post_message(self.DetailsRequested(self))

    def on_click(self) -> None:
        """Focus the message where it is: a click must not scroll what the player is reading."""
        self.focus(scroll_visible=False)


def details_events(events: Sequence[Event]) -> tuple[Event, ...]:
    """A folded turn's events as its details screen reads them: the streamed prose as one delta, no chunk timing.

    A turn streams one event per chunk and records every chunk's timing; kept for every folded
    turn with issues, that would cost far more memory than the details ever show.
    """
    streamed = "".join(e.text for e in events if isinstance(e, ProseDelta))
    kept: list[Event] = []
    for event in events:
        if isinstance(event, ProseDelta):
            if streamed:  # in the place of the first delta: the screen reads the events in order
                kept.append(ProseDelta(turn=event.turn, text=streamed))
                streamed = ""
        else:
            kept.append(replace(event, deltas=()) if isinstance(event, AttemptFinished) else event)
    return tuple(kept)
