"""Headless play: commands in, safe prose out, events as JSON Lines, and exit codes a script can trust."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from storyloom.engine.events import event_from_json
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import initial_state
from storyloom.tui.cli import main
from storyloom.tui.cli.headless import play_commands
from storyloom.tui.session import PlaySession

PACKS = Path(__file__).parent / "packs"
WALKS = Path(__file__).parent / "walkthroughs"
EXAMPLE = str(PACKS / "example.toml")


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    """Saves and config go to a temporary folder, never the tester's own."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def commands_file(tmp_path):
    def write(*lines: str) -> str:
        path = tmp_path / "commands.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(path)

    return write


def headless(*args: str) -> int:
    return main(["play", "--headless", *args])


def test_it_prints_the_intro_then_the_prose_of_each_turn(commands_file, capsys):
    assert headless("--story", EXAMPLE, "--commands", commands_file("take candle", "east")) == 0
    out = capsys.readouterr().out
    assert out.startswith("Grandmother's Cellar\n\nYour grandmother's house")
    assert out.index("> take candle") < out.index("candle", out.index("> take candle") + 14) < out.index("> east")
    assert "Back Hall" in out


def test_every_event_is_written_as_one_json_line(commands_file, tmp_path, capsys):
    events = tmp_path / "events.jsonl"
    assert headless("--story", EXAMPLE, "--commands", commands_file("look", "take key"), "--events", str(events)) == 0
    lines = events.read_text(encoding="utf-8").splitlines()
    parsed = [event_from_json(json.loads(line)) for line in lines]
    assert [e.event for e in parsed].count("turn_committed") == 2
    assert parsed[0].event == "turn_started" and parsed[-1].event == "turn_committed"
    assert parsed[-1].state["items"]["key"] == "player"


def test_the_same_commands_and_seed_write_the_same_events(commands_file, tmp_path):
    cmds = str(WALKS / "lighthouse.txt")
    for name in ("a", "b"):
        assert headless("--commands", cmds, "--seed", "5", "--faults", "0.5", "--events", str(tmp_path / name)) == 0
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_corrections_are_reported_on_stderr_and_stdout_stays_a_transcript(capsys):
    assert headless("--commands", str(WALKS / "lighthouse.txt"), "--seed", "5", "--faults", "0.5") == 0
    captured = capsys.readouterr()
    assert "correction 1 of 2" in captured.err and "rejected" in captured.err
    assert "the correction keeps the prose" in captured.err and "the correction rewrites the prose" in captured.err
    assert "storyloom:" not in captured.out and "THE END" in captured.out


def test_a_turn_that_fails_after_its_budget_exits_3_and_stops_there(commands_file, capsys):
    # Seed 8 with faults 0.5: the very first "look" fails three times (documented in docs/playing.md).
    code = headless("--commands", commands_file("look", "north"), "--seed", "8", "--faults", "0.5")
    captured = capsys.readouterr()
    assert code == 3
    assert "turn 1 failed after its correction budget" in captured.err
    assert "> north" not in captured.out


def test_budget_zero_fails_on_the_first_fault_without_correcting(commands_file, capsys):
    code = headless("--commands", commands_file("look"), "--seed", "8", "--faults", "0.5", "--budget", "0")
    captured = capsys.readouterr()
    assert code == 3 and "correction 1" not in captured.err


async def test_play_stops_at_a_failed_turn_and_the_state_stays_valid():
    pack = load_pack(EXAMPLE)
    narrator = OfflineNarrator(pack, faults=1.0, fault_kinds=["truncated"], stubborn=1.0)
    session = Session(pack, narrator, budget=1)
    seen = []
    out, err = io.StringIO(), io.StringIO()
    code = await play_commands(
        PlaySession.around(session, on_event=seen.append), ["take candle", "east"], out=out, err=err
    )
    assert code == 3
    assert seen[-1].event == "turn_failed" and session.state == initial_state(pack)
    assert "> east" not in out.getvalue()


async def test_the_event_hook_sees_each_event_before_it_is_printed():
    pack = load_pack(EXAMPLE)
    out = io.StringIO()
    printed_when_seen = []
    session = Session(pack, OfflineNarrator(pack))
    await play_commands(
        PlaySession.around(session, on_event=lambda e: printed_when_seen.append((e.event, out.getvalue()))),
        ["look"],
        out=out,
        err=io.StringIO(),
    )
    committed = [text for name, text in printed_when_seen if name == "turn_committed"]
    assert committed and "Kitchen" not in committed[0].split("> look", 1)[1]


