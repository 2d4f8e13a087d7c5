"""The game screen: transcript, input line and side panel, driven by the engine's events."""

from __future__ import annotations

import gc
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input

from engine import Event, Session
from engine.events import StoryEnded, TurnCommitted, TurnStarted, TurnUndone
from engine.safety import safe_text
from tui._textual_internals import crop_repaints_to_rows
from tui.screens._issue_details import IssueDetailsScreen
from tui.screens._opening import game_layout
from tui.widgets import (
    ArchivedTurns,
    CommandInput,
    FollowHint,
    SidePanel,
    StoryText,
    Transcript,
    TurnMessage,
    TurnRecord,
)

KEEP_LIVE = 12
"""Turns kept as live messages (focusable, with details); older ones are folded into blocks."""
BLOCK_TURNS = 50
"""Turns per `ArchivedTurns` block: a block is re-wrapped when a turn joins it, so keep it modest."""

EventHook = Callable[[Event], Awaitable[None] | None]
UndoHook = Callable[[], TurnUndone | None]


def narrator_label(narrator: object) -> str:
    """Who is telling the story, for the header: "anthropic narrator · claude-sonnet-5-5"."""
    name, model = str(getattr(narrator, "name", "") or ""), str(getattr(narrator, "model", "") or "")
    label = f"{name} narrator" if name else "narrator"
    return safe_text(f"{label} · {model}" if model else label)


