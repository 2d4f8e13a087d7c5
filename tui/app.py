"""storyloom's Textual app: hosts the game screen and the command palette (`storyloom.tui.cli.ui` starts it)."""

from __future__ import annotations

import asyncio
import gc
import io
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from storyloom.engine.safety import safe_text
from storyloom.tui.screens.opening import OpeningScreen
from storyloom.tui.session import PlaySession, SaveNotes

if TYPE_CHECKING:  # the engine and the game screen load after the first frame (see `Opening`)
    from textual.notifications import SeverityLevel
    from textual.theme import Theme

    from storyloom.engine.events import Event
    from storyloom.engine.lifecycle import Session
    from storyloom.saves.errors import SaveError
    from storyloom.saves.replay import Replayer
    from storyloom.saves.resume import PastTurn
    from storyloom.tui.screens.game import GameScreen
    from storyloom.tui.screens.replay import ReplayScreen
    from storyloom.tui.screens.story import StoryScreen

NARROW_BELOW = 90
"""Terminals narrower than this hide the side panel, so prose keeps a readable width."""


@dataclass(frozen=True)
class Opening:
    """A story to show at once and load behind the first frame.

    `load` runs in a thread after the opening screen is painted and returns the
    ready session (it imports the engine, builds the narrator, creates the save);
    when it raises, the app ends with exit code 2 and the error as its message.
    """

    title: str
    intro: str
    load: Callable[[], Session]
    newest: tuple[tuple[str, str], ...] = ()
    """A resumed save's newest turns (player input, narrative), shown under the intro while it loads."""


class AppSaveNotes(SaveNotes):
    """While the app runs, what happens to the save is told in notifications, never printed over the
    screen: a rescued save once, and a story that can no longer be saved once per distinct reason."""

    def __init__(self, app: App[int]):
        super().__init__(io.StringIO())  # never printed to: the screen is the app's
        self.app = app
        self._said = ""

    def failed(self, reason: SaveError) -> None:
        pass

    def refused(self, path: Path, reason: SaveError) -> None:
        pass

    def lost(self) -> None:
        pass

    def say(self, text: str) -> None:
        """What the player must hear with the game on screen (a save left with records no place took)."""
        self._tell(text, "Not saved", "error")

    def moved(self, reason: SaveError | None, path: Path, *, leaving: bool = False) -> None:
        if reason is not None:
            goes_on = "" if leaving else "; play goes on there"
            self._tell(f"{reason}\nThe story so far is now saved to {path}{goes_on}.", "Saved elsewhere", "warning")

    def not_saved(self, reason: Exception) -> None:
        message = str(reason) or type(reason).__name__
        if message != self._said:
            self._said = message
            self._tell(
                f"{message}\nThe game goes on, but turns from now on may not be saved.", "Could not save", "error"
            )

    def _tell(self, text: str, title: str, severity: SeverityLevel) -> None:
        """One notification, long enough to read; the save's and the system's words made inert."""
        self.app.notify(safe_text(text), title=title, severity=severity, timeout=15, markup=False)


