"""Settings as a player meets them: a config file, environment variables, flags, and `storyloom config`."""

from __future__ import annotations

import argparse

import pytest

from storyloom.engine.narrators.anthropic import DEFAULT_MODEL as CLAUDE
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.narrators.openai import DEFAULT_BASE_URL, OpenAINarrator
from storyloom.tui.cli import build_parser, main
from storyloom.tui.session import create_narrator
from storyloom.tui.settings import Settings, SettingsError, config_path, load_settings

PLANTED = "sk-ant-api03-PLANTED-SECRET-never-print-me"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """`storyloom config` reads the real environment: keep the developer's own settings out of it."""
    for var in (
        "STORYLOOM_NARRATOR",
        "STORYLOOM_MODEL",
        "STORYLOOM_BASE_URL",
        "STORYLOOM_BUDGET",
        "STORYLOOM_PACE",
        "STORYLOOM_THEME",
        "STORYLOOM_OUTPUT",
        "STORYLOOM_MAX_TOKENS",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)


def flags(*words: str) -> argparse.Namespace:
    return build_parser().parse_args(["play", *words])


def write(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_without_a_file_or_environment_the_defaults_play_offline(tmp_path):
    settings = load_settings(flags(), env={}, path=tmp_path / "missing.toml")
    assert settings == Settings()
    assert settings.narrator == "offline" and settings.budget == 2


def test_the_environment_overrides_the_file_and_flags_override_both(tmp_path):
    path = write(tmp_path, 'narrator = "openai"\nbudget = 5\ntheme = "nord"\nmodel = "llama3.1"\n')
    env = {"STORYLOOM_BUDGET": "3", "STORYLOOM_MODEL": "qwen2.5"}
    assert load_settings(None, env={}, path=path).budget == 5
    from_env = load_settings(None, env=env, path=path)
    assert (from_env.budget, from_env.model, from_env.theme) == (3, "qwen2.5", "nord")
    from_flags = load_settings(flags("--budget", "1", "--model", "mistral"), env=env, path=path)
    assert (from_flags.budget, from_flags.model, from_flags.narrator) == (1, "mistral", "openai")


def test_each_narrator_takes_its_own_table_from_the_file(tmp_path):
    path = write(
        tmp_path,
        'narrator = "openai"\n[openai]\nmodel = "llama3.1"\noutput = "json"\n[anthropic]\nmodel = "claude-opus-5"\n',
    )
    assert load_settings(None, env={}, path=path).output == "json"
    claude = load_settings(flags("--narrator", "anthropic"), env={}, path=path)
    assert (claude.model, claude.output) == ("claude-opus-5", "tools")


def test_the_files_model_and_address_stay_with_the_narrator_they_were_written_for(tmp_path):
    path = write(tmp_path, 'narrator = "openai"\nmodel = "llama3.1"\nbase_url = "http://127.0.0.1:11434/v1"\n')
    claude = load_settings(flags("--narrator", "anthropic"), env={}, path=path)
    assert claude.model is None and claude.base_url is None


def test_vendor_base_url_variables_apply_to_their_own_narrator(tmp_path):
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9000", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}
    assert (
        load_settings(flags("--narrator", "anthropic"), env=env, path=tmp_path / "x").base_url
        == "http://127.0.0.1:9000"
    )
    assert (
        load_settings(flags("--narrator", "openai"), env=env, path=tmp_path / "x").base_url
        == "http://127.0.0.1:8080/v1"
    )
    flagged = load_settings(
        flags("--narrator", "openai", "--base-url", "http://127.0.0.1:1234/v1"), env=env, path=tmp_path / "x"
    )
    assert flagged.base_url == "http://127.0.0.1:1234/v1"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('narator = "openai"\n', ["unknown setting", "narator"]),
        ('budget = "two"\n', ["budget must be a whole number"]),
        ("budget = -1\n", ["budget"]),
        ('narrator = "gpt"\n', ["narrator must be one of offline, anthropic, openai"]),
        ('[openai]\noutput = "xml"\n', ["output must be tools or json"]),
        ('[openai]\ntheme = "nord"\n', ["[openai]", "unknown setting", "theme"]),
        ('base_url = "127.0.0.1:11434"\n', ["http:// or https://"]),
        ("budget = 2\nbudget = 3\n", ["cannot read the config file"]),
    ],
)
def test_a_bad_config_file_is_a_clear_error_naming_the_file_and_key(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(SettingsError) as caught:
        load_settings(None, env={}, path=path)
    message = str(caught.value)
    assert str(path) in message
    for word in words:
        assert word in message


def test_a_key_in_the_config_file_is_refused_and_never_used(tmp_path):
    path = write(tmp_path, f'narrator = "anthropic"\n[anthropic]\napi_key = "{PLANTED}"\n')
    with pytest.raises(SettingsError, match="ANTHROPIC_API_KEY") as caught:
        load_settings(None, env={}, path=path)
    assert PLANTED not in str(caught.value)


def test_a_bad_environment_value_names_its_source(tmp_path):
    with pytest.raises(SettingsError, match="the environment: budget"):
        load_settings(None, env={"STORYLOOM_BUDGET": "lots"}, path=tmp_path / "x")


def test_the_key_comes_only_from_the_environment_and_never_shows_in_repr(tmp_path):
    settings = load_settings(flags("--narrator", "anthropic"), env={"ANTHROPIC_API_KEY": PLANTED}, path=tmp_path / "x")
    assert settings.api_key == PLANTED
    assert PLANTED not in repr(settings) and PLANTED not in str(settings.masked())
    assert settings.masked()["api_key"] == "set (ANTHROPIC_API_KEY)"


def test_storyloom_config_prints_effective_settings_with_the_key_masked(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config_path().parent.mkdir(parents=True)
    config_path().write_text('narrator = "anthropic"\nbudget = 4\n', encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://user:hunter2@proxy.example/anthropic")
    monkeypatch.setenv("STORYLOOM_THEME", "nord")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert PLANTED not in out and PLANTED[:12] not in out and "hunter2" not in out
    assert str(config_path()) in out
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert lines["narrator"].startswith('narrator = "anthropic"') and str(config_path()) in lines["narrator"]
    assert lines["budget"].startswith("budget = 4")
    assert lines["theme"].startswith('theme = "nord"') and "STORYLOOM_THEME" in lines["theme"]
    assert lines["model"].startswith(f'model = "{CLAUDE}"') and "default" in lines["model"]
    assert lines["api_key"].startswith('api_key = "set (ANTHROPIC_API_KEY)"')


def test_storyloom_config_reports_a_broken_file_and_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config_path().parent.mkdir(parents=True)
    config_path().write_text("budget = [\n", encoding="utf-8")
    assert main(["config"]) == 2
    assert "cannot read the config file" in capsys.readouterr().out


def test_the_anthropic_narrator_without_a_key_says_which_variable_to_set(pack, tmp_path):
    settings = load_settings(flags("--narrator", "anthropic"), env={}, path=tmp_path / "x")
    with pytest.raises(SettingsError, match="set ANTHROPIC_API_KEY"):
        create_narrator(settings, pack, interactive=False)


def test_narrators_are_built_from_the_settings(pack, tmp_path):
    env = {"ANTHROPIC_API_KEY": PLANTED}
    claude = create_narrator(
        load_settings(
            flags("--narrator", "anthropic", "--max-tokens", "800", "--thinking"), env=env, path=tmp_path / "x"
        ),
        pack,
        interactive=False,
    )
    assert isinstance(claude, AnthropicNarrator)
    assert (claude.model, claude.max_tokens, claude.thinking) == (CLAUDE, 800, True)
    assert PLANTED not in repr(claude)
    local = create_narrator(
        load_settings(flags("--narrator", "openai", "--output", "json"), env={}, path=tmp_path / "x"),
        pack,
        interactive=False,
    )
    assert isinstance(local, OpenAINarrator)
    assert (local.base_url, local.output) == (DEFAULT_BASE_URL, "json")


def test_a_flag_given_as_zero_overrides_the_file(tmp_path):
    path = write(tmp_path, "budget = 3\n")
    assert load_settings(flags("--budget", "0"), env={}, path=path).budget == 0
    assert load_settings(flags(), env={}, path=path).budget == 3


def test_the_palettes_theme_is_written_to_the_file_keeping_every_other_line(tmp_path):
    from storyloom.tui.settings import save_theme

    path = write(tmp_path, '# mine\nnarrator = "openai"\ntheme = "nord"\n\n[openai]\nmodel = "llama3.1"  # local\n')
    save_theme("dracula", path)
    text = path.read_text(encoding="utf-8")
    assert "# mine" in text and 'model = "llama3.1"  # local' in text and "nord" not in text
    settings = load_settings(flags(), env={}, path=path)
    assert settings.theme == "dracula" and settings.narrator == "openai" and settings.model == "llama3.1"
    fresh = tmp_path / "new" / "config.toml"
    save_theme("nord", fresh)
    assert load_settings(flags(), env={}, path=fresh).theme == "nord"


async def test_a_theme_chosen_in_the_app_is_there_on_the_next_start(tmp_path, monkeypatch):
    from storyloom.tui.settings import save_theme
    from tests.test_tui_app import make_app

    path = write(tmp_path, 'budget = 3\ntheme = "nord"\n')
    app = make_app(theme="nord", remember_theme=lambda theme: save_theme(theme, path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.theme = "gruvbox"  # what the palette's "Change theme" does
        await pilot.pause()
    settings = load_settings(flags(), env={}, path=path)
    assert settings.theme == "gruvbox" and settings.budget == 3


def test_an_unknown_theme_in_the_settings_is_a_clear_error_before_any_frame(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config_path().parent.mkdir(parents=True)
    config_path().write_text('theme = "no-such-theme"\n', encoding="utf-8")
    assert main(["play"]) == 2
    err = capsys.readouterr().err
    assert "no-such-theme" in err and "nord" in err  # what is wrong, and what would do
    assert "Traceback" not in err


DEEP = "deep = " + "[" * 3000 + "]" * 3000 + "\n"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('theme = "no-such-theme"\n', ["theme must be one of Textual's themes", "no-such-theme"]),
        ("pace = inf\n", ["pace must be a number from 0 to 1", "inf"]),
        ("pace = 1e300\n", ["pace must be a number from 0 to 1"]),
        ("pace = nan\n", ["pace must be a number from 0 to 1"]),
        (DEEP, ["nested too deeply"]),
    ],
)
def test_a_value_that_would_crash_or_hang_the_game_is_refused_the_same_way_by_config_and_play(
    tmp_path, monkeypatch, capsys, text, words
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config_path().parent.mkdir(parents=True)
    config_path().write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError):
        load_settings(None)  # the one check every command goes through, the app's start too
    assert main(["config"]) == 2
    reported = capsys.readouterr().out
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands)]) == 2
    refused = capsys.readouterr()
    for word in words:
        assert word in reported and word in refused.err
    assert "Traceback" not in refused.err and refused.out == ""


def test_the_environment_and_flags_are_held_to_the_same_bounds(tmp_path, monkeypatch):
    monkeypatch.setenv("STORYLOOM_PACE", "inf")
    with pytest.raises(SettingsError, match="the environment: pace"):
        load_settings(None, path=tmp_path / "none.toml")
    monkeypatch.delenv("STORYLOOM_PACE")
    monkeypatch.setenv("STORYLOOM_THEME", "nope")
    with pytest.raises(SettingsError, match="theme"):
        load_settings(None, path=tmp_path / "none.toml")
    monkeypatch.delenv("STORYLOOM_THEME")
    with pytest.raises(SettingsError, match="pace"):
        load_settings(flags("--pace", "1e300"), path=tmp_path / "none.toml")


def test_headless_play_ignores_the_config_files_pace_unless_pace_is_given_on_the_command_line(
    tmp_path, monkeypatch, capsys
):
    from storyloom.engine.narrators import offline

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config_path().parent.mkdir(parents=True)
    config_path().write_text("pace = 0.5\n", encoding="utf-8")
    paces: list[float] = []
    built = offline.OfflineNarrator.__init__

    def spy(self, *args, **kwargs):
        paces.append(kwargs.get("pace", 0.0))
        kwargs["pace"] = 0.0  # whatever was asked, this test does not wait
        built(self, *args, **kwargs)

    monkeypatch.setattr(offline.OfflineNarrator, "__init__", spy)
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands)]) == 0
    assert main(["play", "--headless", "--commands", str(commands), "--pace", "0.25"]) == 0
    assert paces == [0.0, 0.25]
    capsys.readouterr()


