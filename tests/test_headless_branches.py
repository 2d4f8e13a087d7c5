"""Headless play's branch meta-commands, `/branch N`, `/branches`, `/switch K`, and the issue's walk
through the command line: play, branch, switch back, quit, resume, verify, replay and export per path."""

from __future__ import annotations

import json

from storyloom.tui.cli import main
from tests.test_headless import commands_file, headless, private_dirs  # noqa: F401 - fixtures

SIX = ["look", "take rope", "north", "up", "west", "take key"]


def test_branch_switch_and_branches_play_two_paths_and_say_where_they_fork(commands_file, tmp_path, capsys):  # noqa: F811
    save = tmp_path / "s.jsonl"
    walk = commands_file(*SIX, "/branch 2", "north", "/branches", "/switch 1", "/branches", "inventory")
    assert headless("--story", "lighthouse", "--seed", "7", "--commands", walk, "--save", str(save)) == 0
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    assert "(branch 2: continued from after turn 2 of branch 1, which is kept)" in out
    assert "(branch 1: back where it stood, after turn 6)" in out
    assert out.index("(branch 2:") < out.index("(branch 1: back") < out.index("> inventory")
    assert err.count("storyloom: branch 1: the story as first played; 6 turns") == 2
    assert "storyloom: branch 2: from turn 2 of branch 1 (take rope); 3 turns, being played" in err
    assert "storyloom: branch 1: the story as first played; 6 turns, being played" in err
    assert "iron key" in out.split("> inventory", 1)[1]  # branch 1's world: the key taken at turn 6


def test_branch_and_switch_refused_say_why_and_play_goes_on(commands_file, capsys):  # noqa: F811
    walk = commands_file("look", "/branch 9", "/branch x", "/switch 2", "/switch", "north")
    assert headless("--story", "lighthouse", "--seed", "7", "--commands", walk) == 0
    captured = capsys.readouterr()
    assert "cannot branch: turn 9 is not on the path of branch 1 (its turns: 1); skipped" in captured.err
    assert "/branch needs the number of a committed turn on this path (0: the start); skipped" in captured.err
    assert "cannot switch: there is no branch 2 (the story has 1 to 1); skipped" in captured.err
    assert "cannot switch: there is no branch 0 (the story has 1 to 1); skipped" in captured.err
    assert captured.out.count("\n> ") == 2


def test_the_issue_walk_through_the_command_line(commands_file, tmp_path, capsys):  # noqa: F811
    """Six turns, continue from turn 2, three turns there, switch back, quit; resume; both branches
    listed; verify sound; replay and export show each path."""
    save = tmp_path / "walk.jsonl"
    first = commands_file(*SIX, "/branch 2", "north", "up", "take lamp", "/switch 1", "/quit", "never played")
    assert headless("--story", "lighthouse", "--seed", "7", "--commands", first, "--save", str(save)) == 0
    assert "> never played" not in capsys.readouterr().out
    assert headless("--resume", str(save), "--commands", commands_file("/branches")) == 0
    err = capsys.readouterr().err
    assert "branch 1: the story as first played; 6 turns, being played" in err
    assert "branch 2: from turn 2 of branch 1 (take rope); 5 turns" in err
    assert main(["verify", str(save)]) == 0
    verified = capsys.readouterr().out
    assert "branches: 2, each judged from its fork; branch 1 was played last" in verified
    assert verified.rstrip().endswith("sound")
    for branch, inputs in ((1, SIX), (2, [*SIX[:2], "north", "up", "take lamp"])):
        assert main(["export", str(save), "--format", "json", "--branch", str(branch)]) == 0
        exported = json.loads(capsys.readouterr().out)
        assert [t["player_input"] for t in exported["turns"]] == inputs
        assert main(["replay", "--headless", "--branch", str(branch), str(save)]) == 0
        replayed = capsys.readouterr()
        assert [line[2:] for line in replayed.out.splitlines() if line.startswith("> ")] == inputs
        assert (
            f"replaying branch {branch} of 2" in replayed.err
            and "every decision and state hash matches" in replayed.err
        )
    assert main(["diff", str(save), "--branch", "1", "--branch", "2"]) == 1
    diff = capsys.readouterr().out
    assert "They share 2 turns and fork after turn 2 (> take rope)." in diff
    assert "After the fork, A plays: north, up, west, take key" in diff
    assert "                B plays: north, up, take lamp" in diff
    assert "The worlds at the ends (A │ B):" in diff and "  iron key: the player's inventory │ " in diff
    assert main(["export", str(save), "--branch", "3"]) == 2
    assert "the save has no branch 3 (it has branches 1 to 2)" in capsys.readouterr().err