class StoryloomApp(App[int]):
    """The terminal UI for one story session.

    Args:
        session: a ready `Session` (tests build one with a scripted narrator), or an
            `Opening` to paint first and load in a worker (`storyloom` on a built-in story).
        play: the `PlaySession` the screens drive (`storyloom` passes the one that opened the story and
            its save); absent, one without a save is made around `session`.
        on_event: with no `play`: called with every engine event before it is rendered (tests).
        new_session: builds a fresh session for the palette's "New game" (absent: not offered).
        blink: blink the input cursor (snapshot tests turn it off).
        tune_gc: freeze long-lived objects for the garbage collector (the real app; see `GameScreen`),
            and turn it on after the first frame if the command started with it off.
        list_saves: the saves the palette's "Open save" offers (absent: not offered).
        open_save: continues a save as a ready session (raises with a message the player can act on).
        remember_theme: keeps the theme the player picks in the palette for the next start (the settings file).
        quit_on: signals that end the app as ctrl+q does (the real app: SIGTERM, SIGHUP), so the
            terminal is restored and the save closed instead of the process dying mid-screen.
        past: the turns of the story being played as they were played, when it continues a save
            (asked again after "Open save" and "New game"); see `StoryScreen`.
    """

    CSS_PATH = "app.tcss"
    TITLE = "storyloom"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("ctrl+q", "quit_in_browser", show=False, priority=True),
        Binding("f10", "quit_in_browser", "Quit", priority=True),
    ]
    """ctrl+q quits Firefox itself before the page sees it: served to a browser, f10 quits and is the
    Quit the footer shows (ctrl+q still quits where a browser lets it through)."""

    def __init__(
        self,
        session: Session | Opening,
        *,
        play: PlaySession | None = None,
        on_event: Callable[[Event], object] | None = None,
        new_session: Callable[[], Session] | None = None,
        blink: bool = True,
        theme: str | None = None,
        tune_gc: bool = False,
        list_saves: Callable[[], list[Path]] | None = None,
        open_save: Callable[[Path], Session] | None = None,
        remember_theme: Callable[[str], None] | None = None,
        quit_on: Iterable[int] = (),
        past: Callable[[], Sequence[PastTurn]] | None = None,
    ) -> None:
        super().__init__()
        self._remember_theme = remember_theme
        self._quit_on = tuple(quit_on)
        self._opening = session if isinstance(session, Opening) else None
        ready = None if isinstance(session, Opening) else session
        self.play = play if play is not None else PlaySession.around(ready, on_event=on_event)
        """What the screens drive: the player's intents, each event recorded before it is shown."""
        if ready is not None:
            self.play.session = ready
        self.play.notes = AppSaveNotes(self)
        self.failure = ""
        """Why the story could not be loaded behind the opening screen (the app then exits with 2)."""
        self._new_session = new_session
        self._blink = blink
        self._tune_gc = tune_gc
        self._list_saves = list_saves
        self._open_save = open_save
        self._past = past or tuple
        self.panel_override: bool | None = None
        """None: the side panel follows the terminal width; True/False: the player chose."""
        if theme:
            self.theme = theme
        self._kept_theme = self.theme
        """The theme the settings file already holds (a change is written there)."""

    @property
    def session(self) -> Session | None:
        """The story being played (the play session's); None until an `Opening` has loaded."""
        return self.play.session

    @property
    def game(self) -> StoryScreen:
        """The game screen, or the replay screen (under any modal that is open)."""
        from storyloom.tui.screens.story import StoryScreen

        return next(s for s in reversed(self.screen_stack) if isinstance(s, StoryScreen))

    def get_default_screen(self) -> Screen[Any]:
        if self._opening is not None:
            return OpeningScreen(
                self._opening.title, self._opening.intro, newest=self._opening.newest, blink=self._blink
            )
        return self._game_screen()

    def _game_screen(self) -> GameScreen:
        from storyloom.tui.screens.game import GameScreen

        assert self.session is not None
        return GameScreen(
            self.play,
            self._past(),
            blink=self._blink,
            tune_gc=self._tune_gc,
        )

    async def on_event(self, event: events.Event) -> None:
        """A printable key goes to the game's input line whatever has focus: the game screen moves the
        focus there (`GameScreen.keep_typing`) before the key is handed to the focused widget, so no
        letter of a command typed fast is taken by a focused message or lost. A paste too (a focused
        message had taken it, and dropped it)."""
        if (isinstance(event, events.Key) and event.is_printable) or isinstance(event, events.Paste):
            keep_typing = getattr(self.screen, "keep_typing", None)
            if keep_typing is not None:
                keep_typing()
        await super().on_event(event)

    def on_mount(self) -> None:
        if self._tune_gc:  # the command turned the collector off while it started (`cli/ui.py`)
            self.call_after_refresh(gc.enable)
        if self._remember_theme is not None:
            self.theme_changed_signal.subscribe(self, self._theme_chosen)
        loop = asyncio.get_running_loop()
        for signum in self._quit_on:
            loop.add_signal_handler(signum, self.exit)
        if self._opening is not None:
            self.call_after_refresh(self.run_worker, self._load_opening, thread=True, group="opening")

    def _theme_chosen(self, theme: Theme) -> None:
        assert self._remember_theme is not None
        if theme.name == self._kept_theme:
            return
        self._kept_theme = theme.name
        try:
            self._remember_theme(theme.name)
        except OSError as exc:
            self.notify(
                f"The theme is used now, but could not be kept for next time: {exc}",
                title="Theme",
                severity="warning",
                markup=False,
            )

    def _load_opening(self) -> None:
        """Load the story behind the opening screen, then show the game in its place (a thread worker)."""
        assert self._opening is not None
        try:
            session = self._opening.load()
        except Exception as exc:  # settings, narrator or save: the message says what to fix
            if self.return_code is None:
                self.call_from_thread(self._opening_failed, str(exc))
            return
        if self.return_code is None:  # not if the player quit while it loaded
            loaded: Callable[[Session], Awaitable[None] | None] = self._opening_loaded  # (how mypy solves the call)
            self.call_from_thread(loaded, session)

    async def _opening_loaded(self, session: Session) -> None:
        opening = self.screen
        typed = opening.typed if isinstance(opening, OpeningScreen) else ""
        self.play.session, self._opening = session, None
        game = self._game_screen()
        await self.push_screen(game)  # over the opening screen, which stays below, unseen
        if typed:
            game.command_input.value = typed
            game.command_input.cursor_position = len(typed)

    def _opening_failed(self, message: str) -> None:
        self.failure = message
        self.exit(return_code=2)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        if self.session is None:  # still loading: only Textual's own commands
            yield from super().get_system_commands(screen)
            return
        if self._new_session is not None:
            yield SystemCommand("New game", "Start the story again from the beginning", self.action_new_game)
        if self._list_saves is not None and self._open_save is not None:
            yield SystemCommand("Open save", "Continue a saved story", self.action_open_save)
        if self.play.journal is not None:  # a replay, or a story not saved: `storyloom export` of its save
            yield SystemCommand(
                "Export transcript", "Write the story so far to a Markdown file beside the saves", self.action_export
            )
        yield SystemCommand("Toggle side panel", "Show or hide the room, inventory and stats", self.action_toggle_panel)
        game = self.game
        story_tree = getattr(game, "action_story_tree", None)
        if story_tree is not None:
            yield SystemCommand("Story tree", "Every branch of the story; play another where it was left", story_tree)
        for record in game.folded_with_details():  # reachable by a click too, and this way by keyboard
            yield SystemCommand(
                f"Details of turn {record.turn}",
                "An earlier turn that had issues",
                partial(game.show_details_of, record),
            )
        yield SystemCommand("Keys", "The game's keys: sending, correcting, versions, undo, scrolling", self.action_keys)
        yield from (c for c in super().get_system_commands(screen) if c.title != "Keys")  # Textual's: the input's keys

    def action_keys(self) -> None:
        """Show the game's keys (Textual's own "Keys" lists the focused input line's editing keys)."""
        from storyloom.tui.screens.keys import KeysScreen, key_lines
        from storyloom.tui.widgets.turn_message import TurnMessage

        game = type(self.game)
        lines = key_lines(
            [
                ("Playing", [Binding("enter", "", "Send the command"), *game.BINDINGS]),
                (
                    "On a focused turn message (tab or a click)",
                    [
                        Binding("tab", "", "The oldest on screen, then newer"),
                        Binding("shift+tab", "", "The newest on screen, then older"),
                        *TurnMessage.BINDINGS,
                    ],
                ),
                ("Anywhere", [Binding("ctrl+p", "", "Command palette"), *self._keys_here()]),
            ],
            browser=self.is_web,
        )
        self.push_screen(KeysScreen(lines))

    def action_toggle_panel(self) -> None:
        """Show or hide the side panel, overriding the width rule."""
        screen = self.game
        shown = screen.side_panel.display if self.panel_override is None else self.panel_override
        self.panel_override = not shown
        screen.set_class(self.panel_override, "-panel-shown")
        screen.set_class(not self.panel_override, "-panel-hidden")

    def action_new_game(self) -> None:
        """Replace the game with a fresh session of the same story."""
        if self._new_session is None:
            return
        self.play.cancel()
        self.play.session = self._new_session()
        self.run_worker(self.game.restart(self._past()), exclusive=True, group="new-game")

    def action_open_save(self) -> None:
        """Pick a save and continue it in place of the story being played."""
        if self._list_saves is None or self._open_save is None:
            return
        try:
            saves = self._list_saves()
        except OSError as exc:
            self.notify(f"Cannot list the saves: {exc}", title="Open save", severity="error", markup=False)
            return
        from storyloom.tui.screens.open_save import OpenSaveScreen

        self.push_screen(OpenSaveScreen(saves), self._continue_save)

    def _continue_save(self, path: Path | None) -> None:
        if path is None or self._open_save is None:
            return
        try:
            session = self._open_save(path)
        except Exception as exc:  # a save error names the file and what is wrong with it
            self.notify(str(exc), title="Cannot open this save", severity="error", markup=False, timeout=10)
            return
        self.play.cancel()
        self.play.session = session
        self.run_worker(self.game.restart(self._past()), exclusive=True, group="new-game")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "quit":
            return not self.is_web
        return self.is_web if action == "quit_in_browser" else True

    def _keys_here(self) -> list[Binding]:
        """The app's keys that work where it runs (f10 quits only in a browser tab)."""
        keys = [b if isinstance(b, Binding) else Binding(*b) for b in self.BINDINGS]
        return [b for b in keys if self.check_action(b.action, ())]

    async def action_quit_in_browser(self) -> None:
        await self.action_quit()

    def action_export(self) -> None:
        """Write the story as `storyloom export` does (read back from its save) to a Markdown file beside
        the saves, never over an existing file; served to a browser, the file is downloaded instead."""
        from storyloom.saves.errors import SaveError  # loaded on first export: it brings in the save checker
        from storyloom.saves.locations import new_export_path, saves_dir

        session = self.session
        if session is None:  # still loading: nothing is committed yet
            return
        pack = session.pack
        try:
            text = self.play.export_markdown()
        except SaveError as exc:
            self.notify(str(exc.reason), title="Nothing exported", severity="error", markup=False, timeout=10)
            return
        if self.is_web:  # served to a browser: the file goes to the player, not onto the server's disk
            self.deliver_text(io.StringIO(text), save_filename=f"storyloom-{pack.id}.md", mime_type="text/markdown")
            self.notify("Sent to your browser's downloads", title="Exported", markup=False, timeout=10)
            return
        folder = saves_dir()
        path = folder / f"storyloom-{pack.id}.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            while True:
                path = new_export_path(pack.id, folder)
                try:
                    with path.open("x", encoding="utf-8") as file:  # "x": a file that appeared meanwhile is kept
                        file.write(text)
                    break
                except FileExistsError:
                    continue
        except OSError as exc:
            self.notify(
                f"Could not write {path}: {exc.strerror}", title="Export failed", severity="error", markup=False
            )
            return
        self.notify(f"Written to {path}", title="Exported", markup=False, timeout=10)


class ReplayApp(StoryloomApp):
    """`storyloom replay`: the same app showing a recorded session (see `storyloom.tui.screens.replay`).

    Args:
        replayer: drives a fresh session through the save's recorded steps; nothing is journaled.
        start_paused: wait for space or n before the first turn.
        only: show only these turns (one branch's path, `replay --branch`); every step is still played.
    """

    BINDINGS = [Binding("ctrl+q", "screen.quit_replay", "Quit", show=False, priority=True)]
    """ctrl+q quits as q does (with the replay's exit code), but only q is listed: one Quit in the footer."""

    def __init__(
        self,
        replayer: Replayer,
        *,
        blink: bool = True,
        theme: str | None = None,
        start_paused: bool = False,
        only: frozenset[int] | None = None,
    ) -> None:
        from storyloom.tui.screens.replay import ReplayScreen  # only `storyloom replay` pays for importing it

        super().__init__(replayer.session, blink=blink, theme=theme)
        self.replay: ReplayScreen = ReplayScreen(replayer, start_paused=start_paused, only=only)

    def get_default_screen(self) -> Screen[Any]:
        return self.replay
