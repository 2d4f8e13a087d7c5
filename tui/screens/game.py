"""The game screen: the story view, the input line and the side panel, turning the player's keys into intents."""

from __future__ import annotations

import asyncio
import gc
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from textual import on, work
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input

from storyloom.engine.events import (
    AlternativeChosen,
    BranchStarted,
    BranchSwitched,
    Event,
    ProseDelta,
    StoryEnded,
    TurnCommitted,
    TurnUndone,
)
from storyloom.engine.lifecycle import BranchRefused
from storyloom.engine.safety import safe_text
from storyloom.tui.screens.new_branch import NewBranchScreen
from storyloom.tui.screens.story import StoryScreen
from storyloom.tui.screens.story_tree import StoryTreeScreen
from storyloom.tui.widgets.command_input import CommandInput
from storyloom.tui.widgets.turn_message import TurnMessage

if TYPE_CHECKING:
    from storyloom.saves.resume import PastTurn
    from storyloom.tui.session import PlaySession


class GameScreen(StoryScreen):
    """Plays a story: turns the player's keys into intents for the `PlaySession` (which records each
    event before this screen sees it), renders each event, never touches the state itself.

    Once the story reaches an ending it is over: the input plays no command (it says so, and
    what the player can do: undo the ending turn, or a new game, another save or an export
    from the palette), and suggests nothing.

    Args:
        play: the story being played (open, possibly resumed), and the save it is written to.
        past: a resumed story's turns as they were played (see `StoryScreen`).
        blink: blink the input cursor (off for snapshot tests).
        tune_gc: freeze the objects that live for the whole game (after start-up and after
            archiving turns) so Python's collector stops rescanning them; for the real app,
            not for test processes that start many apps.
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel turn"),
        Binding("ctrl+r", "retry", "Retry", priority=True),
        Binding("ctrl+d", "details", "Details", priority=True),
        Binding("ctrl+d", "any_details", show=False, priority=True),
        Binding("ctrl+z", "undo", "Undo", priority=True),
        Binding("ctrl+g", "regenerate", "Another version", priority=True),
        Binding("ctrl+b", "branch", "Branch from here", show=False, priority=True),
        Binding("ctrl+t", "story_tree", "Story tree", priority=True),
        Binding("f2", "story_tree_in_browser", "Story tree", priority=True),  # ctrl+t opens a browser's tab
        Binding("pageup", "page_transcript(-1)", "Scroll up", show=False),
        Binding("pagedown", "page_transcript(1)", "Scroll down", show=False),
        Binding("end", "follow", "Follow", show=False, priority=True),
    ]

    ENDING_NOTE = (
        "The story is over. ctrl+z takes back the last turn and the story goes on from there; "
        "ctrl+p starts a new game, opens another save or exports the story; ctrl+q quits."
    )
    SERVED_ENDING_NOTE = (
        "The story is over. ctrl+z takes back the last turn and the story goes on from there; "
        "ctrl+p exports the story; f10 quits, and a new tab starts a new story."
    )
    """In a browser tab (`storyloom serve`): no new game or other save in the tab, and f10 quits."""

    def __init__(
        self,
        play: PlaySession,
        past: Sequence[PastTurn] = (),
        *,
        blink: bool = True,
        tune_gc: bool = False,
    ) -> None:
        super().__init__(play, past)
        self._tune_gc = tune_gc
        self._blink = blink
        self._pasted: deque[str] = deque()
        """Commands of a multi-line paste still to play, each once the turn before has committed."""

    @property
    def command_input(self) -> CommandInput:
        return self.query_one(CommandInput)

    def bottom_line(self) -> Widget:
        return CommandInput(blink=self._blink, id="command")

    def on_mount(self) -> None:
        # StoryScreen.on_mount (run after this one) shows the history: offer what its messages can do after it
        self.call_later(self._update_retry_offer)
        self._offer_next()
        self.command_input.focus()
        if self.app.is_web:
            self._story_view.ending_note = self.SERVED_ENDING_NOTE
        if self._tune_gc:
            self.call_after_refresh(_freeze_garbage_collector)

    # -- sending commands and retrying

    @on(Input.Submitted, "#command")
    def _send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.running:
            self.command_input.say_busy()
            return
        if self.play.story.ending is not None:
            self.command_input.say_over()
            return
        event.input.clear()
        self._start(self.play.play(text))

    @on(CommandInput.Pasted)
    def _paste(self, event: CommandInput.Pasted) -> None:
        """A paste of several lines plays them one after another, as if each were typed and sent."""
        self._pasted.extend(event.lines)
        self._play_pasted()

    def _play_pasted(self) -> None:
        if self.running or not self._pasted:
            return
        if self.play.story.ending is not None or self.play.story.pending is not None:  # failed, cancelled or over
            self.command_input.say_not_played(len(self._pasted))
            self._pasted.clear()
            return
        self._start(self.play.play(self._pasted.popleft()))

    def _start(self, events: AsyncIterator[Event]) -> None:
        self.running = True
        self.hold_keys()  # the keys of a turn in flight show a frame after the command's echo
        if self._tune_gc:  # nor does a collection run before that frame (mounting makes objects by the thousand)
            gc.disable()
        self.transcript.follow()
        self._run_turn(events)

    @work(exclusive=True, group="turn")
    async def _run_turn(self, events: AsyncIterator[Event]) -> None:
        """Render one turn's events (each is in the save before it arrives here).

        The first event (the command's echo) is painted before the narrator is asked for anything:
        the engine's first steps (the request, the connection) would otherwise run before the frame
        that shows it. Then the footer shows the keys of a turn in flight.
        """
        try:
            async for event in events:
                await self.render_event(event)
                if self._keys_held:
                    await self._painted()
                    self._echo_painted()
                elif not isinstance(event, ProseDelta):
                    self.refresh_bindings()  # e.g. ctrl+d details, once the turn has an issue to show
            await self.archive_old_turns()
        except Exception as exc:  # an engine bug must not take the player's story with it
            self.log.error("turn failed with an exception", exc)
            self.notify(
                safe_text(
                    f"The turn stopped unexpectedly: {exc}. Nothing was committed by it; the story "
                    "goes on from the last committed turn."
                ),
                title="Error",
                severity="error",
                timeout=15,
                markup=False,
            )
        finally:
            self.running = False
            self._echo_painted()
            self.command_input.say_busy(False)
            self._update_retry_offer()
            self.refresh_bindings()
            self.call_later(self._play_pasted)

    def _echo_painted(self) -> None:
        """What waited for the command's echo to be painted goes on: the footer's keys, the collector."""
        self.release_keys()
        if self._tune_gc:
            gc.enable()

    async def _painted(self) -> None:
        """Return once the screen has painted what is on it now."""
        painted = asyncio.Event()
        self.call_after_refresh(painted.set)
        await painted.wait()

    async def archive_old_turns(self) -> None:
        """Fold the oldest finished turns into blocks, and tell the collector the full ones are here to stay."""
        if await self.fold_old_turns() and self._tune_gc:
            _freeze_garbage_collector()

    async def render_event(self, event: Event) -> None:
        await super().render_event(event)
        if isinstance(event, TurnCommitted | StoryEnded | AlternativeChosen | BranchStarted | BranchSwitched):
            self._offer_next()

    def _offer_next(self) -> None:
        """What the input line offers: the newest standing turn's suggestions, or, once the story has
        ended, what the player can do now (never a suggestion of the turn that ended it)."""
        field = self.command_input
        if self.play.story.ending is not None:
            field.story_over()
        else:
            history = self.play.story.history
            field.suggest(tuple(history[-1].turn.suggestions) if history else ())

    def _update_retry_offer(self) -> None:
        """Only the session's pending turn offers a retry; older failures stop offering it. Only the
        latest committed turn, before the next command, offers another version."""
        pending = self.play.story.pending
        self.transcript.offer_retry(pending.turn if pending is not None and not self.running else None)
        versions = self.play.story.versions
        for message in self.transcript.live_messages():
            message.offer_regenerate(
                versions is not None and message.turn == versions.turn and self.play.story.can_regenerate
            )

    # -- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.running
        if action == "retry":
            return not self.running and self.play.story.pending is not None and self.play.story.ending is None
        if action == "undo":
            return not self.running and self.transcript.has_committed
        if action == "regenerate":
            return not self.running and (self.play.story.can_regenerate or self._fixed(self.focused) is not None)
        if action in ("story_tree", "story_tree_in_browser"):  # once there is a second branch (always in the palette)
            return self.play.story.ledger.branch_count > 1 and self.app.is_web == action.endswith("_in_browser")
        return super().check_action(action, parameters)

    def action_cancel(self) -> None:
        """Esc: cancel the turn in flight (the engine then reports turn_cancelled)."""
        if self.running:
            self.play.cancel()

    def action_retry(self) -> None:
        if self.running or self.play.story.pending is None or self.play.story.ending is not None:
            return
        self._start(self.play.retry())

    @on(TurnMessage.RetryRequested)
    def _retry_message(self, event: TurnMessage.RetryRequested) -> None:
        pending = self.play.story.pending
        if pending is not None and pending.turn == event.message.turn:
            self.action_retry()
        self.command_input.focus()

    def action_regenerate(self) -> None:
        """ctrl+g: another version of the latest committed turn, written into the same message; on a
        focused earlier turn, the same from that turn on a new branch (asked first)."""
        if (earlier := self._fixed(self.focused)) is not None:
            self._ask_to_branch(earlier, 0)
            return
        if self.running or not self.play.story.can_regenerate:
            return
        self._start(self.play.regenerate())

    def _fixed(self, widget: object) -> TurnMessage | None:
        """`widget` when it is a committed turn the next command fixed: another version of it continues
        the story from it on a new branch (the turns after it belonged to the version shown). Not the
        turn that ended the story (undo takes that back), nor while a turn is in flight."""
        if self.running or not isinstance(widget, TurnMessage) or widget.outcome != "committed":
            return None
        versions, ending = self.play.story.versions, self.play.story.ending
        latest = versions is not None and versions.turn == widget.turn
        return None if latest or (ending is not None and ending.turn == widget.turn) else widget

    def _ask_to_branch(self, message: TurnMessage, version: int) -> None:
        """Say what another version of an earlier turn does, and do it if the player goes on."""
        turn = message.turn
        later = [t.turn for t in self.play.story.ledger.turns() if t.turn > turn]

        async def answered(go: bool | None) -> None:
            if go:
                await self._another_version_on_a_branch(turn, version)

        self.app.push_screen(NewBranchScreen(turn, version, later, self.play.story.ledger.branch), answered)

    async def _another_version_on_a_branch(self, turn: int, version: int) -> None:
        """Continue from `turn` on a new branch, then show its `version` (0: ask the narrator for another)."""
        if self.running:
            self.notify("Wait for the turn to finish, or press Esc to cancel it.", severity="warning")
            return
        try:
            event = self.play.branch(turn)
        except BranchRefused as refused:
            self.notify(f"{str(refused)[0].upper()}{str(refused)[1:]}.", title="Branch", markup=False)
            return
        chosen = self.play.choose(version) if version else None  # the path is drawn once, with it
        await self._show_branch(event)
        if chosen is not None:
            await self.render_event(chosen)
        elif not version and self.play.story.can_regenerate:
            self._start(self.play.regenerate())

    @on(TurnMessage.RegenerateRequested)
    def _regenerate_message(self, event: TurnMessage.RegenerateRequested) -> None:
        versions = self.play.story.versions
        if versions is not None and versions.turn == event.message.turn:
            self.action_regenerate()

    @on(TurnMessage.VersionRequested)
    async def _choose_version(self, event: TurnMessage.VersionRequested) -> None:
        """Browse the latest turn's versions: the engine swaps state and history, the journal records
        the choice, and the message and side panel show it. The narrator is not asked. On an earlier
        turn, the same from that turn on a new branch (asked first)."""
        versions = self.play.story.versions
        if (earlier := self._fixed(event.message)) is not None:
            self._ask_to_branch(earlier, event.version)
            return
        if self.running or versions is None or versions.turn != event.message.turn:
            return
        chosen = self.play.choose(event.version)
        if chosen is not None:
            await self.render_event(chosen)

    async def action_branch(self) -> None:
        """ctrl+b on a focused committed turn: the story continues from that turn on a new branch; the
        transcript shows the path up to it, the side panel the world after it. The old path is kept."""
        focused = self.focused
        if self.running:
            self.notify("Wait for the turn to finish, or press Esc to cancel it.", severity="warning")
            return
        if not isinstance(focused, TurnMessage) or focused.outcome != "committed":
            self.notify("Focus a committed turn first (tab or a click), then ctrl+b continues from it.")
            return
        try:
            event = self.play.branch(focused.turn)
        except BranchRefused as refused:
            self.notify(f"{str(refused)[0].upper()}{str(refused)[1:]}.", title="Branch", markup=False)
            return
        await self._show_branch(event)  # no toast: one at 80x24 covers the input line; ctrl+t now shows

    def action_story_tree(self) -> None:
        """ctrl+t: every branch of the story; choosing one plays it where it was left."""
        branches = self.play.story.ledger.branches()
        self.app.push_screen(StoryTreeScreen(branches, self.play.story.branch_endings()), self._switch_branch)

    def action_story_tree_in_browser(self) -> None:
        """f2, served to a browser (which keeps ctrl+t): the story tree."""
        self.action_story_tree()

    async def _switch_branch(self, branch: int | None) -> None:
        if branch is None or branch == self.play.story.ledger.branch:
            return
        if self.running:
            self.notify("Wait for the turn to finish, or press Esc to cancel it.", severity="warning")
            return
        try:
            event = self.play.switch(branch)
        except BranchRefused as refused:
            self.notify(str(refused), title="Story tree", markup=False)
            return
        await self._show_branch(event)

    async def _show_branch(self, event: BranchStarted | BranchSwitched) -> None:
        """Show a (recorded) branch or switch: the branch's path and world in place of the old one."""
        self._pasted.clear()
        await self.render_event(event)
        self.command_input.say_busy(False)
        self._update_retry_offer()
        self.command_input.focus()

    def keep_typing(self) -> None:
        """A printable key arrived: it goes to the input line, whatever has focus (the app calls this
        before it hands the key on, so the focus has moved by then and no key is taken elsewhere)."""
        field = self.command_input
        if self.focused is not field:
            self.set_focus(field, scroll_visible=False)

    def action_undo(self) -> None:
        """ctrl+z: take back the last committed turn (recorded in the save before it shows)."""
        if self.running:
            self.notify("Wait for the turn to finish, or press Esc to cancel it.", severity="warning")
            return
        why = self.play.story.no_undo
        undone = self.play.undo()
        if undone is None:
            self.notify(f"{why[0].upper()}{why[1:]}.")
            return
        self.show_undo(undone)

    def show_undo(self, event: TurnUndone) -> None:
        self._offer_next()  # the undone turn's suggestions (or its ending) no longer apply: the turn before's do
        self.command_input.say_busy(False)
        super().show_undo(event)
        versions = self.play.story.versions  # the turn before is the latest again: its versions come back
        for message in self.transcript.live_messages():
            if versions is not None and message.turn == versions.turn and message.fixed:
                message.open_versions()
        self._update_retry_offer()

    def say_undone(self) -> None:
        """Nothing more: the undone turn's own status line says *undone* where the player is reading,
        and a toast saying it again covered the input line at 80x24."""

    async def restart(self, past: Sequence[PastTurn] = ()) -> None:
        """Play a fresh session (or an opened save) in this screen: the transcript starts again from the intro."""
        self.workers.cancel_group(self, "turn")
        self._echo_painted()  # a turn cancelled before its echo was painted
        self._pasted.clear()
        await super().restart(past)
        self._offer_next()
        self.command_input.say_busy(False)
        self._update_retry_offer()
        self.command_input.focus()


def _freeze_garbage_collector() -> None:
    """Collect what is garbage now, then exempt everything alive from later collections.

    At a thousand turns, generation-2 collections rescanning the long-lived widgets
    were about half the CPU time of streaming (see the streaming notes).
    """
    gc.collect()
    gc.freeze()
