"""The story as the player reads it: the intro, then one message per turn, drawn from the engine's events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from storyloom.engine.events import Event, StoryEnded, TurnCommitted, TurnStarted, TurnUndone
from storyloom.tui.widgets.archived_turns import ArchivedTurns, TurnRecord
from storyloom.tui.widgets.story_text import StoryText
from storyloom.tui.widgets.transcript import FollowHint, Transcript
from storyloom.tui.widgets.turn_message import TurnMessage

if TYPE_CHECKING:
    from storyloom.engine.narration import Exchange

KEEP_LIVE = 12
"""Turns kept as live messages (focusable, with details); older ones are folded into blocks."""
BLOCK_TURNS = 50
"""Turns per `ArchivedTurns` block: a block is re-wrapped when a turn joins it, so keep it modest."""


class StoryView(Transcript):
    """The transcript of a story, rendering each engine event; the game and the replay screens both show one.

    It only renders: what the player may do (send, retry, undo) is the screen's business. It keeps
    a message per live turn, folds old turns into `ArchivedTurns` blocks, and hands the newest
    message's streaming reserve to whatever is shown below it, so nothing on screen moves.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._messages: dict[int, TurnMessage] = {}
        """Turn number -> its message, so finding it never walks the DOM."""
        self._archived: dict[int, ArchivedTurns] = {}
        """Turn number -> the block it was folded into."""
        self._last_block: ArchivedTurns | None = None
        self._committed: list[int] = []
        """Turn numbers shown as committed, newest last (what an undo takes back)."""
        self._earlier: list[TurnRecord] = []
        """A resumed story's older turns not folded in yet, oldest first (see `show_history`)."""
        self._first_block: ArchivedTurns | None = None
        """The block of a resumed story's oldest turns shown so far (the next older block goes above it)."""

    # -- what is shown

    def message(self, turn: int) -> TurnMessage | None:
        """The message of a turn, if it is on screen (a dict lookup: this runs for every streamed chunk)."""
        return self._messages.get(turn)

    def latest_message(self) -> TurnMessage | None:
        """The newest turn's message."""
        return self._messages[max(self._messages)] if self._messages else None

    @property
    def has_committed(self) -> bool:
        """True while a turn shown as committed can still be undone."""
        return bool(self._committed)

    def committed_exchanges(self) -> list[tuple[str, str]]:
        """The story so far, as (player input, prose) of each committed turn (what an export writes)."""
        records = {r.turn: r for r in self._earlier}
        records.update((r.turn, r) for block in set(self._archived.values()) for r in block.records)
        records.update({turn: message.record() for turn, message in self._messages.items()})
        return [
            (records[turn].player_input, records[turn].prose)
            for turn in sorted(records)
            if records[turn].outcome == "committed"
        ]

    def folded_with_details(self) -> list[TurnRecord]:
        """Folded turns that had issues, newest first (the palette offers their details)."""
        blocks = dict.fromkeys(self._archived.values())
        return sorted((r for block in blocks for r in block.records if r.details), key=lambda r: -r.turn)

    # -- rendering events

    def show_history(self, history: Sequence[Exchange]) -> None:
        """A resumed story shows its committed turns (folded into blocks) under the intro: the newest first.

        Folding wraps every turn's prose, which for thousands of turns takes seconds; so the newest
        `BLOCK_TURNS` are shown at once and the older ones are folded in above them a block at a
        time behind the first frame (`_show_earlier`), while the view follows the newest text (it
        is anchored to the bottom, so nothing the player is reading moves).
        """
        if not history:
            return
        count = len(history)
        # The save's turn numbers are not in the history; negative ids keep them apart from new turns.
        records = [
            TurnRecord(i - count, exchange.player_input, exchange.turn.narrative, "committed", "")
            for i, exchange in enumerate(history)
        ]
        block = self._last_block = ArchivedTurns(records[-BLOCK_TURNS:])
        self.mount(block)
        self._first_block = block
        for record in block.records:
            self._archived[record.turn] = block
        self._earlier = records[:-BLOCK_TURNS]
        self._committed.extend(record.turn for record in records)
        if self._earlier:
            self.call_after_refresh(self._show_earlier)

    async def _show_earlier(self) -> None:
        """Fold the next older block of a resumed story in above the ones shown (then the next, after a frame)."""
        if not self._earlier or self._first_block is None or not self._first_block.is_attached:
            return
        if not self.following:  # the player reads back: nothing is added above them now, but when they follow again
            self.set_timer(0.25, self._show_earlier)
            return
        records, self._earlier = self._earlier[-BLOCK_TURNS:], self._earlier[:-BLOCK_TURNS]
        block = ArchivedTurns(records)
        await self.mount(block, before=self._first_block)
        self._first_block = block
        for record in records:
            self._archived[record.turn] = block
        if self._earlier:
            self.call_after_refresh(self._show_earlier)

    async def show(self, event: Event) -> None:
        """Render one engine event."""
        if isinstance(event, TurnStarted):
            message = self.message(event.turn)
            if message is None:
                # no await between giving the rows back and mounting what takes them: one layout sees both
                message = TurnMessage(event.turn, event.player_input, reserve=self.release_reserve())
                self._messages[event.turn] = message
                message.show(event)  # before it is mounted: its first frame already says "writing…"
                await self.mount(message)
                return
            message.show(event)
            return
        if isinstance(event, TurnUndone):
            self.show_undo()
            return
        if isinstance(event, StoryEnded):
            ending = StoryText(f"The end: {event.title}", event.text, classes="-ending")
            ending.styles.min_height = self.release_reserve()
            await self.mount(ending)
            return
        message = self.message(event.turn)
        if message is not None:
            message.show(event)
        if isinstance(event, TurnCommitted):
            self._committed.append(event.turn)

    def show_undo(self) -> None:
        """The newest committed turn was undone: it stays on screen, marked as no longer counting."""
        if not self._committed:
            return
        turn = self._committed.pop()
        message = self.message(turn)
        if message is not None:
            message.mark_undone()
        elif turn in self._archived:
            self._archived[turn].set_outcome(turn, "undone", "undone · this turn no longer counts")
        else:  # among a resumed story's turns not folded in yet
            self._earlier = [
                replace(r, outcome="undone", status="undone · this turn no longer counts") if r.turn == turn else r
                for r in self._earlier
            ]

    def offer_retry(self, turn: int | None) -> None:
        """Only `turn` (the pending turn, while the player may retry it) offers a retry; other failures stop."""
        for message in list(self._messages.values()):
            can = message.turn == turn
            if message.outcome in ("failed", "cancelled") and message.can_retry != can:
                message.offer_retry(can)

    def release_reserve(self) -> int:
        """The blank rows at the foot of the newest message, given back for what is mounted below it.

        The transcript is anchored to the bottom: what is mounted next must take these rows in the
        same layout, or every line above would move down. So call this and `mount` with no `await`
        in between (the new widget is registered at once), and give the new widget at least this
        height before its children are composed (`min-height`).
        """
        latest = self.latest_message()
        return latest.release_reserve() if latest is not None else 0

    async def fold_old_turns(self, pending: int | None) -> bool:
        """Fold the oldest finished turns into a block once more than `KEEP_LIVE` are live.

        Only while the player follows the newest text, and never past `pending` (a turn that can
        still be retried), so the order on screen never changes. The block looks the same as the
        messages it replaces, so nothing on screen moves. Returns True when turns were folded
        and the newest block is full (it will not change again).
        """
        if not self.following:
            return False
        live = sorted(self._messages)
        batch: list[TurnMessage] = []
        for turn in live[: max(0, len(live) - KEEP_LIVE)]:
            if turn == pending:
                break
            batch.append(self._messages[turn])
        if not batch:
            return False
        with self.app.batch_update():
            start = 0
            while start < len(batch):
                block = self._last_block
                room = BLOCK_TURNS - len(block.records) if block is not None else 0
                chunk = batch[start : start + (room or BLOCK_TURNS)]
                records = [message.record() for message in chunk]
                if room and block is not None:
                    block.extend(records)
                else:
                    block = self._last_block = ArchivedTurns(records)
                    await self.mount(block, before=chunk[0])
                for message in chunk:
                    del self._messages[message.turn]
                    self._archived[message.turn] = block
                start += len(chunk)
            await self.remove_children(batch)
        return self._last_block is not None and len(self._last_block.records) == BLOCK_TURNS

    async def start_again(self, title: str, intro: str, history: Sequence[Exchange] = ()) -> None:
        """Show another story (or the same one anew) from its intro, with its committed history."""
        self._messages.clear()
        self._archived.clear()
        self._last_block = self._first_block = None
        self._earlier = []
        self._committed.clear()
        with self.app.batch_update():
            await self.remove_children([w for w in self.children if not isinstance(w, FollowHint)])
            await self.mount(StoryText(title, intro, id="intro"))
            self.show_history(history)
