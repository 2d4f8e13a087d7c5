"""Hostile model text never acts on a terminal: headless stdout, replay, verify and both exports.

A model can write escape sequences (colours, cursor moves, OSC 52 clipboard writes,
OSC 8 links, window titles), C0/C1 controls, bidi overrides, zero-width characters and
markup of every kind, in its prose, its suggestions, or echoed in a player's command.
Every sample of `tests/hardening/corpus.py` is played as a turn through the real
headless runner into a real save, then every command that prints that save is run.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyloom.engine.safety import safe_text
from storyloom.tui.cli import main
from tests.conftest import Reply, ScriptedNarrator, turn_json
from tests.hardening.corpus import ALL, CONTROL_SEQUENCES, MARKUP, assert_inert, unsafe_characters
from tests.hardening.figures import tally
from tests.hardening.play import play_into_save

SAMPLES = list(ALL.items())


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def hostile_replies() -> list[Reply]:
    """One committed turn per sample: the sample in the prose and in a suggestion."""
    return [
        Reply(structured=turn_json(f"You look around. {sample} The sea is grey.", suggestions=[sample[:80], "look"]))
        for _, sample in SAMPLES
    ]


@pytest.fixture
def hostile_save(tmp_path):
    """A save of one turn per corpus sample (the player's command carries the sample too)."""
    commands = [f"look {sample}".replace("\n", " ") for _, sample in SAMPLES]
    save, out, err, code = asyncio.run(
        play_into_save(tmp_path, lambda pack: ScriptedNarrator(hostile_replies()), commands)
    )
    assert code == 0, err
    return save, out, err


@pytest.mark.parametrize("name", list(CONTROL_SEQUENCES))
def test_safe_text_removes_every_control_sequence_and_keeps_the_visible_word(name):
    cleaned = safe_text(CONTROL_SEQUENCES[name])
    assert_inert(cleaned, name)
    assert "VISIBLE" in cleaned
    tally("hostile text: escape/control samples (safe_text)")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_safe_text_of_any_text_is_inert_and_stable(text):
    cleaned = safe_text(text)
    assert_inert(cleaned)
    assert safe_text(cleaned) == cleaned
    tally("hostile text: random text (hypothesis)")


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(categories=["L", "N", "P", "S", "Zs"], exclude_characters="\x1b\x9b")))
def test_readable_text_passes_through_unchanged(text):
    if unsafe_characters(text):  # a few symbols (bidi marks) are in these categories; those go
        return
    assert safe_text(text) == text
    tally("hostile text: random readable text kept as is")


def test_headless_stdout_and_stderr_carry_no_control_sequence(hostile_save):
    _, out, err = hostile_save
    assert_inert(out, "headless stdout")
    assert_inert(err, "headless stderr")
    assert out.count("VISIBLE") >= 2 * len(SAMPLES)  # the command echo and the prose of each turn
    for name, sample in MARKUP.items():
        assert sample in out, f"{name}: markup was not printed as the text written"
    tally("hostile text: headless transcript (prose + command + suggestions)", len(SAMPLES))


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_exports_carry_no_control_sequence(hostile_save, fmt, capsys):
    save, _, _ = hostile_save
    assert main(["export", str(save), "--format", fmt]) == 0
    captured = capsys.readouterr()
    assert_inert(captured.out, f"export --format {fmt}")
    assert_inert(captured.err, f"export --format {fmt} (stderr)")
    if fmt == "json":
        data = json.loads(captured.out)
        assert len(data["turns"]) == len(SAMPLES)
        for turn in data["turns"]:
            assert "VISIBLE" in turn["narrative"] and "VISIBLE" in turn["suggestions"][0]
            assert_inert(turn["narrative"] + "".join(turn["suggestions"]) + turn["player_input"])
    else:
        assert captured.out.count("VISIBLE") >= len(SAMPLES)
    tally(f"hostile text: export {fmt}", len(SAMPLES))


