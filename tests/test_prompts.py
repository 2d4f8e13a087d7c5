"""The model narrators take every word they send from the prompt files, so editing a file changes
what every model reads, and no narrator keeps its own copy of the wording."""

from __future__ import annotations

from dataclasses import replace
from string import Template

import pytest

from storyloom.engine.narration import Exchange, NarrationRequest
from storyloom.engine.narrators import prompts
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.narrators.openai import OpenAINarrator
from storyloom.engine.rules import judge
from storyloom.engine.state import initial_state
from tests.conftest import turn_json

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]


def narrators():
    return [
        AnthropicNarrator(api_key="sk-ant-test-key"),
        AnthropicNarrator(api_key="sk-ant-test-key", thinking=True),
        OpenAINarrator(),
        OpenAINarrator(output="json"),
    ]


def request_after_one_turn(pack) -> NarrationRequest:
    """`look` asked after a committed `take lamp`: the story so far holds one command, and one is new."""
    before = initial_state(pack)
    verdict = judge(turn_json("You lift the brass lamp.", TAKE_LAMP), before, pack)
    assert verdict.ok and verdict.turn is not None and verdict.after is not None
    return NarrationRequest(pack, verdict.after, (Exchange("take lamp", verdict.turn),), "look", turn=2)


def user_texts(messages) -> list[str]:
    """Every text the player's side of the conversation says, in order, whatever the API's shape."""
    texts = []
    for message in messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts += [block["text"] for block in blocks if block.get("type") == "text"]
    return texts


@pytest.mark.parametrize("narrator", narrators(), ids=repr)
def test_the_story_so_far_and_the_new_command_are_worded_by_the_prompt_files(pack, narrator):
    request = request_after_one_turn(pack)
    committed, current = user_texts(narrator.messages(request))
    assert committed == prompts.command_message("take lamp") == "Player command: take lamp"
    assert current == prompts.player_message("look", request.state, pack)
    assert current.startswith(prompts.command_message("look") + "\n\nCurrent state (JSON):\n")


@pytest.mark.parametrize("narrator", narrators(), ids=repr)
def test_rewording_the_command_file_rewords_every_command_a_narrator_sends(pack, narrator, monkeypatch):
    files = prompts._template

    def reworded(name: str) -> Template:
        return Template("The player says: $command") if name == "command" else files(name)

    monkeypatch.setattr(prompts, "_template", reworded)
    committed, current = user_texts(narrator.messages(request_after_one_turn(pack)))
    assert committed == "The player says: take lamp"
    assert current.startswith("The player says: look\n\n")
    assert not any("Player command" in text for text in (committed, current))


@pytest.mark.parametrize("narrator", narrators(), ids=repr)
def test_another_version_is_the_turns_own_request_with_the_instruction_after_it(pack, narrator):
    """Cache-friendly: the system prompt, history and command of the turn come first and unchanged;
    only then the instruction to write another version, naming the versions already written."""
    request = request_after_one_turn(pack)
    again = replace(request, alternative=3, earlier_versions=("You look around.", "Grey water, black rocks."))
    plain, other = narrator.messages(request), narrator.messages(again)
    assert other[: len(plain) - 1] == plain[:-1]
    *_, current = user_texts(other)
    instruction = prompts.regenerate_message(again)
    assert current.endswith(instruction) or user_texts(other)[-1] == instruction
    assert prompts.player_message("look", request.state, pack) in "\n\n".join(user_texts(other))
    assert "version 3" in instruction and "Version 2:\nGrey water, black rocks." in instruction
    assert instruction not in "\n\n".join(user_texts(plain))
