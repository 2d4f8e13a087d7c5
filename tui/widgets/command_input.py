"""The input line where the player types what they do next."""

from __future__ import annotations

from textual import events, on
from textual.message import Message
from textual.widgets import Input

from storyloom.engine.limits import COMMAND_MAX_CHARS
from storyloom.engine.safety import safe_text
from storyloom.tui.words import plural


class CommandInput(Input):
    """The player's command line: Enter sends, and typing always types.

    No single-letter key is taken from it: `r` and `d` act on a turn message only
    when that message has focus (tab, shift+tab or a click), and `ctrl+r` retries from here.
    """

    DEFAULT_PLACEHOLDER = "What do you do?  (Enter sends · ctrl+p commands)"
    FULL = f"a command is at most {COMMAND_MAX_CHARS} characters · this line is full"

    def __init__(self, *, blink: bool = True, id: str | None = None) -> None:
        # A command line keeps what you typed when it gets focus back; nothing is selected to be overwritten.
        super().__init__(
            placeholder=self.DEFAULT_PLACEHOLDER, id=id, max_length=COMMAND_MAX_CHARS, select_on_focus=False
        )
        self.cursor_blink = blink

    async def on_key(self, event: events.Key) -> None:
        """Enter sends what was typed here, even when the focus has moved on since it was pressed.

        A key is handed to the widget that has the focus when it arrives, but a binding is looked
        up once the key has bubbled up, on the focus as it is then: fast typing after shift+tab
        puts the letters and the Enter here before shift+tab reaches its binding and moves the
        focus, and `enter` as a binding would then be looked for on the message, and lost."""
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            await self.action_submit()

    class Pasted(Message):
        """Several lines were pasted: each is a command, to be played in order."""

        def __init__(self, field: CommandInput, lines: list[str]) -> None:
            super().__init__()
            self.field = field
            self.lines = lines
            """The commands, the first with what was typed before the paste around it."""

        @property
        def control(self) -> CommandInput:
            return self.field

    def _on_paste(self, event: events.Paste) -> None:
        """A paste of one line goes in where the cursor is; of several, each line is a command (Input
        kept the first and dropped the rest without a word)."""
        lines = [line.strip() for line in event.text.splitlines() if line.strip()]
        if len(lines) < 2:
            return  # Input's own handler (run after this one) puts it in
        event.prevent_default()
        event.stop()
        selection = self.selection
        if selection.is_empty:
            self.insert_text_at_cursor(lines[0])
        else:
            self.replace(lines[0], *selection)
        first = self.value
        self.clear()
        self.post_message(self.Pasted(self, [first, *(line[:COMMAND_MAX_CHARS] for line in lines[1:])]))

    def suggest(self, suggestions: tuple[str, ...]) -> None:
        """Show the narrator's suggested next actions as the placeholder."""
        if suggestions:  # model text: never a control sequence in the terminal
            self.placeholder = safe_text("try: " + " · ".join(s.replace("\n", " ") for s in suggestions))
        else:
            self.placeholder = self.DEFAULT_PLACEHOLDER

    def restricted(self) -> None:
        """Typing or a paste would pass the command limit (the only restriction this line has): the
        line keeps what fits and says why on its own border, where the player is looking."""
        super().restricted()
        self.border_subtitle = self.FULL

    @on(Input.Changed)
    def _room_again(self) -> None:
        """Once the command is shorter than the limit again, the note about it goes."""
        if self.border_subtitle == self.FULL and len(self.value) < COMMAND_MAX_CHARS:
            self.border_subtitle = ""

    STORY_OVER = "The story is over · ctrl+z undo · ctrl+p new game, save, export"
    SERVED_STORY_OVER = "The story is over · ctrl+z undo · ctrl+p export · f10 quit"
    """In a browser tab (`storyloom serve`): a new tab is a new story, and f10 quits."""

    def story_over(self) -> None:
        """The story reached an ending: the placeholder says what the player can do now, instead of suggestions."""
        self.placeholder = self.SERVED_STORY_OVER if self.app.is_web else self.STORY_OVER

    def say_over(self) -> None:
        """A command was sent after the ending: say on the line's border why it was not played (it stays typed)."""
        self.border_subtitle = "the story is over · ctrl+z takes the ending turn back"

    def say_not_played(self, count: int) -> None:
        """Pasted commands were left unplayed (a turn failed, was cancelled or ended the story): say how many."""
        self.border_subtitle = f"{plural(count, 'pasted line')} not played: the turn before did not go on"

    def say_busy(self, busy: bool = True) -> None:
        """Say on the line's own border that a turn is still being written (a toast would cover the prose)."""
        self.border_subtitle = (
            "a turn is still being written · esc cancels it · your command waits here" if busy else ""
        )
