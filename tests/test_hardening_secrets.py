"""A planted API key never appears in anything storyloom writes or shows.

The key is put in `ANTHROPIC_API_KEY` and `OPENAI_API_KEY`; both real narrators play
headless against loopback servers that echo it back in error bodies (a 401, 500s) and in
stream error events. Then every file under the test's folder (saves, events, exports,
config), every line printed (play, verify, export, replay, saves, config), every log
record and a screenshot of the app are searched for the key and for long pieces of it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.packs import load_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.cli import main
from tests.conftest import turn_json
from tests.hardening.figures import tally
from tests.hardening.play import shore_file
from tests.wire import anthropic_sse as asse
from tests.wire import openai_sse as osse
from tests.wire.server import Status, Stream, WireServer

KEY = "sk-ant-api03-PLANTED0hardening0KEY0do0not0leak0Zq9x7Wv2-AbCdEf"
PIECES = [KEY, KEY[:16], KEY[-16:], KEY[10:30]]
GOOD = turn_json("You lift the brass lamp.", [{"op": "replace", "path": "/items/lamp", "value": "player"}])
NOW = {"retry-after": "0"}
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def planted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def assert_no_key(text: str, where: str) -> None:
    for piece in PIECES:
        assert piece not in text, f"{where} shows the API key (or {len(piece)} characters of it)"


def written_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def openai_script() -> list:
    echo = osse.error_body(f"Incorrect API key provided: {KEY}", "invalid_request_error", "invalid_api_key")
    busy = osse.error_body(f"upstream failed for key {KEY[:20]}...", "server_error")
    return [
        Status(401, echo),
        *[Status(500, busy, NOW)] * 5,
        Stream([osse.data({"error": {"message": f"key {KEY} overloaded", "type": "server_error"}})]),
        Stream(osse.tool_stream(GOOD)),
    ]


def anthropic_script() -> list:
    echo = asse.error_body("authentication_error", f"invalid x-api-key: {KEY}")
    busy = asse.error_body("api_error", f"internal error for {KEY[-20:]}")
    return [
        Status(401, echo),
        *[Status(500, busy, NOW)] * 5,
        Stream([asse.message_start(), asse.error_event("overloaded_error", f"overloaded {KEY}")]),
        Stream(asse.turn_stream(GOOD)),
    ]


@pytest.mark.parametrize("narrator", ["openai", "anthropic"])
def test_the_key_never_appears_in_output_saves_events_exports_config_or_logs(
    narrator, tmp_path, capsys, caplog, monkeypatch
):
    caplog.set_level(logging.DEBUG)
    pack = shore_file(tmp_path)
    commands = tmp_path / "commands.txt"
    save, events = tmp_path / "game.jsonl", tmp_path / "events.jsonl"
    with WireServer() as server:
        if narrator == "openai":
            server.script(*openai_script())
            where = ["--base-url", f"{server.url}/v1"]
        else:
            server.script(*anthropic_script())
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
            where = []
        commands.write_text("take lamp\n", encoding="utf-8")
        first = main(
            [
                "play",
                "--headless",
                "--narrator",
                narrator,
                *where,
                "--story",
                str(pack),
                "--commands",
                str(commands),
                "--save",
                str(save),
                "--events",
                str(events),
            ]
        )
        resumed = [
            main(
                [
                    "play",
                    "--headless",
                    "--narrator",
                    narrator,
                    *where,
                    "--commands",
                    str(commands),
                    "--resume",
                    str(save),
                    "--events",
                    str(tmp_path / f"events{n}.jsonl"),
                ]
            )
            for n in (2, 3)
        ]
        sent = [r.headers.get("x-api-key") or r.headers.get("authorization", "") for r in server.requests]
    # the 401 fails the first turn, five 500s the second try; the third meets an error event, then commits
    assert (first, *resumed) == (3, 3, 0) and len(server.requests) == 8
    assert any(KEY in header for header in sent)  # the key did go to the server it belongs to, and only there
    monkeypatch.setenv("STORYLOOM_NARRATOR", narrator)
    for argv in (
        ["verify", str(save)],
        ["export", str(save)],
        ["export", str(save), "--format", "json"],
        ["replay", str(save), "--headless", "--speed", "inf"],
        ["saves"],
        ["config"],
    ):
        main(argv)
    captured = capsys.readouterr()
    assert "rejected the API key" in captured.err and "is having trouble" in captured.err
    assert_no_key(captured.out, "stdout")
    assert_no_key(captured.err, "stderr")
    assert_no_key(caplog.text, "the log")
    files = written_files(tmp_path)
    assert save in files and events in files
    for path in files:
        assert_no_key(path.read_text(encoding="utf-8", errors="replace"), str(path))
    tally("secrets: planted key through play, resume, verify, export, replay, saves, config, logs", len(files) + 2)


def test_the_config_file_refuses_a_key_without_echoing_it(tmp_path, capsys):
    folder = tmp_path / "config" / "storyloom"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(f'narrator = "anthropic"\napi_key = "{KEY}"\n', encoding="utf-8")
    assert main(["config"]) == 2
    captured = capsys.readouterr()
    assert "API keys are never read from the config file" in captured.out
    assert_no_key(captured.out + captured.err, "storyloom config")
    tally("secrets: key in the config file")


async def test_the_app_shows_no_key_on_screen_or_in_a_screenshot():
    pack = load_pack("lighthouse")
    app = StoryloomApp(Session(pack, AnthropicNarrator(api_key=KEY, base_url="http://127.0.0.1:9")), blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert_no_key(app.export_screenshot(), "the app's screenshot")
    assert_no_key(repr(app.session.narrator), "the narrator's repr")
    tally("secrets: app screenshot and narrator repr")


def test_no_approved_snapshot_holds_anything_like_a_key():
    for path in written_files(REPO / "snapshots"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for prefix in ("sk-ant-", "sk-proj-", "x-api-key", "Bearer sk-"):
            assert prefix not in text, f"{path} holds {prefix!r}"
    tally("secrets: approved snapshots scanned", len(written_files(REPO / "snapshots")))
