"""The replay screen: a saved session played back through the game's own story view.

`storyloom replay SAVE` shows a recorded story the way it was played: the intro,
then each recorded input and its turn streamed into the same `TurnMessage`s, with
the same correcting status and prose swaps, at the recorded timing scaled by
`--speed`. It is a `StoryScreen` like the game (so every event is rendered by the
very code the live game uses) with a replay status line where the game has its
input line, driven by a `storyloom.saves.replay.Replayer` instead of the keyboard. The
replayer compares every event with the record; the first divergence stops the
replay and is shown in the status line and a notification, never smoothed over. Nothing is journaled: a
replay never writes to the save.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

from textual import work
from textual.binding import Binding
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from storyloom.engine.events import ProseDelta
from storyloom.engine.safety import safe_text
from storyloom.engine.state import state_hash
from storyloom.saves.export import OFF_PATH
from storyloom.saves.replay import Replayer, ReplayPlan, ReplayStep
from storyloom.tui.screens.story import StoryScreen
from storyloom.tui.session import PlaySession
from storyloom.tui.words import plural

TURN_GAP = 0.6
"""Seconds (at ×1) between the end of one recorded turn and the next input, so a watcher can follow.
The save's wall-clock gaps (the player thinking) are not replayed: only the model's timing is."""
REPLAY_ATTEMPT_TIMEOUT = 7 * 24 * 3600.0
"""The engine's attempt timeout during a replay. The live limit (10 minutes) would fail a turn that
was paused, or slowed by a low `--speed`, and report that as a divergence the record never had."""


class ReplayStatus(Static):
    """The line where the input line was: what the replay is doing, the speed, and the keys.

    One line of text in the input line's box, so the transcript keeps the live game's size and
    the replayed prose wraps exactly as it did; a divergence wraps onto as many lines as it needs.
    The text says the state in words; colour repeats it.
    """

    DEFAULT_CSS = """
    ReplayStatus {
        width: 1fr;
        height: 3;
        margin: 0 1 0 1;
        padding: 0 1;
        border: tall $accent;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-paused { border: tall $warning; }
        &.-finished { border: tall $success; }
        &.-diverged {  /* the whole finding stays readable after its notification has gone */
            height: auto;
            max-height: 8;
            text-wrap: wrap;
            border: tall $error;
            color: $text-error;
            text-style: bold;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.plain_text = ""
        """The line's text without styling (tests and the frame harness read it)."""

    def say(self, state: str, content: Content) -> None:
        """Show `content`; `state` ("replaying", "paused", "finished", "diverged") picks the colour."""
        for name in ("paused", "finished", "diverged"):
            self.set_class(state == name, f"-{name}")
        self.plain_text = content.plain
        self.update(content)


class ReplayScreen(StoryScreen):
    """Plays a `Replayer`'s steps into the story view; see the module docstring.

    The record decides what happens, not the keyboard: there is no cancel, retry or undo here.

    Args:
        replayer: drives a fresh session through the save's recorded steps.
        start_paused: wait for space or n before the first turn (tests; a watcher who wants to read the intro).
        sleep: how to wait between turns (tests may pass a fake).
    """

    BINDINGS = [
        Binding("ctrl+d", "details", "Details", priority=True),
        Binding("pageup", "page_transcript(-1)", "Scroll up", show=False),
        Binding("pagedown", "page_transcript(1)", "Scroll down", show=False),
        Binding("end", "follow", "Follow", show=False, priority=True),
        Binding("space", "toggle_pause", "Pause/resume", priority=True),
        Binding("n", "step", "Step a turn", priority=True),
        Binding("q", "quit_replay", "Quit", priority=True),
    ]

    def __init__(
        self,
        replayer: Replayer,
        *,
        start_paused: bool = False,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        only: frozenset[int] | None = None,
    ) -> None:
        replayer.session.attempt_timeout = REPLAY_ATTEMPT_TIMEOUT
        super().__init__(PlaySession.around(replayer.session))  # nothing is journaled
        self.replayer = replayer
        assert isinstance(replayer.plan, ReplayPlan)  # the screen counts the steps: a whole plan, not a streamed one
        self.plan = replayer.plan
        self.steps: list[ReplayStep] = self.plan.steps
        self.speed: float = replayer.plan.narrator.speed
        self.unit = "turn" if all(step.action == "play" for step in self.steps) else "step"
        """What the status line counts: turns, or steps when the save also holds retries and undos."""
        self.position = 0
        """Index of the step being played (or next to play)."""
        self.paused = start_paused
        self.finished = False
        """True once every recorded step was played and compared."""
        self.problem = ""
        """What went wrong, in words, once the replay diverged from the record ("" while it matches)."""
        self._resume = asyncio.Event()
        if not start_paused:
            self._resume.set()
        self._stop_after_step = False
        self._sleep = sleep
        self.replay_status = ReplayStatus(id="replay-status")
        self.only = only
        """The turns shown (one branch's path, `replay --branch`); None: every step as it was played."""

    # -- outcome, for the command line

    @property
    def exit_code(self) -> int:
        """1 when the replay diverged from the record, else 0 (also when the watcher quit early)."""
        return 1 if self.problem else 0

    def summary(self) -> str:
        """One line for the terminal after the app closes."""
        if self.problem:
            return f"replay DIVERGED from the record at {self.problem}"
        if self.finished:
            commits = sum(e.event == "turn_committed" for e in self.replayer.result.events)
            return (
                f"replayed {plural(commits, 'commit')}; every decision and state hash matches the record "
                f"(final state {self.replayer.result.final_hash[:12]}…)"
            )
        return (
            f"replay stopped by you at {self.unit} {self.position + 1} of {len(self.steps)}; "
            "everything replayed up to there matches the record"
        )

    # -- layout

    def bottom_line(self) -> Widget:
        return self.replay_status

    def on_mount(self) -> None:
        # Textual then runs StoryScreen.on_mount too (handlers of base classes are called as well).
        self.call_later(self._name_the_replay)
        self._show_status()
        self._play_all()

    def _name_the_replay(self) -> None:
        """The header says this is a replay, and of which save (after the story screen named the narrator)."""
        self.sub_title = safe_text(f"replay of {self.plan.save.path.name}")

    def _show_status(self) -> None:
        total = len(self.steps)
        if self.problem:
            text = " ".join(safe_text(f"DIVERGED at {self.problem}").split())
            self.replay_status.say("diverged", Content.assemble(text, " · ", ("q", "bold"), " quit"))
            return
        if self.finished:
            result = self.replayer.result
            self.replay_status.say(
                "finished",
                Content.assemble(
                    f"replay finished · {total}/{total} {self.unit}s match the record · "
                    f"state {result.final_hash[:12]}…",
                    _interrupted_note(result.interrupted),
                    " · ",
                    ("q", "bold"),
                    " quit",
                ),
            )
            return
        step = self.steps[self.position] if self.position < total else None
        kind = f" ({_step_words(step)})" if step is not None and step.action != "play" else ""
        speed = f"×{self.speed:g}" if math.isfinite(self.speed) else "×∞"
        state, verb = ("paused", "resume") if self.paused else ("replaying", "pause")
        self.replay_status.say(
            state,
            Content.assemble(
                f"{state} · {self.unit} {min(self.position + 1, total)}/{total}{kind} · {speed} · ",
                ("space", "bold"),
                f" {verb} · ",
                ("n", "bold"),
                " step · ",
                ("q", "bold"),
                " quit",
            ),
        )

    # -- playing the steps

    @work(exclusive=True, group="replay")
    async def _play_all(self) -> None:
        """Play each recorded step in turn, holding whenever the watcher pauses."""
        result = self.replayer.result
        try:
            for index, step in enumerate(self.steps):
                self.position = index
                self._show_status()
                await self._resume.wait()
                if not self._stop_after_step and math.isfinite(self.speed) and self._shown(step):
                    await self._sleep(TURN_GAP / self.speed)
                    await self._resume.wait()
                await self._play(step)
                if result.divergence is not None:
                    self._diverged(str(result.divergence))
                    return
                if self._stop_after_step:
                    self._stop_after_step = False
                    self._pause(True)
            result.final_hash = state_hash(self.play.story.state)
            if result.final_hash != result.expected_final_hash:
                self._diverged(
                    f"the end: the replay's final state is {result.final_hash[:12]}…, "
                    f"the record's {result.expected_final_hash[:12]}…"
                )
                return
            self.position = len(self.steps)
            self.finished = True
            self._show_status()
            self.refresh_bindings()
            self.notify("Every decision and state hash matches the record.", title="Replay finished")
        except Exception as exc:  # an engine bug is a divergence too, and must not hide behind a crash
            self.log.error("replay failed with an exception", exc)
            self._diverged(f"turn {self.steps[self.position].turn}: the replay stopped with an error: {exc}")

    async def _play(self, step: ReplayStep) -> None:
        """One recorded step through the story screen's renderer, held between events while paused."""
        self.running = True
        self.refresh_bindings()
        try:
            async for event in self.replayer.play_step(step):
                await self._resume.wait()
                if self.only is not None and (event.turn not in self.only or event.event in OFF_PATH):
                    continue  # off the path shown: played and compared, not drawn
                await self.render_event(event)
                if not isinstance(event, ProseDelta):
                    self.refresh_bindings()  # e.g. ctrl+d details, once the turn has an issue to show
        finally:
            self.running = False
            self.transcript.offer_retry(None)  # a replayed failure or cancel cannot be retried here
            self.refresh_bindings()
        await self.fold_old_turns()

    def _shown(self, step: ReplayStep) -> bool:
        return self.only is None or step.turn in self.only

    def _diverged(self, problem: str) -> None:
        self.problem = problem
        self.paused = False
        self._show_status()
        self.refresh_bindings()
        self.notify(
            safe_text(f"The replay differs from the record at {problem}"),
            title="Replay diverged",
            severity="error",
            timeout=30,
            markup=False,
        )

    def _pause(self, paused: bool) -> None:
        self.paused = paused
        if paused:
            self._resume.clear()
        else:
            self._resume.set()
        self._show_status()
        self.refresh_bindings()

    # -- keys

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("toggle_pause", "step"):
            return not (self.finished or self.problem)
        return super().check_action(action, parameters)

    def action_toggle_pause(self) -> None:
        """Space: hold the replay where it is (mid-turn too), or go on."""
        if self.finished or self.problem:
            return
        self._stop_after_step = False
        self._pause(not self.paused)

    def action_step(self) -> None:
        """n: play up to the end of the next turn (or of the one being shown), then pause."""
        if self.finished or self.problem:
            return
        self._stop_after_step = True
        self._pause(False)

    def action_quit_replay(self) -> None:
        self.app.exit(self.exit_code)


def _interrupted_note(turn: int | None) -> str:
    return "" if turn is None else f" · the save stops while turn {turn} was in flight"


def _step_words(step: ReplayStep) -> str:
    """What a replayed step other than a command is, in words."""
    if step.action == "regenerate":
        return f"another version of turn {step.turn}"
    if step.action == "choose":
        return f"version {step.alternative} of turn {step.turn} chosen"
    return f"{step.action} of turn {step.turn}"
