"""A small notes app (not storyloom): type a note, press Enter, it is added under the others.

`JumpyNotesApp` is the same app written carelessly: it puts the newest note first at the top of the
view, so every note on screen jumps down a row each time one is added. The tests show the plugin telling them apart.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Static


class NotesApp(App[None]):
    AUTO_FOCUS = "#entry"
    CSS = """
    #notes { height: 1fr; }
    #status { height: 1; color: $text-muted; }
    """

    def __init__(self, notes: list[str] | None = None) -> None:
        super().__init__()
        self.notes = list(notes or [])

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="notes"):
            for text in self.notes:
                yield Static(f"• {text}", classes="note")
        yield Static(f"{len(self.notes)} notes", id="status")
        yield Input(placeholder="write a note, then Enter", id="entry")

    ANCHORED = True
    """The view follows the newest note."""

    def on_mount(self) -> None:
        if self.ANCHORED:
            self.query_one("#notes").anchor()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.clear()
        if not text:
            return
        status = self.query_one("#status", Static)
        status.update("saving…")
        self.notes.append(text)
        await self.add(Static(f"• {text}", classes="note"))
        self.set_timer(0.3, lambda: status.update(f"{len(self.notes)} notes"))

    async def add(self, note: Static) -> None:
        await self.query_one("#notes").mount(note)


class JumpyNotesApp(NotesApp):
    ANCHORED = False  # the view stays at the top of the list, where the newest note goes

    async def add(self, note: Static) -> None:
        notes = self.query_one("#notes")
        await notes.mount(note, before=0)  # newest first: everything below moves down
