"""What the game and replay screens share: the layout around a `StoryView`, the side panel, and reading keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.widget import AwaitMount, Widget

from storyloom.engine.committed import Versions
from storyloom.engine.events import (
    AlternativeChosen,
    BranchStarted,
    BranchSwitched,
    Event,
    TurnCommitted,
    TurnUndone,
)
from storyloom.engine.limits import HISTORY_TURNS, UNDO_TURNS
from storyloom.engine.safety import safe_text
from storyloom.tui._textual_internals import crop_repaints_to_rows
from storyloom.tui.screens.footer import fit_footer
from storyloom.tui.screens.issue_details import IssueDetailsScreen
from storyloom.tui.screens.opening import game_layout
from storyloom.tui.widgets.archived_turns import ArchivedTurns, TurnRecord
from storyloom.tui.widgets.side_panel import SidePanel, world_lines
from storyloom.tui.widgets.story_view import StoryView
from storyloom.tui.widgets.turn_message import TurnMessage, details_events

if TYPE_CHECKING:
    from textual.css.query import QueryType

    from storyloom.saves.resume import PastTurn
    from storyloom.tui.session import PlaySession


def narrator_label(narrator: object) -> str:
    """Who is telling the story, for the header: "anthropic narrator · claude-sonnet-5-5"."""
    name, model = str(getattr(narrator, "name", "") or ""), str(getattr(narrator, "model", "") or "")
    label = f"{name} narrator" if name else "narrator"
    return safe_text(f"{label} · {model}" if model else label)


class StoryScreen(Screen[None]):
    """A story on screen: the transcript (`StoryView`), the side panel, and a line below the transcript.

    `GameScreen` puts the input line there and turns the player's keys into intents;
    `ReplayScreen` puts the replay status line there and plays a save. Both render every
    event through `render_event`, so a replay looks exactly like the game it records. Each
    declares its own bindings (their order is the footer's); the actions for reading the
    story (details, paging, following) are here.

    Args:
        play: the story shown, and what the player's intents go through (`PlaySession`): a
            screen reads the engine's session to draw it, and never changes it directly.
        past: a resumed story's turns as they were played (their numbers and details), in the
            order of the session's history.
    """

    ENDING_NOTE = "The story is over."
    """The line under an ending, in words: what the player can do now (the game says more)."""

    def __init__(self, play: PlaySession, past: Sequence[PastTurn] = ()) -> None:
        super().__init__()
        crop_repaints_to_rows(self)
        self.play = play
        self._past = past
        self.running = False
        """True while a turn's events are being shown (sent or replayed), until it ends."""
        self._story_view = StoryView(id="transcript")
        self._story_view.ending_note = self.ENDING_NOTE
        self._keys_shown: tuple[tuple[str, str, bool], ...] | None = None
        self._keys_held = False
        """True while the footer keeps the keys it shows (see `hold_keys`)."""
        self._details: dict[tuple[int, str], tuple[Event, ...]] = {}
        """The details of committed versions that had issues, by (turn, prose): a branch or a switch
        draws a path anew from the session's history, which keeps no events (see `_remember`)."""

    def _take_width_classes(self) -> None:
        """The app's width classes (`HORIZONTAL_BREAKPOINTS`; "-narrow" hides the side panel) from the
        first frame. Textual sets them at the screen's first resize, after its first paint: at 80
        columns a new game showed the side panel for a frame, then re-wrapped every row without it."""
        width = self.app.size.width
        breakpoints = self.app.HORIZONTAL_BREAKPOINTS or []
        reached = [name for minimum, name in sorted(breakpoints) if width >= minimum]  # the widest reached, as Textual
        for _, name in breakpoints:
            self.set_class(name == reached[-1] if reached else False, name)

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys in force, those the footer has no room for at this width left out of it (every key
        still works, and the palette's Keys lists them all)."""
        return fit_footer(super().active_bindings, self.size.width, self.app)

    def on_resize(self) -> None:
        self.refresh_bindings()  # the footer's room changed

    def refresh_bindings(self) -> None:
        """Tell the footer about the keys, but only when what it shows changes.

        Textual's footer rebuilds every key widget on each refresh, styles and all, and this screen
        asks after most events (a key may have come or gone). In a replay that was most of the time
        spent: 29 turns at ×20 took 19 s in the UI against 6 s headless. Keys that did not change
        are not rebuilt. While the keys are held (`hold_keys`) nothing is told until they are released.
        """
        if self._keys_held:
            return
        shown = tuple(
            (key, binding.description, enabled)
            for key, (_, binding, enabled, _tooltip) in self.active_bindings.items()
            if binding.show
        ) + ((str(self.app.app_focus), "", True),)  # the footer skips a refresh while the app is blurred
        if shown != self._keys_shown:
            self._keys_shown = shown
            super().refresh_bindings()

    def hold_keys(self) -> None:
        """Keep the footer's keys as they are until `release_keys`: rebuilding them costs as much as the
        frame that shows a command's echo, so the keys a turn in flight offers come a frame after it."""
        self._keys_held = True

    def release_keys(self) -> None:
        """Tell the footer the keys in force now, if they changed while they were held."""
        if self._keys_held:
            self._keys_held = False
            self.refresh_bindings()

    def _show_keys(self) -> None:
        """Once the footer is surely listening (after the first refresh), tell it the keys whatever was sent before."""
        self._keys_shown = None
        self.refresh_bindings()

    def bottom_line(self) -> Widget:
        """The widget under the transcript (composed once)."""
        raise NotImplementedError

    # -- shortcuts to the parts of the screen

    @property
    def transcript(self) -> StoryView:
        """The story view (held, not queried: this runs for every streamed chunk, and before mounting)."""
        return self._story_view

    @property
    def side_panel(self) -> SidePanel:
        return self.query_one(SidePanel)

    def message(self, turn: int) -> TurnMessage | None:
        """The message of a turn, if it is on screen."""
        return self.transcript.message(turn)

    def latest_message(self) -> TurnMessage | None:
        """The newest turn's message."""
        return self.transcript.latest_message()

    def committed_exchanges(self) -> list[tuple[str, str]]:
        """(player input, prose) of each committed turn the transcript shows (an export reads the save)."""
        return self.transcript.committed_exchanges()

    def compose(self) -> ComposeResult:
        pack = self.play.story.pack
        yield from game_layout(
            pack.title,
            pack.intro,
            SidePanel(pack, self.play.story.state, id="side-panel"),
            self.bottom_line(),
            self._story_view,
        )

    def on_mount(self) -> None:
        self._take_width_classes()
        self.call_after_refresh(self._show_keys)
        self._name_the_story()
        self._remember_past(self._past)
        self.transcript.show_history(
            self.play.story.history, self._past, _open_versions(self.play), earlier=_earlier(self.play)
        )
        self._show_standing_ending()

    def _show_standing_ending(self) -> AwaitMount | None:
        """A resumed story that had ended shows its ending under its turns, as when it was reached."""
        ending = self.play.story.ending
        return None if ending is None else self.transcript.show_ending(ending.title, ending.text, ending.commit)

    def _name_the_story(self) -> None:
        self.title = safe_text(self.play.story.pack.title)
        self.sub_title = narrator_label(self.play.story.narrator)

    # -- rendering

    async def render_event(self, event: Event) -> None:
        """Show one engine event: in the transcript, and a committed or restored state in the side panel."""
        if isinstance(event, TurnUndone):  # once: `show_undo` marks the turn in the transcript
            self.show_undo(event)
            return
        if isinstance(event, BranchStarted | BranchSwitched):
            await self.show_branch()
            return
        await self.transcript.show(event)
        if isinstance(event, TurnCommitted | AlternativeChosen):
            self.side_panel.show_state(event.state)
        if isinstance(event, TurnCommitted) and (message := self.message(event.turn)) is not None:
            if message.has_details:
                self._remember(event.turn, event.narrative, details_events(message.events))

    def _remember(self, turn: int, prose: str, details: tuple[Event, ...]) -> None:
        """Keep a committed version's details for the next time its path is drawn: the newest
        `DETAILS_KEPT`, enough for every turn a history holds and an undo reaches back to."""
        self._details.pop((turn, prose), None)
        self._details[(turn, prose)] = details
        if len(self._details) > DETAILS_KEPT:
            del self._details[next(iter(self._details))]

    def _remember_past(self, past: Sequence[PastTurn]) -> None:
        """A resumed story's turns that had issues (their details came from the save)."""
        if len(past) == len(self.play.story.history):
            for turn, exchange in zip(past, self.play.story.history, strict=True):
                if turn.events:
                    self._remember(turn.turn, exchange.turn.narrative, details_events(turn.events))

    async def show_branch(self) -> None:
        """A branch started or another taken up: the transcript shows that branch's path (from the
        intro, as a resumed story is shown), the side panel its world."""
        session = self.play.story
        transcript = self.transcript
        with self.app.batch_update():  # the path is painted whole in one frame, not its turns a frame later
            await transcript.start_again(
                session.pack.title,
                session.pack.intro,
                session.history,
                path_turns(self.play, self._details),
                _open_versions(self.play),
                earlier=_earlier(self.play),
            )
            await AwaitMount(transcript, list(transcript.children))
            self._give_versions_their_details()
            if (mounting := self._show_standing_ending()) is not None:
                await mounting
            self.side_panel.show_state(session.state)
        self.refresh_bindings()

    def _give_versions_their_details(self) -> None:
        """The latest turn, drawn anew with its versions to browse, gets each version's own details
        (a resumed screen has only those of the tries the save kept for it)."""
        versions = _open_versions(self.play)
        message = self.message(versions.turn) if versions is not None else None
        if message is not None:
            turn = message.turn
            message.versions = [(prose, self._details.get((turn, prose), ())) for prose, _ in message.versions]

    async def fold_old_turns(self) -> bool:
        """Fold old turns into blocks (`StoryView.fold_old_turns`), never past the session's pending turn."""
        pending = self.play.story.pending
        return await self.transcript.fold_old_turns(pending.turn if pending is not None else None)

    def show_undo(self, event: TurnUndone) -> None:
        """An undo was done: the transcript marks the turn, the side panel shows the state before it."""
        self.transcript.show_undo()
        self.side_panel.show_state(event.state)
        self.refresh_bindings()
        self.say_undone()

    def say_undone(self) -> None:
        """Say the undo was done, where it covers no text (a toast at 80x24 sat over the input line)."""
        self.notify("The last turn was undone.", title="Undo")

    async def restart(self, past: Sequence[PastTurn] = ()) -> None:
        """Show the play session's story anew (a new game, another save): the transcript starts again
        from its intro."""
        session = self.play.story
        self.running = False
        self._details.clear()
        self._remember_past(past)
        await self.transcript.start_again(
            session.pack.title,
            session.pack.intro,
            session.history,
            past,
            _open_versions(self.play),
            earlier=_earlier(self.play),
        )
        if (mounting := self._show_standing_ending()) is not None:
            await mounting
        self.side_panel.show_story(session.pack, session.state)
        self._name_the_story()  # an opened save may be on another narrator
        self.refresh_bindings()

    # -- reading the story

    def focus_next(self, selector: str | type[QueryType] = "*") -> Widget | None:
        """Tab from the line below the story goes to the oldest message on screen, not the oldest
        live one: that one was often a screenful up, and the view glided up to it."""
        return self._focus_on_screen(first=True) or super().focus_next(selector)

    def focus_previous(self, selector: str | type[QueryType] = "*") -> Widget | None:
        """shift+tab from the line below the story goes to the newest message on screen."""
        return self._focus_on_screen(first=False) or super().focus_previous(selector)

    def _focus_on_screen(self, *, first: bool) -> TurnMessage | None:
        if isinstance(self.focused, TurnMessage):
            return None
        seen = [message for message in self.transcript.live_messages() if self._in_view(message)]
        if not seen:
            return None
        message = seen[0] if first else seen[-1]
        self.set_focus(message)
        return message

    def _in_view(self, widget: Widget) -> bool:
        """True when at least one row of `widget` shows in the story's view."""
        view = self.transcript.scrollable_content_region
        return widget.display and bool(self.transcript.region) and widget.region.overlaps(view)

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        """Focus a widget, moving the story only to bring a message with no row on screen into view,
        by the fewest rows and at once.

        Textual centres a widget that is not wholly in view, with an animation: a focused message
        half on screen moved the story, and Tab glided it up over three frames.
        """
        if not isinstance(widget, TurnMessage):
            super().set_focus(widget, scroll_visible, from_app_focus)
            return
        super().set_focus(widget, scroll_visible=False, from_app_focus=from_app_focus)
        if scroll_visible and self.focused is widget and not self._in_view(widget):
            widget.scroll_visible(animate=False, immediate=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "details":
            if isinstance(self.focused, TurnMessage):
                return self.focused.has_details
            latest = self.latest_message()
            if latest is None:  # a resumed story: its newest turn is folded, with its details
                folded = self.transcript.latest_folded()
                return folded is not None and bool(folded.details)
            return latest.has_details
        if action == "follow":  # otherwise End goes on to the input line (the end of what is typed)
            return not self.transcript.following
        return True

    def action_page_transcript(self, direction: int) -> None:
        """Page up / page down scroll the story while the input keeps focus (typing still types)."""
        self.transcript.page(direction)

    def action_follow(self) -> None:
        """End, while the story is scrolled up: back to the newest text (as the follow hint says)."""
        self.transcript.follow()

    def action_any_details(self) -> None:
        """ctrl+d where the footer offers no details: the key still opens them (or says there are none),
        instead of going on to the input line and deleting a character there."""
        self.action_details()

    def action_details(self) -> None:
        """ctrl+d: the focused turn's details, else the latest turn's; a turn without corrections says there
        is nothing to show (not another turn's details, under a focused turn that had none)."""
        focused = self.focused
        if isinstance(focused, TurnMessage):
            self._open_details(focused)
            return
        latest = self.latest_message()
        if latest is not None:
            self._open_details(latest)
        elif (folded := self.transcript.latest_folded()) is not None:  # a resumed story: its newest turn is folded
            self.show_details_of(folded)
        else:
            self.notify("Nothing to show yet: no turn has been played.", timeout=3)

    @on(TurnMessage.DetailsRequested)
    def _details_message(self, event: TurnMessage.DetailsRequested) -> None:
        self._open_details(event.message)

    def _open_details(self, message: TurnMessage) -> None:
        screen = self._details_screen(message.turn, message.player_input, message.events, message.outcome == "undone")
        self.app.push_screen(screen)

    def _details_screen(
        self, turn: int, player_input: str, events: list[Event], undone: bool = False
    ) -> IssueDetailsScreen:
        """A turn's details, with the narrator's name and what the side panel keeps out of sight."""
        session = self.play.story
        hidden = world_lines(session.pack, session.state, shown=False)
        name = session.narrator.name
        return IssueDetailsScreen(turn, player_input, events, narrator=name, world=hidden, undone=undone)

    @on(ArchivedTurns.DetailsRequested)
    def _folded_details(self, event: ArchivedTurns.DetailsRequested) -> None:
        """A turn folded into a block keeps its details: a click on it shows them."""
        self.show_details_of(event.record)

    def folded_with_details(self) -> list[TurnRecord]:
        """Folded turns that had issues, newest first (the palette offers their details)."""
        return self.transcript.folded_with_details()

    def show_details_of(self, record: TurnRecord) -> None:
        """Open the details of a folded turn."""
        self.app.push_screen(self._details_screen(record.turn, record.player_input, list(record.details)))


DETAILS_KEPT = 2 * HISTORY_TURNS + UNDO_TURNS
"""Committed versions whose details a screen keeps for drawing a path anew (see `StoryScreen._remember`)."""


def path_turns(play: PlaySession, details: dict[tuple[int, str], tuple[Event, ...]]) -> list[PastTurn]:
    """The turns of the branch being played as the screen shows them: each number, the details of the
    version shown when it had issues, and for a turn the next command fixed with several versions,
    which one counts (`version N of M`)."""
    from storyloom.saves.resume import PastTurn

    session = play.story
    versions = {t.turn: (t.chosen, len(t.versions)) for t in session.ledger.turns() if len(t.versions) > 1}
    return [
        PastTurn(x.number, details.get((x.number, x.turn.narrative), ()), versions.get(x.number))
        for x in session.history
    ]


def _earlier(play: PlaySession) -> int:
    """Standing turns of a resumed story before those its history holds (and the screen shows)."""
    session = play.story
    return max(0, session.commits - len(session.history))


def _open_versions(play: PlaySession) -> Versions | None:
    """The latest turn's versions while the player may still browse or add to them: its message is
    then shown live, not folded (after the story's end it is fixed, like the turns before it)."""
    session = play.story
    return session.versions if session.ending is None else None
