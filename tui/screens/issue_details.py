"""What went wrong with a turn, and what each correction changed in its prose and patch."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from storyloom.engine.events import AttemptFinished, Event, ProseDelta, ProseReplaced, TurnCommitted, TurnFailed
from storyloom.engine.safety import safe_text
from storyloom.engine.turns import Issue
from storyloom.tui.failures import BUDGET_SPENT, failure
from storyloom.tui.narrators import counts_tokens
from storyloom.tui.words import plural


@dataclass(frozen=True)
class AttemptView:
    """One model attempt as the details screen shows it."""

    number: int
    kind: str
    prose: str | None
    patch: str | None
    issues: tuple[Issue, ...]
    usage: dict[str, int]


def attempts_of(events: list[Event]) -> list[AttemptView]:
    """The attempts of a turn, with the prose and patch each one proposed."""
    views: list[AttemptView] = []
    streamed = "".join(e.text for e in events if isinstance(e, ProseDelta))
    for event in events:
        if not isinstance(event, AttemptFinished):
            continue
        prose, patch = None, None
        if event.raw is not None:
            try:
                data = json.loads(event.raw)
            except ValueError:
                data = None
            if isinstance(data, dict):
                if isinstance(data.get("narrative"), str):
                    prose = data["narrative"]
                if "state_patch" in data:
                    patch = _patch_lines(data["state_patch"])
                elif event.kind == "correction" and views:  # left out: the rejected turn's patch is kept
                    patch = views[-1].patch
        if prose is None and event.kind == "turn" and streamed:
            prose = streamed
        views.append(AttemptView(event.attempt, event.kind, prose, patch, tuple(event.issues), dict(event.usage)))
    return views


def usage_text(usage: dict[str, int]) -> str:
    """Tokens of an attempt as a player can read them ("" when the narrator reported none)."""
    if not usage:
        return ""
    text = f"{usage.get('input_tokens', 0)} tokens in"
    if usage.get("cached_tokens"):
        text += f" ({usage['cached_tokens']} cached)"
    return text + f", {usage.get('output_tokens', 0)} out"


def _total(views: list[AttemptView]) -> dict[str, int]:
    total: dict[str, int] = {}
    for view in views:
        for key, value in view.usage.items():
            total[key] = total.get(key, 0) + value
    return total


def _patch_lines(patch: object) -> str:
    """One operation a line, so a diff shows which operations a correction changed."""
    if isinstance(patch, list):
        return "\n".join(json.dumps(op, ensure_ascii=False) for op in patch) or "(empty patch)"
    return json.dumps(patch, ensure_ascii=False)


def diff_lines(before: str, after: str, label: str) -> list[str]:
    """A unified diff of two texts, word-wrapped lines kept as they are."""
    return list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"{label} before", f"{label} after", lineterm="", n=2
        )
    )


def _diff_content(lines: list[str]) -> Content:
    styled: list[Content] = []
    for line in lines:
        line = safe_text(line)
        if line.startswith(("+++", "---")):
            styled.append(Content.styled(line, "dim"))
        elif line.startswith("+"):
            styled.append(Content.styled(line, "$text-success"))
        elif line.startswith("-"):
            styled.append(Content.styled(line, "$text-error"))
        else:
            styled.append(Content(line))
    return Content("\n").join(styled)


class IssueDetailsScreen(ModalScreen[None]):
    """A modal listing a turn's issues per attempt and diffs of what the corrections changed."""

    DEFAULT_CSS = """
    IssueDetailsScreen {
        align: center middle;
        & > Vertical {
            width: 90%;
            max-width: 110;
            height: 90%;
            border: round $accent;
            border-title-align: left;
            border-subtitle-align: right;
            background: $surface;
            padding: 0 1;
        }
        & Static { height: auto; }
        & .-heading { text-style: bold; margin-top: 1; }
        & .-issue { padding-left: 2; }
    }
    """

    BINDINGS = [Binding("escape,q,d", "dismiss", "Close")]

    def __init__(
        self,
        turn: int,
        player_input: str,
        events: list[Event],
        *,
        narrator: str = "",
        world: tuple[list[str], list[str]] = ([], []),
        undone: bool = False,
    ) -> None:
        """Args:
        narrator: who wrote the turn (the offline narrator counts no tokens, and says so).
        world: the stats and flags the side panel does not show, one line each (`world_lines`).
        undone: the turn was taken back (ctrl+z) since it committed.
        """
        super().__init__()
        self._undone = undone
        self._turn = turn
        self._player_input = player_input
        self._events = list(events)
        self._narrator = narrator
        self._world = world

    def compose(self) -> ComposeResult:
        box = Vertical()
        box.border_title = f"Turn {self._turn} · details"
        box.border_subtitle = "esc close"
        with box, VerticalScroll():
            yield Static(Content.assemble(("Command: ", "bold"), safe_text(self._player_input)), markup=False)
            yield from self._outcome()
            views = attempts_of(self._events)
            corrections = [view for view in views if view.kind == "correction"]
            if corrections and usage_text(_total(corrections)):
                yield Static(Content(f"Corrections cost: {usage_text(_total(corrections))}"), markup=False)
            if views and not usage_text(_total(views)):
                said = "no token figures reported" if counts_tokens(self._narrator) else f"{self._narrator}: no tokens"
                yield Static(Content.styled(said, "dim"), markup=False)
            for index, view in enumerate(views):
                title = "First attempt" if view.kind == "turn" else f"Correction {view.number - 1}"
                verdict = "accepted" if not view.issues else f"rejected: {plural(len(view.issues), 'issue')}"
                yield Static(Content(f"{title} — {verdict}"), markup=False, classes="-heading")
                if usage_text(view.usage):
                    yield Static(Content.styled(usage_text(view.usage), "dim"), markup=False, classes="-issue")
                for issue in view.issues:
                    where = f" at {issue.path}" if issue.path else ""
                    line = Content.assemble(("• ", ""), (issue.rule, "bold"), safe_text(f"{where}: {issue.message}"))
                    yield Static(line, markup=False, classes="-issue")
                if index:
                    yield from self._changes(views[index - 1], view)
            stats, flags = self._world
            if stats or flags:
                yield Static(Content("Not in the side panel (the story keeps these out of sight)"), classes="-heading")
                for hidden in (*stats, *flags):
                    yield Static(Content(hidden), markup=False, classes="-issue")

    def _outcome(self) -> list[Static]:
        last = self._events[-1] if self._events else None
        corrected = any(e.event == "validation_failed" for e in self._events)
        if isinstance(last, TurnCommitted) and not corrected:
            text = "Outcome: committed at once. No corrections: nothing to show."
        elif isinstance(last, TurnCommitted):
            text = "Outcome: committed after correction."
        elif isinstance(last, TurnFailed):
            said = failure(last)
            spent = "the correction budget was spent"
            if said is not BUDGET_SPENT:
                spent = f"{said.status} (no correction spent)"
            text = f"Outcome: not committed — {spent}. Nothing changed in the story."
            judged = (e.issues for e in self._events if isinstance(e, AttemptFinished))
            if last.issues and last.issues not in judged:
                extra = [
                    Static(Content(f"• {i.rule}: {safe_text(i.message)}"), markup=False, classes="-issue")
                    for i in last.issues
                ]
                return [Static(Content(text), markup=False), *extra]
        elif last is None:  # a turn drawn from a save or a branch's path keeps its tries only if it had issues
            text = "Outcome: committed. No corrections: nothing to show."
        elif last.event == "turn_cancelled":
            text = "Outcome: cancelled. Nothing changed in the story."
        else:
            text = "Outcome: still in progress."
        if self._undone:
            text += " Undone since (ctrl+z): it no longer counts."
        return [Static(Content(text), markup=False)]

    def _changes(self, before: AttemptView, after: AttemptView) -> list[Static]:
        widgets: list[Static] = []
        kept = after.prose is None or after.prose == before.prose
        replaced = any(isinstance(e, ProseReplaced) and e.changed for e in self._events)
        if kept:
            widgets.append(Static(Content.styled("prose: kept as it was", "dim"), markup=False, classes="-issue"))
        else:
            lines = diff_lines(before.prose or "", after.prose or "", "prose")
            widgets.append(
                Static(Content("prose changed:" if replaced else "prose proposed:"), markup=False, classes="-issue")
            )
            widgets.append(Static(_diff_content(lines), markup=False, classes="-issue"))
        if before.patch == after.patch:
            widgets.append(Static(Content.styled("patch: unchanged", "dim"), markup=False, classes="-issue"))
        elif before.patch is None or after.patch is None:
            which = "the earlier attempt" if before.patch is None else "this attempt"
            widgets.append(Static(Content(f"patch: {which} gave no readable patch"), markup=False, classes="-issue"))
            if after.patch is not None:
                widgets.append(
                    Static(
                        _diff_content([f"+{line}" for line in after.patch.splitlines()]), markup=False, classes="-issue"
                    )
                )
        else:
            lines = diff_lines(before.patch or "(none)", after.patch or "(none)", "patch")
            widgets.append(Static(Content("patch changed:"), markup=False, classes="-issue"))
            widgets.append(Static(_diff_content(lines), markup=False, classes="-issue"))
        return widgets
