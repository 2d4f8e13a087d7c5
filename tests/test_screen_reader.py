"""`storyloom play --screen-reader`, played as a person would, through a pseudo-terminal.

What a screen reader hears is the exact bytes the game writes: so these tests read them whole
(pexpect), and hold them to the promise: no escape sequence or colour, every committed turn
printed once, a correction one line, a failure naming the command that retries.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from storyloom.engine.packs import load_pack
from storyloom.tui.cli.screen_reader import describe_state

pexpect = pytest.importorskip("pexpect", reason="pexpect drives the pseudo-terminal (pip install -e '.[test]')")

WALK = [
    line
    for line in (Path(__file__).parent / "walkthroughs" / "lighthouse.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]
PROMPT = "\r\n> "
SEED = "3"  # with these faults and one correction a turn, the walk-through has corrections and failed turns


class Player:
    """One game at a pseudo-terminal: every byte it writes is kept in `raw`."""

    def __init__(self, tmp_path: Path, *args: str, flag: str | None = "--screen-reader", term: str = "xterm-256color"):
        env = {
            **os.environ,
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "TERM": term,  # by default a terminal that could take colour and cursor moves: none are sent
        }
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "storyloom.tui.cli", "play", *([flag] if flag else []), *args],
            env=env,
            encoding=None,
            timeout=30,
            dimensions=(24, 80),
        )
        self.raw = b""

    def _read(self, expected: str) -> str:
        self.child.expect_exact(expected.encode())
        got = self.child.before + self.child.after
        self.raw += got
        return got.decode("utf-8")

    def start(self) -> str:
        return self._read(PROMPT)

    def say(self, line: str) -> str:
        """Type a line; what the game printed in answer, up to its next prompt."""
        self.child.sendline(line)
        return self._read(PROMPT)

    def quit(self, line: str | None = "/quit") -> str:
        """Leave with `line`, or with the end of input (Control-D) when it is None."""
        if line is None:
            self.child.sendeof()
        else:
            self.child.sendline(line)
        self.child.expect(pexpect.EOF)
        self.raw += self.child.before
        self.child.close()
        assert self.child.exitstatus == 0
        return self.child.before.decode("utf-8")

    def play(self, command: str) -> str:
        """A command, retried with /retry while its turn fails (the story is deterministic: a few at most)."""
        said = self.say(command)
        tries = 0
        while "Type /retry to play it again" in said and "failed" in said:
            tries += 1
            assert tries < 8, said
            said = self.say("/retry")
        return said


def _commits(save: Path) -> list[str]:
    """Every prose the save says was shown: each committed turn, and each version chosen again."""
    shown = []
    for line in save.read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        if record["kind"] in ("turn_committed", "alternative_chosen"):
            shown.append(record["data"]["narrative"])
    return shown


def _plain(raw: bytes) -> None:
    """No escape sequence, colour or other control byte: text, spaces and line ends only."""
    text = raw.decode("utf-8")
    bad = sorted({f"{ord(c):#04x}" for c in text if (ord(c) < 0x20 and c not in "\r\n") or 0x7F <= ord(c) < 0xA0})
    assert not bad, f"control bytes written: {bad}"
    assert not re.search("[\u2500-\u257f]", text), "box drawing written"


def test_a_whole_game_with_corrections_failures_versions_undo_and_the_ending(tmp_path):
    player = Player(tmp_path, "--faults", "0.5", "--seed", SEED, "--budget", "1")
    opening = player.start()
    assert "The Lighthouse Keeper" in opening and "Type /help" in opening
    said = player.play(WALK[0])
    assert "Rocky Shore" in said

    # another version, the count of versions, going back to the first; then undo and play on
    said = player.say("/regenerate")
    while "failed" in said:
        said = player.say("/regenerate")
    assert "(another version of turn 1: version 2)" in said
    assert "Turn 1 has 2 versions; version 2 is chosen" in player.say("/versions")
    assert "(turn 1: version 1 of 2 chosen)" in player.say("/choose 1")
    assert "/choose needs the number of a version" in player.say("/choose 9")
    assert "You carry: nothing." in player.say("/look-state")
    player.play(WALK[1])
    player.play(WALK[2])  # take rope
    assert "You carry: coil of rope." in player.say("/look-state")
    assert "(undone: the last committed turn is taken back)" in player.say("/undo")
    assert "You carry: nothing." in player.say("/look-state")
    for command in WALK[2:]:
        said = player.play(command)
    pack = load_pack("lighthouse")
    ending = next(e for e in pack.endings.values() if e.title in said)
    assert ending.text.strip()[:40] in said
    assert "The story is over" in player.say("wait")
    assert "Nothing to retry" in player.say("/retry")
    assert "Unknown command '/dance'" in player.say("/dance")
    farewell = player.quit()
    save = Path(re.search(r"Saved to (.+?\.jsonl)\.", farewell).group(1))
    _plain(player.raw)

    text = player.raw.decode("utf-8")
    corrections = re.findall(r"Correcting turn \d+[^\r\n]*", text)
    failures = re.findall(
        r"Turn \d+ failed after its correction budget: [^\r\n]*[^.]\. Nothing changed\. "
        r"Type /retry to play it again, or type another command\.",
        text,
    )  # what happened, in the words the app's status row and the transcript use, then how to retry
    assert corrections and failures, "the seed should give corrections and failed turns; pick another"
    assert len(corrections) == len(set(corrections)), "a correction line was printed twice"
    assert len(failures) == len(re.findall(r"\nTurn \d+ failed", text)), "each failure says what and how to retry"
    assert ".." not in text.replace("...", "")
    lines = [line for line in text.split("\r\n") if line.strip()]
    shown = Counter(line for prose in _commits(save) for line in prose.splitlines() if line.strip())
    printed = Counter(line for line in lines if line in shown)
    assert printed == shown, "each paragraph of prose is printed once each time the game shows its turn"
    assert all(a != b for a, b in zip(lines, lines[1:], strict=False)), "a line was printed twice in a row"


def test_a_resumed_story_stands_where_it_stopped_and_undo_goes_on(tmp_path):
    player = Player(tmp_path, "--seed", SEED)
    player.start()
    for command in WALK[:3]:
        player.play(command)
    player.quit(None)  # Control-D also saves and leaves
    again = Player(tmp_path, "--resume", "latest")
    opening = again.start()
    assert "The Lighthouse Keeper, resumed. The story so far ends, at turn 3:" in opening and "rope" in opening
    assert "You carry: coil of rope." in again.say("/look-state")
    assert "(undone" in again.say("/undo")
    assert "You carry: nothing." in again.say("/look-state")
    again.quit()
    _plain(again.raw)


def test_look_state_says_what_the_side_panel_shows():
    pack = load_pack("lighthouse")
    from storyloom.engine.state import initial_state

    lines = describe_state(pack, initial_state(pack))
    assert lines[0] == "You are at: Rocky Shore."
    assert lines[1] == "You carry: nothing."
    assert any(line.startswith("Flags: ") for line in lines)


def test_the_setting_chooses_plain_lines_without_the_flag(tmp_path):
    (tmp_path / "config" / "storyloom").mkdir(parents=True)
    (tmp_path / "config" / "storyloom" / "config.toml").write_text("screen_reader = true\n", encoding="utf-8")
    player = Player(tmp_path, flag=None)
    assert "Type /help for the commands." in player.start()
    assert "Rocky Shore" in player.play("look")
    player.quit()
    _plain(player.raw)


def test_a_dumb_terminal_is_offered_plain_lines(tmp_path):
    player = Player(tmp_path, flag=None, term="dumb")
    assert "Play with plain lines, for a screen reader? [Y/n]" in player._read("[Y/n] ")
    assert "Type /help for the commands." in player.say("")
    player.quit()
    _plain(player.raw)


@pytest.mark.slow
def test_control_c_cancels_the_turn_being_written_and_retry_plays_it(tmp_path):
    player = Player(tmp_path, "--pace", "0.2")  # slow enough to cancel mid-turn
    player.start()
    player.child.sendline("look")
    player.child.expect_exact(b"look")
    player.child.sendintr()
    said = player._read(PROMPT)
    assert "Turn 1 cancelled; nothing changed. Type /retry to play it again." in said
    assert "Rocky Shore:" not in said  # nothing of the cancelled turn was printed
    assert "Rocky Shore" in player.say("/retry")
    player.quit()
    _plain(player.raw)


def test_branches_are_listed_made_and_switched_in_plain_sentences(tmp_path):
    """The branch commands answer as the rest do: sentences, without headless play's `storyloom:`
    prefix on every line or its `; skipped` (a commands file's word: here nothing is skipped)."""
    player = Player(tmp_path, "--seed", SEED)
    player.start()
    for command in WALK[:3]:  # look, examine the boat, take rope
        player.play(command)
    said = player.say("/branch 1")
    assert "(branch 2: continued from after turn 1 of branch 1, which is kept)" in said
    assert "The story so far ends, at turn 1:" in said and "Rocky Shore" in said  # where it stands, heard once
    assert "You carry: nothing." in player.say("/look-state")
    player.play("north")
    listing = player.say("/branches")
    assert "Branch 1: the story as first played; 3 turns." in listing
    assert "Branch 2: from turn 1 of branch 1 (look); 2 turns, being played." in listing
    said = player.say("/switch 1")
    assert "(branch 1: back where it stood, after turn 3)" in said
    assert "The story so far ends, at turn 3:" in said and "coil of rope" in said
    assert "You carry: coil of rope." in player.say("/look-state")
    assert "Cannot switch: there is no branch 9 (the story has 1 to 2)." in player.say("/switch 9")
    said = player.say("/branch 0")
    assert "(branch 3: the story from its start again; branch 1 is kept)" in said
    assert "Someone has to light the lamp." in said  # no turn stands: the intro
    assert "/branch needs the number of a committed turn on this path (0: the start)." in player.say("/branch")
    assert "/choose needs the number of a version of the latest turn" in player.say("/choose 5")
    player.quit()
    _plain(player.raw)
    answers = player.raw.decode("utf-8").split(PROMPT, 1)[1]  # after the opening ("storyloom: saving to …")
    assert "storyloom:" not in answers and "skipped" not in answers
