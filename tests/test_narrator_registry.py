"""A narrator is one entry in `storyloom.tui.narrators.NARRATORS`: the command line offers it, its help
describes it, the settings accept and check it, the factory builds it and `storyloom config` shows its
defaults, all from that entry. A provider added there (here a made-up one) is offered everywhere."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from storyloom.tui.cli import build_parser, main
from storyloom.tui.narrators import NARRATORS, NarratorEntry
from storyloom.tui.session import create_narrator
from storyloom.tui.settings import Settings, SettingsError, config_path, load_settings
from storyloom.tui.testing.narrators import GatedNarrator

DEFAULT_MODEL = "lantern-2"
"""The made-up provider's default model (its entry names this module as its own)."""
DOCS = Path(__file__).resolve().parent.parent / "docs"


def _lantern(settings: Settings, pack: object, interactive: bool) -> GatedNarrator:
    return GatedNarrator([], name="lantern", model=settings.model or DEFAULT_MODEL)


LANTERN = NarratorEntry(
    name="lantern",
    summary="a made-up provider for this test",
    build=_lantern,
    options=frozenset({"model", "base_url", "max_tokens"}),
    module=__name__,
    key_var="LANTERN_API_KEY",
    base_url_var="LANTERN_BASE_URL",
)


@pytest.fixture
def lantern(monkeypatch):
    monkeypatch.setitem(NARRATORS, "lantern", LANTERN)
    for var in ("STORYLOOM_NARRATOR", "STORYLOOM_MODEL", "STORYLOOM_BASE_URL", "LANTERN_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return LANTERN


def _play_flag(name: str) -> argparse.Action:
    play = build_parser()._subparsers._group_actions[0].choices["play"]  # type: ignore[union-attr]
    return next(action for action in play._actions if name in action.option_strings)


def test_a_registered_narrator_is_offered_and_described_by_the_command_line(lantern):
    narrator = _play_flag("--narrator")
    assert "lantern" in narrator.choices
    assert "lantern (a made-up provider for this test)" in " ".join(str(narrator.help).split())
    assert _play_flag("--model").help.startswith("anthropic/openai/lantern:")
    assert not _play_flag("--thinking").help.startswith("anthropic/lantern")  # it does not take that one
    args = build_parser().parse_args(["play", "--narrator", "lantern", "--model", "lantern-3"])
    assert args.narrator == "lantern"


def test_without_its_entry_the_command_line_refuses_it(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["play", "--narrator", "lantern"])
    assert "invalid choice: 'lantern'" in capsys.readouterr().err


def test_the_settings_accept_its_name_its_table_and_its_key_variable(lantern, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('narrator = "lantern"\n[lantern]\nmodel = "lantern-3"\n', encoding="utf-8")
    env = {"LANTERN_API_KEY": "planted-key", "LANTERN_BASE_URL": "https://lantern.example/v1"}
    settings = load_settings(None, env=env, path=path)
    assert (settings.narrator, settings.model, settings.base_url) == (
        "lantern",
        "lantern-3",
        "https://lantern.example/v1",
    )
    assert settings.api_key == "planted-key" and settings.masked()["api_key"] == "set (LANTERN_API_KEY)"
    built = create_narrator(settings, None, interactive=False)  # type: ignore[arg-type]
    assert (built.name, built.model) == ("lantern", "lantern-3")


def test_the_settings_check_its_table_and_list_it_among_the_narrators(lantern, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[lantern]\nmodel = ""\n', encoding="utf-8")
    with pytest.raises(SettingsError, match=r"\[lantern\]: model must be a non-empty string"):
        load_settings(None, env={}, path=path)
    path.write_text('[lantern]\napi_key = "planted-key"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="set LANTERN_API_KEY in the environment") as refused:
        load_settings(None, env={}, path=path)
    assert "planted-key" not in str(refused.value)
    path.write_text('narrator = "lamp"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="narrator must be one of offline, anthropic, openai, lantern, not 'lamp'"):
        load_settings(None, env={}, path=path)


def test_an_unregistered_name_is_refused_with_the_registered_ones(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('narrator = "lantern"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="narrator must be one of offline, anthropic, openai, not 'lantern'"):
        load_settings(None, env={}, path=path)


def test_storyloom_config_shows_its_default_model(lantern, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config_path().parent.mkdir(parents=True)
    config_path().write_text('narrator = "lantern"\n', encoding="utf-8")
    assert main(["config"]) == 0
    lines = {line.split(" = ")[0]: line for line in capsys.readouterr().out.splitlines() if " = " in line}
    assert lines["model"].startswith(f'model = "{DEFAULT_MODEL}"') and "lantern narrator's default" in lines["model"]
    assert lines["api_key"].startswith('api_key = "not set (LANTERN_API_KEY)"')


@pytest.mark.parametrize("name", list(NARRATORS))
def test_the_narrators_page_tells_how_to_play_with_every_registered_narrator(name):
    assert f"--narrator {name}" in (DOCS / "narrators.md").read_text(encoding="utf-8")


def test_the_openai_outputs_the_settings_allow_are_the_ones_the_narrator_speaks():
    from storyloom.engine.narrators.openai import OUTPUTS as SPOKEN
    from storyloom.tui.settings import OUTPUTS

    assert OUTPUTS == SPOKEN
    assert tuple(_play_flag("--output").choices) == SPOKEN