def test_markdown_export_shows_model_links_and_images_as_text(hostile_save, capsys):
    save, _, _ = hostile_save
    assert main(["export", str(save), "--format", "md"]) == 0
    text = capsys.readouterr().out
    active = [
        m.group(0)
        for m in re.finditer(
            r"(?<!\\)!?(?<!\\)\[[^\]\n]*(?<!\\)\]\([^)\n]*\)"
            r"|(?<!\\)<(?:https?|file|javascript):[^>\n]*(?<!\\)>"
            r"|(?<!\\)<(?:a|img)\b[^>\n]*>",
            text,
        )
    ]
    assert not active, f"model text became a live Markdown link, image or HTML tag: {active}"
    assert "VISIBLE" in text
    tally("hostile text: markdown links/images/html in md export", 5)


def test_replay_and_verify_print_no_control_sequence(hostile_save, capsys):
    save, _, _ = hostile_save
    assert main(["replay", str(save), "--headless", "--speed", "inf"]) == 0
    assert main(["verify", str(save)]) == 0
    captured = capsys.readouterr()
    assert_inert(captured.out, "replay/verify stdout")
    assert_inert(captured.err, "replay/verify stderr")
    assert captured.out.count("VISIBLE") >= len(SAMPLES)
    tally("hostile text: replay --headless and verify", len(SAMPLES))


def test_a_hostile_story_pack_prints_inert_everywhere(capsys, tmp_path):
    from pathlib import Path

    hostile = str(Path(__file__).parent / "packs" / "hostile.toml")
    assert main(["check-story", hostile]) == 0
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    main(["play", "--headless", "--story", hostile, "--commands", str(commands), "--save", str(tmp_path / "h.jsonl")])
    main(["export", str(tmp_path / "h.jsonl")])
    captured = capsys.readouterr()
    assert_inert(captured.out, "check-story/play/export stdout")
    assert_inert(captured.err, "check-story/play/export stderr")
    tally("hostile text: hostile story pack (check-story, play, export)", 3)


def test_a_refused_resume_prints_a_doctored_save_s_text_inert(hostile_save, tmp_path, capsys):
    from tests.hardening.mutate import rechain

    save, _, _ = hostile_save
    records = [json.loads(line) for line in save.read_bytes().splitlines()]
    commit = next(r for r in records if r["kind"] == "turn_committed")
    commit["data"]["state_hash"] = "\x1b[31;1mred\x1b]0;title\x07\u202e"
    save.write_bytes(rechain(records))
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands), "--resume", str(save)]) == 2
    captured = capsys.readouterr()
    assert "not the recorded" in captured.err
    assert_inert(captured.out + captured.err, "a refused resume")
    tally("hostile text: doctored save text in a refused resume")


def test_a_broken_pack_s_problems_print_inert_in_headless_play(tmp_path, capsys):
    pack = tmp_path / "bad.toml"
    pack.write_text(
        'id = "bad"\ntitle = "t"\nintro = "i"\nstart = "\\u001b]0;x\\u0007hall"\n'
        '[rooms."\\u001b[2Jhall"]\nname = "Hall"\ndescription = "d"\nexits = { north = "away" }\n',
        encoding="utf-8",
    )
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    assert main(["play", "--headless", "--story", str(pack), "--commands", str(commands)]) == 2
    captured = capsys.readouterr()
    assert "problem" in captured.err
    assert_inert(captured.out + captured.err, "a broken pack's problems")
    tally("hostile text: broken pack problems in headless play")


@pytest.mark.parametrize("case", ["doctored save", "broken pack"])
def test_the_app_s_start_up_errors_print_inert(case, hostile_save, tmp_path, capsys):
    from tests.hardening.mutate import rechain

    if case == "doctored save":
        save, _, _ = hostile_save
        records = [json.loads(line) for line in save.read_bytes().splitlines()]
        next(r for r in records if r["kind"] == "turn_committed")["data"]["state_hash"] = "\x1b]0;title\x07"
        save.write_bytes(rechain(records))
        argv = ["play", "--resume", str(save)]
    else:
        pack = tmp_path / "bad.toml"
        pack.write_text(
            'id = "bad"\ntitle = "t"\nintro = "i"\nstart = "hall"\n[rooms."\\u001b[2Jhall"]\n'
            'name = "Hall"\ndescription = "d"\nexits = { north = "away" }\n',
            encoding="utf-8",
        )
        argv = ["play", "--story", str(pack)]
    assert main(argv) == 2  # refused before the app starts
    captured = capsys.readouterr()
    assert_inert(captured.out + captured.err, f"the app's start-up error ({case})")