class GameScreen(Screen[None]):
    """Plays a `Session`: sends commands, renders each event, never touches the state itself.

    Args:
        session: the story being played (ready, possibly resumed).
        on_event: called with every engine event before the screen renders it
            (the journal makes a commit durable there before it is shown).
        on_undo: performs an undo and returns its event (or None); without it the
            screen calls `Session.undo()` and passes the event to `on_event`.
        blink: blink the input cursor (off for snapshot tests).
        tune_gc: freeze the objects that live for the whole game (after start-up and after
            archiving turns) so Python's collector stops rescanning them; for the real app,
            not for test processes that start many apps.
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel turn"),
        Binding("ctrl+r", "retry", "Retry", priority=True),
        Binding("ctrl+d", "details", "Details", priority=True),
        Binding("ctrl+z", "undo", "Undo", priority=True),
        Binding("pageup", "page_transcript(-1)", "Scroll up", show=False),
        Binding("pagedown", "page_transcript(1)", "Scroll down", show=False),
        Binding("end", "follow", "Follow", show=False, priority=True),
    ]

    def __init__(self, session: Session, *, on_event: EventHook | None = None, on_undo: UndoHook | None = None,
                 blink: bool = True, tune_gc: bool = False) -> None:
        super().__init__()
        crop_repaints_to_rows(self)
        self._tune_gc = tune_gc
        self.session = session
        self._on_event = on_event
        self._on_undo = on_undo
        self._blink = blink
        self.running = False
        """True from sending a command until its turn ends (committed, failed or cancelled)."""
        self._messages: dict[int, TurnMessage] = {}
        """Turn number -> its message, so finding it never walks the DOM."""
        self._archived: dict[int, ArchivedTurns] = {}
        self._last_block: ArchivedTurns | None = None
        self._hook_error = ""
        """The last error the event hook reported (each distinct one is shown once)."""
        """Turn number -> the block it was folded into."""
        self._committed: list[int] = []
        """Turn numbers committed in this screen, newest last (what undo takes back)."""
        self.ended = False

    # -- shortcuts to the parts of the screen

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def command_input(self) -> CommandInput:
        return self.query_one(CommandInput)

    @property
    def side_panel(self) -> SidePanel:
        return self.query_one(SidePanel)

    def message(self, turn: int) -> TurnMessage | None:
        """The message of a turn, if it is on screen (a dict lookup: this runs for every streamed chunk)."""
        return self._messages.get(turn)

    def latest_message(self) -> TurnMessage | None:
        """The newest turn's message."""
        return self._messages[max(self._messages)] if self._messages else None

    def compose(self) -> ComposeResult:
        pack = self.session.pack
        yield from game_layout(pack.title, pack.intro, SidePanel(pack, self.session.state, id="side-panel"),
                               blink=self._blink)

    def on_mount(self) -> None:
        self.title = safe_text(self.session.pack.title)
        self.sub_title = narrator_label(self.session.narrator)
        self.command_input.focus()
        self._show_history()
        if self._tune_gc:
            self.call_after_refresh(_freeze_garbage_collector)

    def _show_history(self) -> None:
        """A resumed story shows its committed turns (folded into one block) under the intro."""
        history = self.session.history
        if not history:
            return
        count = len(history)
        # The save's turn numbers are not in the history; negative ids keep them apart from new turns.
        records = [TurnRecord(i - count, exchange.player_input, exchange.turn.narrative, "committed", "")
                   for i, exchange in enumerate(history)]
        block = self._last_block = ArchivedTurns(records)
        self.transcript.mount(block)
        for record in records:
            self._archived[record.turn] = block
            self._committed.append(record.turn)

    # -- sending commands and retrying

    @on(Input.Submitted, "#command")
    def _send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.running:
            self.command_input.say_busy()
            return
        event.input.clear()
        self._start(self.session.play(text))

    def _start(self, events: AsyncIterator[Event]) -> None:
        self.running = True
        self.refresh_bindings()
        self.transcript.follow()
        self._run_turn(events)

    @work(exclusive=True, group="turn")
    async def _run_turn(self, events: AsyncIterator[Event]) -> None:
        """Consume one turn's events: hand each to `on_event`, then render it."""
        try:
            async for event in events:
                await self.deliver(event)
            await self.archive_old_turns()
        except Exception as exc:  # an engine bug must not take the player's story with it
            self.log.error("turn failed with an exception", exc)
            self.notify(safe_text(f"The turn stopped unexpectedly: {exc}. Nothing was committed by it; the story "
                                  "goes on from the last committed turn."),
                        title="Error", severity="error", timeout=15, markup=False)
        finally:
            self.running = False
            self.command_input.say_busy(False)
            self._update_retry_offer()
            self.refresh_bindings()

    async def archive_old_turns(self) -> None:
        """Fold the oldest finished turns into a block once more than `KEEP_LIVE` are live.

        Only while the player follows the newest text, and never past a turn that can
        still be retried (so the order on screen never changes). The block looks the
        same as the messages it replaces, so nothing on screen moves.
        """
        if not self.transcript.following:
            return
        pending = self.session.pending.turn if self.session.pending is not None else None
        live = sorted(self._messages)
        batch: list[TurnMessage] = []
        for turn in live[:max(0, len(live) - KEEP_LIVE)]:
            if turn == pending:
                break
            batch.append(self._messages[turn])
        if not batch:
            return
        with self.app.batch_update():
            start = 0
            while start < len(batch):
                block = self._last_block
                room = BLOCK_TURNS - len(block.records) if block is not None else 0
                chunk = batch[start:start + (room or BLOCK_TURNS)]
                records = [message.record() for message in chunk]
                if room and block is not None:
                    block.extend(records)
                else:
                    block = self._last_block = ArchivedTurns(records)
                    await self.transcript.mount(block, before=chunk[0])
                for message in chunk:
                    del self._messages[message.turn]
                    self._archived[message.turn] = block
                start += len(chunk)
            await self.transcript.remove_children(batch)
        if self._tune_gc and self._last_block is not None and len(self._last_block.records) == BLOCK_TURNS:
            _freeze_garbage_collector()

    async def deliver(self, event: Event) -> None:
        """Give an event to the hook (the journal), then render it."""
        if self._on_event is not None:
            try:
                result = self._on_event(event)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                self._hook_failed(exc)
        await self.render_event(event)

    def _hook_failed(self, exc: Exception) -> None:
        """The journal (or another hook) could not take an event: say so once, keep playing in memory."""
        message = str(exc) or type(exc).__name__
        if message != self._hook_error:
            self._hook_error = message
            self.notify(safe_text(f"{message}\nThe game goes on, but turns from now on may not be saved."),
                        title="Could not save", severity="error", timeout=15, markup=False)

    async def render_event(self, event: Event) -> None:
        """Show one engine event."""
        if isinstance(event, TurnStarted):
            message = self.message(event.turn)
            if message is None:
                with self.app.batch_update():
                    message = TurnMessage(event.turn, event.player_input, reserve=self._release_reserve())
                    self._messages[event.turn] = message
                    await self.transcript.mount(message)
            message.show(event)
            return
        if isinstance(event, TurnUndone):
            self._show_undo(event)
            return
        if isinstance(event, StoryEnded):
            self.ended = True
            with self.app.batch_update():
                ending = StoryText(f"The end: {event.title}", event.text, classes="-ending")
                ending.styles.min_height = self._release_reserve()
                await self.transcript.mount(ending)
            return
        message = self.message(event.turn)
        if message is not None:
            message.show(event)
        if isinstance(event, TurnCommitted):
            self._committed.append(event.turn)
            self.side_panel.show_state(event.state)
            self.command_input.suggest(event.suggestions)

    def _release_reserve(self) -> int:
        """The blank rows at the foot of the newest message, given back for what is mounted below it.

        The transcript is anchored to the bottom: what is mounted next must take these rows in the
        same frame (call this inside `batch_update`), or every line above would move down.
        """
        latest = self.latest_message()
        return latest.release_reserve() if latest is not None else 0

    def _update_retry_offer(self) -> None:
        """Only the session's pending turn offers a retry; older failures stop offering it."""
        pending = self.session.pending
        for message in list(self._messages.values()):
            can = pending is not None and message.turn == pending.turn and not self.running
            if message.outcome in ("failed", "cancelled") and message.can_retry != can:
                message.offer_retry(can)

    # -- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.running
        if action == "retry":
            return not self.running and self.session.pending is not None
        if action == "details":
            latest = self.latest_message()
            return latest is not None and latest.has_details
        if action == "undo":
            return not self.running and bool(self._committed)
        if action == "follow":  # otherwise End goes on to the input line (the end of what is typed)
            return not self.transcript.following
        return True

    def action_page_transcript(self, direction: int) -> None:
        """Page up / page down scroll the story while the input keeps focus (typing still types)."""
        self.transcript.page(direction)

    def action_follow(self) -> None:
        """End, while the story is scrolled up: back to the newest text (as the follow hint says)."""
        self.transcript.follow()

    def action_cancel(self) -> None:
        """Esc: cancel the turn in flight (the engine then reports turn_cancelled)."""
        if self.running:
            self.session.cancel()

    def action_retry(self) -> None:
        if self.running or self.session.pending is None:
            return
        self._start(self.session.retry())

    @on(TurnMessage.RetryRequested)
    def _retry_message(self, event: TurnMessage.RetryRequested) -> None:
        pending = self.session.pending
        if pending is not None and pending.turn == event.message.turn:
            self.action_retry()
        self.command_input.focus()

    @on(TurnMessage.TypedAway)
    def _typed_away(self, event: TurnMessage.TypedAway) -> None:
        field = self.command_input
        field.focus()
        field.insert_text_at_cursor(event.character)

    def action_details(self) -> None:
        latest = self.latest_message()
        if latest is not None and latest.has_details:
            self._open_details(latest)

    @on(TurnMessage.DetailsRequested)
    def _details_message(self, event: TurnMessage.DetailsRequested) -> None:
        self._open_details(event.message)

    def _open_details(self, message: TurnMessage) -> None:
        self.app.push_screen(IssueDetailsScreen(message.turn, message.player_input, message.events))

    @on(ArchivedTurns.DetailsRequested)
    def _folded_details(self, event: ArchivedTurns.DetailsRequested) -> None:
        """A turn folded into a block keeps its details: a click on it shows them."""
        self.show_details_of(event.record)

    def folded_with_details(self) -> list[TurnRecord]:
        """Folded turns that had issues, newest first (the palette offers their details)."""
        blocks = dict.fromkeys(self._archived.values())
        return sorted((r for block in blocks for r in block.records if r.details), key=lambda r: -r.turn)

    def show_details_of(self, record: TurnRecord) -> None:
        """Open the details of a folded turn."""
        self.app.push_screen(IssueDetailsScreen(record.turn, record.player_input, list(record.details)))

    def action_undo(self) -> None:
        """ctrl+z: take back the last committed turn (through the journal when there is one)."""
        if self.running:
            self.notify("Wait for the turn to finish, or press Esc to cancel it.", severity="warning")
            return
        if self._on_undo is not None:
            undone = self._on_undo()
        else:
            undone = self.session.undo()
            if undone is not None and self._on_event is not None:
                result = self._on_event(undone)
                if inspect.isawaitable(result):
                    self.run_worker(result)  # type: ignore[arg-type]
        if undone is None:
            self.notify("There is no committed turn to undo.")
            return
        self._show_undo(undone)

    def _show_undo(self, event: TurnUndone) -> None:
        if self._committed:
            turn = self._committed.pop()
            message = self.message(turn)
            if message is not None:
                message.mark_undone()
            elif turn in self._archived:
                self._archived[turn].set_outcome(turn, "undone", "undone · this turn no longer counts")
        self.side_panel.show_state(event.state)
        self.command_input.suggest(())  # the undone turn's suggestions no longer apply
        self.ended = False
        self._update_retry_offer()
        self.refresh_bindings()
        self.notify("The last turn was undone.", title="Undo")

    async def restart(self, session: Session) -> None:
        """Play a fresh session in this screen: the transcript starts again from the intro."""
        self.workers.cancel_group(self, "turn")
        self.session = session
        self.running = False
        self._messages.clear()
        self._archived.clear()
        self._last_block = None
        self._committed.clear()
        self.ended = False
        transcript = self.transcript
        with self.app.batch_update():
            await transcript.remove_children([w for w in transcript.children if not isinstance(w, FollowHint)])
            await transcript.mount(StoryText(session.pack.title, session.pack.intro, id="intro"))
            self._show_history()
        self.side_panel.show_story(session.pack, session.state)
        self.title = safe_text(session.pack.title)
        self.sub_title = narrator_label(session.narrator)  # an opened save may be on another narrator
        self.command_input.suggest(())
        self.command_input.focus()
        self.refresh_bindings()

    def committed_exchanges(self) -> list[tuple[str, str]]:
        """The story so far, as (player input, prose) of each committed turn (what an export writes)."""
        records = {r.turn: r for block in set(self._archived.values()) for r in block.records}
        records.update({turn: message.record() for turn, message in self._messages.items()})
        return [(records[turn].player_input, records[turn].prose) for turn in sorted(records)
                if records[turn].outcome == "committed"]


def _freeze_garbage_collector() -> None:
    """Collect what is garbage now, then exempt everything alive from later collections.

    At a thousand turns, generation-2 collections rescanning the long-lived widgets
    were about half the CPU time of streaming (see the streaming notes).
    """
    gc.collect()
    gc.freeze()