def test_a_huge_config_value_is_named_not_echoed_whole(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, f'budget = "{"x" * 900_000}"\n')
    with pytest.raises(SettingsError) as caught:
        load_settings(None, env={}, path=path)
    message = str(caught.value)
    assert "budget must be a whole number" in message and "900,000 characters" in message
    assert len(message) < 400
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "storyloom").mkdir(parents=True)
    (tmp_path / "xdg" / "storyloom" / "config.toml").write_text(f'narrator = "{"n" * 900_000}"\n', encoding="utf-8")
    commands = tmp_path / "commands.txt"
    commands.write_text("look\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands)]) == 2
    err = capsys.readouterr().err
    assert "narrator must be one of" in err and len(err) < 400


def test_storyloom_config_shows_a_huge_value_it_accepts_by_its_start_and_length(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config_path().parent.mkdir(parents=True)
    config_path().write_text(f'narrator = "openai"\n[openai]\nmodel = "{"m" * 1_000_000}"\n', encoding="utf-8")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    model = next(line for line in out.splitlines() if line.startswith("model = "))
    assert "1,000,000 characters" in model and str(config_path()) in model, model[:300]
    assert len(out) < 4000


def test_a_config_file_starting_with_a_byte_order_mark_is_read(tmp_path):
    from storyloom.tui.settings import save_theme

    path = tmp_path / "config.toml"
    path.write_bytes(b'\xef\xbb\xbfnarrator = "openai"\nbudget = 3\n')
    settings = load_settings(None, env={}, path=path)
    assert settings.narrator == "openai" and settings.budget == 3
    save_theme("nord", path)  # the palette's theme is written into the same file, which still reads
    assert load_settings(None, env={}, path=path).theme == "nord"
