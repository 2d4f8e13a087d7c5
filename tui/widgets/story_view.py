"""The story as the player reads it: the intro, then one message per turn, drawn from the engine's events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from storyloom.engine.events import (
    Event,
    StoryEnded,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
)
from storyloom.tui.widgets.archived_turns import Archive, ArchivedTurns, TurnRecord
from storyloom.tui.widgets.status_row import fixed_versions
from storyloom.tui.widgets.story_text import EarlierTurns, EndingText, StoryText
from storyloom.tui.widgets.transcript import FollowHint, Transcript
from storyloom.tui.widgets.turn_message import TurnMessage, details_events

if TYPE_CHECKING:
    from textual.widget import AwaitMount

    from storyloom.engine.lifecycle import Versions
    from storyloom.engine.narration import Exchange
    from storyloom.saves.resume import PastTurn

KEEP_LIVE = 12
"""Turns kept as live messages (focusable, with details); older ones are folded into blocks."""
BLOCK_TURNS = 50
"""Turns per `ArchivedTurns` block: a block is re-wrapped when a turn joins it, so keep it modest."""
SETTLING = (TurnCommitted, TurnFailed, TurnCancelled)
"""Events that show what a turn (or another version of it) settled on: its prose stays as it is now
(a correction's `prose_replaced` comes just before its commit, in the same frame)."""


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
        self.ending_note = "The story is over."
        """What the line under an ending says (the screen showing the story sets it)."""
        self._ending: tuple[EndingText, int | None] | None = None
        """The ending on screen, and the committed turn that reached it (an undo of that turn takes it back)."""
        self._earlier: list[TurnRecord] = []
        """A resumed story's older turns not folded in yet, oldest first (see `show_history`)."""
        self._first_block: ArchivedTurns | None = None
        """The block of a resumed story's oldest turns shown so far (the next older block goes above it)."""
        self._blocks: Archive | None = None
        """The container of every block, above the live messages (made when the first turn is folded)."""

    # -- what is shown

    def message(self, turn: int) -> TurnMessage | None:
        """The message of a turn, if it is on screen (a dict lookup: this runs for every streamed chunk)."""
        return self._messages.get(turn)

    def live_messages(self) -> list[TurnMessage]:
        """The turns shown as messages (not folded), oldest first."""
        return [self._messages[turn] for turn in sorted(self._messages)]

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

    def latest_folded(self) -> TurnRecord | None:
        """The newest turn, when it is folded (a resumed story before its first new turn), else None."""
        if self._messages or not self._archived:
            return None
        newest = max(self._archived)
        return next(r for r in self._archived[newest].records if r.turn == newest)

    # -- rendering events

    def show_history(
        self,
        history: Sequence[Exchange],
        past: Sequence[PastTurn] = (),
        versions: Versions | None = None,
        *,
        earlier: int = 0,
    ) -> None:
        """A resumed story shows its committed turns (folded into one block) under the intro.

        `past` (from the save, in the history's order) gives each turn its number and, for a turn
        that had issues, its details; without it, negative numbers keep the turns apart from new ones.
        The latest turn, while its versions may still change, is a live message instead: the
        player browses them or asks for another, as before the story was closed. `earlier` turns
        stand before `history` (a long story's history keeps only the latest): a line above says so.

        Folding wraps every turn's prose, which for thousands of turns takes seconds; so the newest
        `BLOCK_TURNS` are shown at once and the older ones are folded in above them a block at a
        time behind the first frame (`_show_earlier`), while the view follows the newest text (it
        is anchored to the bottom, so nothing the player is reading moves).
        """
        if not history:
            return
        if earlier:
            self.mount(EarlierTurns(earlier))
        count = len(history)
        known = len(past) == count
        folded = count - 1 if versions is not None else count
        records = [
            TurnRecord(
                past[i].turn if known else i - count,
                exchange.player_input,
                exchange.turn.narrative,
                "committed",
                _fixed(past[i]) if known else "",
                details=details_events(past[i].events) if known and past[i].events else (),
                apart=i > 0 and known and bool(past[i - 1].versions),
            )
            for i, exchange in enumerate(history[:folded])
        ]
        if records:
            block = self._last_block = ArchivedTurns(records[-BLOCK_TURNS:])
            self._archive().mount(block)
            self._first_block = block
            for record in block.records:
                self._archived[record.turn] = block
            self._earlier = records[:-BLOCK_TURNS]
            self._committed.extend(record.turn for record in records)
            if self._earlier:
                self.call_after_refresh(self._show_earlier)
        if versions is not None:
            message = TurnMessage.restored(
                versions.turn,
                versions.player_input,
                [version.exchange.turn.narrative for version in versions.alternatives],
                versions.chosen,
                events=past[-1].events if known else (),
                apart=bool(records and records[-1].status),
            )
            self._messages[versions.turn] = message
            self.mount(message)
            self._committed.append(versions.turn)

    async def _show_earlier(self) -> None:
        """Fold the next older block of a resumed story in above the ones shown (then the next, after a frame)."""
        if not self._earlier or self._first_block is None or not self._first_block.is_attached:
            return
        if not self.following:  # the player reads back: nothing is added above them now, but when they follow again
            self.set_timer(0.25, self._show_earlier)
            return
        records, self._earlier = self._earlier[-BLOCK_TURNS:], self._earlier[:-BLOCK_TURNS]
        block = ArchivedTurns(records)
        await self._archive().mount(block, before=self._first_block)
        self._first_block = block
        for record in records:
            self._archived[record.turn] = block
        if self._earlier:
            self.call_after_refresh(self._show_earlier)

    def _archive(self) -> Archive:
        """The container of the folded blocks, mounted above the live messages the first time a turn is folded."""
        if self._blocks is None:
            live = self.live_messages()
            self._blocks = Archive()
            self.mount(self._blocks, before=live[0] if live else None)
        return self._blocks

    async def show(self, event: Event) -> None:
        """Render one engine event."""
        if isinstance(event, TurnStarted):
            message = self.message(event.turn)
            if message is None:
                latest = self.latest_message()
                if latest is not None:
                    latest.fix_version()  # a new command: the version showing above counts for good
                # no await between giving the rows back and mounting what takes them: one layout sees both
                message = TurnMessage(
                    event.turn, event.player_input, reserve=self.release_reserve(), apart=self._ends_in_words()
                )
                self._messages[event.turn] = message
                message.show(event)  # before it is mounted
                with self.app.batch_update():  # no frame shows the message before its command row
                    await self.mount(message)
                return
            message.show(event)
            return
        if isinstance(event, TurnUndone):
            self.show_undo()
            return
        if isinstance(event, StoryEnded):
            latest = self.latest_message()
            if latest is not None:
                latest.fix_version()  # the story is over: the version that reached the end counts
            with self.app.batch_update():  # no frame shows the ending's rows before its text
                await self.show_ending(event.title, event.text)
            return
        message = self.message(event.turn)
        if message is not None:
            swaps = message.prose.swaps
            message.show(event)
            if message.writing_version and message.prose.swaps != swaps:
                self._show_top_of(message)  # another version, with other words than those shown
            if isinstance(event, SETTLING) and message is self.latest_message() and self.following:
                message.close_gap()
        if isinstance(event, TurnCommitted) and event.turn not in self._committed[-1:]:
            self._committed.append(event.turn)

    def _show_top_of(self, message: TurnMessage) -> None:
        """Another version with other words is written from the top of its message: if that is above
        the view, bring it to the view's top in one step (the one move ctrl+g makes, when the words
        differ), or the new prose would stream where the player cannot see it. From there the view
        stays put, as after a page up."""
        top = message.virtual_region.y
        if top < self.scroll_y:
            self.scroll_to(y=top, animate=False, immediate=True)

    def show_ending(self, title: str, text: str, commit: int = -1) -> AwaitMount:
        """The story reached an ending (just now, or in a resumed save): it follows the newest turn.

        `commit` is the index, among the turns shown as committed, of the one that reached it (the
        newest, unless a save was played on past its ending before storyloom stopped there): its undo
        takes the ending back.
        """
        ending = EndingText(title, text, self.ending_note)
        ending.set_class(self._ends_in_words(), "-apart")
        self._ending = (ending, self._committed[commit] if self._committed else None)
        ending.styles.min_height = self.release_reserve()  # no await before the mount: see `release_reserve`
        return self.mount(ending)

    def show_undo(self) -> None:
        """The newest committed turn was undone: it stays on screen, marked as no longer counting
        (and so does an ending it reached)."""
        if not self._committed:
            return
        turn = self._committed.pop()
        if self._ending is not None and self._ending[1] == turn:
            self._ending[0].mark_undone()
            self._ending = None
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

    def _ends_in_words(self) -> bool:
        """Whether the newest message's status row says something: then what comes next stands a
        blank row below it (an empty status row is itself the blank row between turns)."""
        latest = self.latest_message()
        if latest is not None:
            return bool(latest.status.plain_text)
        folded = self.latest_folded()
        return folded is not None and bool(folded.status)

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
                    await self._archive().mount(block)
                for message in chunk:
                    del self._messages[message.turn]
                    self._archived[message.turn] = block
                start += len(chunk)
            await self.remove_children(batch)
        return self._last_block is not None and len(self._last_block.records) == BLOCK_TURNS

    async def start_again(
        self,
        title: str,
        intro: str,
        history: Sequence[Exchange] = (),
        past: Sequence[PastTurn] = (),
        versions: Versions | None = None,
        *,
        earlier: int = 0,
    ) -> None:
        """Show another story (or the same one anew) from its intro, with its committed history."""
        self._messages.clear()
        self._archived.clear()
        self._last_block = self._first_block = self._blocks = None
        self._earlier = []
        self._committed.clear()
        self._ending = None
        with self.app.batch_update():
            await self.remove_children([w for w in self.children if not isinstance(w, FollowHint)])
            await self.mount(StoryText(title, intro, id="intro"))
            self.show_history(history, past, versions, earlier=earlier)


def _fixed(turn: PastTurn) -> str:
    """A resumed turn's status once the next command fixed its versions ("" when it had one)."""
    return fixed_versions(*turn.versions) if turn.versions else ""