def test_the_story_ending_is_printed_and_play_stops_there(commands_file, capsys):
    code = headless(
        "--story",
        EXAMPLE,
        "--commands",
        commands_file("take candle", "light candle", "take key", "e", "open door", "d", "take jar", "wait"),
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Plums for Tea" in out and "cutting the bread" in out
    assert "> wait" not in out


def test_undo_takes_back_the_last_committed_turn(commands_file, capsys, tmp_path):
    events = tmp_path / "events.jsonl"
    code = headless(
        "--story", EXAMPLE, "--commands", commands_file("take candle", "/undo", "inventory"), "--events", str(events)
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "(undone" in out
    after_undo = out.split("> inventory", 1)[1]
    assert "candle" not in after_undo
    assert '"turn_undone"' in events.read_text()


def test_regenerate_choose_and_play_on_then_the_save_verifies_and_resumes_in_the_chosen_world(
    commands_file, tmp_path, capsys
):
    save, events = tmp_path / "s.jsonl", tmp_path / "events.jsonl"
    walk = commands_file("take rope", "/regenerate", "/regenerate", "/regenerate", "/choose 2", "north")
    code = headless(
        "--story", "lighthouse", "--seed", "7", "--commands", walk, "--save", str(save), "--events", str(events)
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("(another version of turn 1: version") == 3 and "(turn 1: version 2 of 4 chosen)" in out
    assert out.index("(turn 1: version 2 of 4 chosen)") < out.index("> north")
    chosen = next(json.loads(line) for line in events.read_text().splitlines() if '"alternative_chosen"' in line)
    assert main(["verify", str(save)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("sound")
    assert headless("--resume", str(save), "--commands", commands_file("inventory")) == 0
    after = capsys.readouterr().out.split("> inventory", 1)[1]
    assert ("rope" in after) == (chosen["state"]["items"]["rope"] == "player")
    assert main(["verify", str(save)]) == 0


def test_regenerate_and_choose_say_why_when_there_is_nothing_to_do(commands_file, capsys):
    code = headless(
        "--story", EXAMPLE, "--commands", commands_file("/regenerate", "look", "/choose 3", "/choose x", "east")
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "nothing to regenerate" in captured.err
    assert captured.err.count("/choose needs the number of a version of the latest turn (1 to 1)") == 2
    assert captured.out.count("> ") == 2  # play went on


def test_blank_lines_comments_and_unknown_meta_commands_are_skipped(commands_file, capsys):
    code = headless("--story", EXAMPLE, "--commands", commands_file("", "# a comment", "/frobnicate", "look"))
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.count("> ") == 1 and "unknown meta-command '/frobnicate'" in captured.err


def test_commands_can_come_from_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("take key\ni\n"))
    assert headless("--story", EXAMPLE, "--commands", "-") == 0
    assert "brass key" in capsys.readouterr().out.split("> i", 1)[1]


def test_model_and_pack_text_is_made_safe_before_it_is_printed(commands_file, capsys):
    assert headless("--story", str(PACKS / "hostile.toml"), "--commands", commands_file("look")) == 0
    out = capsys.readouterr().out
    for bad in ("\x1b", "\x07", "\u202e", "\u200b", "\x9b", "\u061c"):
        assert bad not in out
    assert "Hostile" in out and "in red" in out


@pytest.mark.parametrize(
    "args",
    [
        ["--commands", "/no/such/commands.txt"],
        ["--story", "no-such-story", "--commands", "-"],
        ["--story", str(PACKS / "broken_exit.toml"), "--commands", "-"],
        [],
    ],
)
def test_bad_input_files_exit_2_with_a_message(args, capsys):
    assert headless(*args) == 2
    assert capsys.readouterr().err.strip()


@pytest.mark.parametrize("args", [["--faults", "2"], ["--budget", "-1"], ["--seed", "many"]])
def test_bad_arguments_exit_2_with_a_message(args, capsys):
    with pytest.raises(SystemExit) as raised:
        headless("--commands", "-", *args)
    assert raised.value.code == 2
    assert "storyloom:" in capsys.readouterr().err


def test_a_bad_pack_prints_its_problems(capsys):
    assert headless("--story", str(PACKS / "broken_exit.toml"), "--commands", "-") == 2
    assert "rooms.hall.exits.north: exit leads to unknown room 'attic'" in capsys.readouterr().err


def test_an_unwritable_events_file_exits_2(commands_file, tmp_path, capsys):
    target = tmp_path / "missing-dir" / "events.jsonl"
    assert headless("--commands", commands_file("look"), "--events", str(target)) == 2
    assert "cannot write the events file" in capsys.readouterr().err


def test_headless_play_never_imports_textual():
    code = "import sys, tui.cli.headless; sys.exit('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_the_repair_paths_the_docs_promise_for_seed_5(commands_file, capsys):
    assert headless("--commands", commands_file("look", "take rope", "north"), "--seed", "5", "--faults", "0.5") == 0
    err = capsys.readouterr().err
    assert "turn 2: the correction keeps the prose" in err
    assert "turn 3: correction 2 of 2" in err and "turn 3: the correction rewrites the prose" in err


def test_a_pack_given_by_path_plays_exactly_as_the_built_in_one(tmp_path):
    story_file = Path(__file__).parents[1] / "engine" / "stories" / "lighthouse.toml"
    cmds = str(WALKS / "lighthouse.txt")
    assert headless("--commands", cmds, "--seed", "2", "--events", str(tmp_path / "by-id")) == 0
    assert (
        headless("--story", str(story_file), "--commands", cmds, "--seed", "2", "--events", str(tmp_path / "by-path"))
        == 0
    )
    assert (tmp_path / "by-id").read_bytes() == (tmp_path / "by-path").read_bytes()


def test_a_reader_that_leaves_early_stops_headless_play_quietly(tmp_path):
    import subprocess
    import sys

    env = {**__import__("os").environ, "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    command = f"yes look | head -300 | {sys.executable} -m storyloom.tui.cli play --headless --commands - | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.strip() == "The Lighthouse Keeper"
    assert "Errno" not in done.stderr and "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
