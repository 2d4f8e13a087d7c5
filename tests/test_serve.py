"""`storyloom serve`, tested without a browser: the test speaks textual-serve's websocket protocol
(aiohttp) and reads the relayed terminal output through a terminal emulator (pyte), so it asserts
on the screen a player would see in the tab.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="aiohttp speaks the websocket (pip install -e '.[test]')")
pyte = pytest.importorskip("pyte", reason="pyte reads the relayed screen (pip install -e '.[test]')")
pytest.importorskip("textual_serve", reason="storyloom serve needs textual-serve")

TOKEN = "a-long-enough-secret-token"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    """A `storyloom serve` process on 127.0.0.1 with its own saves folder."""

    def __init__(self, tmp_path: Path, *args: str):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.saves = tmp_path / "data" / "storyloom" / "saves"
        self.env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "storyloom.tui.cli", "serve", "--port", str(self.port), *args],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its games are in its group, so a hung one can be ended with it
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise AssertionError("storyloom serve did not start")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a game that never quits holds the server: end them all
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=20)
            raise AssertionError("storyloom serve did not stop on SIGTERM") from None
        assert self.process.stderr is not None
        self.process.stderr.close()


@pytest.fixture
def served(tmp_path) -> Iterator[Served]:
    server = Served(tmp_path)
    yield server
    server.stop()


class Tab:
    """One browser tab's terminal: what the websocket relays, on a pyte screen."""

    def __init__(self, websocket: aiohttp.ClientWebSocketResponse, width: int = 100, height: int = 30):
        self.websocket = websocket
        self.screen = pyte.Screen(width, height)
        self.stream = pyte.ByteStream(self.screen)

    @property
    def text(self) -> str:
        return "\n".join(self.screen.display)

    async def wait_for(self, *words: str, timeout: float = 30) -> str:
        """Read the relayed output until every word is on the screen."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not all(word in self.text for word in words):
            left = deadline - loop.time()
            assert left > 0, f"never on screen: {words}\n{self.text}"
            try:
                message = await self.websocket.receive(timeout=left)
            except TimeoutError:
                continue
            if message.type == aiohttp.WSMsgType.BINARY:
                self.stream.feed(message.data)
            elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                raise AssertionError(f"the game closed before showing {words}\n{self.text}")
        return self.text

    async def key(self, keys: str) -> None:
        await self.websocket.send_json(["stdin", keys])

    async def delivered(self, timeout: float = 30) -> str:
        """The key of the next file the app delivers to the browser (textual-serve's `deliver_file_start`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (left := deadline - loop.time()) > 0:
            message = await self.websocket.receive(timeout=left)
            if message.type == aiohttp.WSMsgType.BINARY:
                self.stream.feed(message.data)
            elif message.type == aiohttp.WSMsgType.TEXT and message.json()[0] == "deliver_file_start":
                return str(message.json()[1])
        raise AssertionError(f"no file was delivered\n{self.text}")

    async def play(self, command: str) -> None:
        """Type a command and Enter; the first Enter may come while the story still loads behind its
        intro (the line keeps what was typed), so Enter is pressed again until the command is played."""
        for char in command:
            await self.websocket.send_json(["stdin", char])
        for _ in range(20):
            await self.websocket.send_json(["stdin", "\r"])
            try:
                await self.wait_for(f"› {command}", timeout=1)
                return
            except AssertionError:
                continue
        raise AssertionError(f"{command!r} was never played\n{self.text}")


async def _new_game(client: aiohttp.ClientSession, base: str, query: str = "") -> str:
    async with client.get(f"{base}/{query}", allow_redirects=False) as response:
        assert response.status == 302
        return response.headers["Location"].split("/game/")[1].split("?")[0]


def _sound(served: Served, save: Path) -> None:
    """The game's process closed the save whole: its lock is gone and verify finds every record sound."""
    deadline = time.monotonic() + 20
    while (save.with_name(save.name + ".lock")).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not save.with_name(save.name + ".lock").exists(), "the game's process still holds its save"
    checked = subprocess.run(
        [sys.executable, "-m", "storyloom.tui.cli", "verify", str(save)], env=served.env, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_a_tab_plays_and_a_reload_goes_on_with_the_same_story(served):
    async with aiohttp.ClientSession() as client:
        game = await _new_game(client, served.base)
        async with client.ws_connect(f"{served.base}/ws/{game}?width=100&height=30") as websocket:
            tab = Tab(websocket)
            await tab.wait_for("The Lighthouse Keeper", "Someone has to light the lamp")
            await tab.play("take rope")
            await tab.wait_for("• coil of rope")  # committed: the side panel shows it carried
            footer = tab.screen.display[-1]
            assert "f10 Quit" in footer and "^q" not in footer, footer  # Firefox quits on ctrl+q itself
        save = served.saves / f"served-{game}.jsonl"
        _sound(served, save)  # the tab closed: the game ended as a quit does
        assert '"turn_committed"' in save.read_text(encoding="utf-8")

        async with client.ws_connect(f"{served.base}/ws/{game}?width=100&height=30") as websocket:
            tab = Tab(websocket)
            screen = await tab.wait_for("take rope", "coil of rope")  # the same story, where it stopped
            assert "Carrying" in screen
            await tab.key("\x10")  # ctrl+p: the palette; export goes to the browser as a download
            await tab.wait_for("Export transcript")
            assert "Open save" not in tab.text and "New game" not in tab.text  # a tab reaches only its own save
            for char in "Export":
                await tab.key(char)
            await tab.key("\r")
            key = await tab.delivered()
            async with client.get(f"{served.base}/download/{key}") as download:
                assert download.status == 200
                assert "attachment" in download.headers["Content-Disposition"]
                transcript = await download.text()
            assert "take rope" in transcript and "coil of rope" in transcript
            assert not list(served.saves.glob("*.md")), "the export was written on the server's disk"
        _sound(served, save)
        another = await _new_game(client, served.base)
        assert another != game  # the root in a new tab is a new story
    assert sorted(p.name for p in served.saves.glob("*.jsonl")) == [f"served-{game}.jsonl"]


async def test_with_a_token_a_wrong_or_missing_one_gets_nothing(tmp_path):
    served = Served(tmp_path, "--token", TOKEN)
    try:
        async with aiohttp.ClientSession() as client:
            for query in ("", "?token=wrong", f"?token={TOKEN[:-1]}"):
                async with client.get(f"{served.base}/{query}", allow_redirects=False) as response:
                    assert response.status == 403
                with pytest.raises(aiohttp.WSServerHandshakeError):
                    await client.ws_connect(f"{served.base}/ws/{'A' * 22}{query}")
            with pytest.raises(aiohttp.WSServerHandshakeError):  # another site's page, even with the token
                await client.ws_connect(
                    f"{served.base}/ws/{'A' * 22}?token={TOKEN}", headers={"Origin": "http://elsewhere.example"}
                )
            game = await _new_game(client, served.base, f"?token={TOKEN}")
            async with client.ws_connect(f"{served.base}/ws/{game}?token={TOKEN}") as websocket:
                await Tab(websocket).wait_for("The Lighthouse Keeper")
        assert not any(p.name.startswith(f"served-{'A' * 22}") for p in served.saves.glob("*"))
    finally:
        served.stop()


def test_any_address_but_this_machine_needs_a_token(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("STORYLOOM_SERVE_TOKEN", None)
    refused = subprocess.run(
        [sys.executable, "-m", "storyloom.tui.cli", "serve", "--host", "0.0.0.0", "--port", str(_free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2
    assert "give a token" in refused.stderr


async def test_when_every_game_is_taken_a_new_tab_is_told_so(tmp_path):
    served = Served(tmp_path, "--max-games", "1", "--story", "glasshouse")  # play options reach every game
    try:
        async with aiohttp.ClientSession() as client:
            game = await _new_game(client, served.base)
            async with client.ws_connect(f"{served.base}/ws/{game}") as websocket:
                await Tab(websocket).wait_for("The Winter Glasshouse")
                async with client.get(f"{served.base}/") as response:
                    assert response.status == 503
                    assert "All games are taken" in await response.text()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # once that tab is closed, a new one gets a game
                async with client.get(f"{served.base}/", allow_redirects=False) as response:
                    if response.status == 302:
                        break
                await asyncio.sleep(0.2)
            assert response.status == 302
    finally:
        served.stop()


def _chromium() -> str | None:
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_in_a_real_headless_browser_the_story_plays_in_the_tab(served, tmp_path):
    """Debian's chromium, driven by Playwright; the screenshot is kept for a person to look at."""
    browser_path = _chromium()
    if browser_path is None:
        pytest.skip("no chromium installed (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright drives the browser (test extra)")
    shot = Path(os.environ.get("STORYLOOM_SCREENSHOT", tmp_path / "served.png"))
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(served.base + "/")
            assert "/game/" in page.url
            page.wait_for_timeout(4000)  # the terminal connects and the story loads behind its intro
            page.locator(".xterm").click()
            page.keyboard.type("take rope")
            page.keyboard.press("Enter")
            game = page.url.split("/game/")[1].split("?")[0]
            save = served.saves / f"served-{game}.jsonl"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and '"turn_committed"' not in save.read_text(encoding="utf-8"):
                page.wait_for_timeout(300)
            assert '"turn_committed"' in save.read_text(encoding="utf-8")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shot))
            page.reload()  # a refresh: the same story
            page.wait_for_timeout(4000)
            assert page.url.split("/game/")[1].split("?")[0] == game
            page.screenshot(path=str(shot.with_name(shot.stem + "-reloaded.png")))
            page.locator(".xterm").click()
            page.evaluate("window.storyloomMark = 1")
            for key in ("Control+r", "Control+d", "Escape", "Control+p", "Escape"):  # the game's, not the browser's
                page.keyboard.press(key)
                page.wait_for_timeout(300)
            assert page.evaluate("window.storyloomMark") == 1, "a key reloaded the page"
            page.keyboard.press("Control+g")  # another version of the latest turn
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and '"alternative_started"' not in save.read_text(encoding="utf-8"):
                page.wait_for_timeout(300)
            assert '"alternative_started"' in save.read_text(encoding="utf-8")
            page.wait_for_timeout(2000)
            page.keyboard.press("F10")  # the footer's browser-safe quit (ctrl+q quits Firefox itself)
            page.wait_for_selector("text=Session ended", timeout=20000)
        finally:
            browser.close()
    _sound(served, save)


async def test_a_player_who_set_plain_lines_for_their_terminal_still_gets_the_game_in_the_tab(tmp_path):
    """`screen_reader = true` in the settings file is the terminal's front end, not the browser's:
    a served game is always the app (plain lines on textual-serve's pipe would be no screen at all)."""
    (tmp_path / "config" / "storyloom").mkdir(parents=True)
    (tmp_path / "config" / "storyloom" / "config.toml").write_text("screen_reader = true\n", encoding="utf-8")
    served = Served(tmp_path)
    try:
        async with asyncio.timeout(60), aiohttp.ClientSession() as client:  # before: a blank tab, forever
            game = await _new_game(client, served.base)
            async with client.ws_connect(f"{served.base}/ws/{game}?width=100&height=30") as websocket:
                tab = Tab(websocket)
                await tab.wait_for("The Lighthouse Keeper", "Someone has to light the lamp")
                await tab.play("take rope")
                await tab.wait_for("• coil of rope")
    finally:
        served.stop()


async def test_a_theme_chosen_in_a_tab_is_that_tab_s_not_the_server_owner_s(served):
    """The palette's theme is remembered in the settings file in a terminal; a tab must not write the
    server's settings (every later tab, and the owner's own terminal, would get a visitor's choice)."""
    config = served.saves.parents[2] / "config" / "storyloom" / "config.toml"
    async with asyncio.timeout(90), aiohttp.ClientSession() as client:
        game = await _new_game(client, served.base)
        async with client.ws_connect(f"{served.base}/ws/{game}?width=100&height=30") as websocket:
            tab = Tab(websocket)
            await tab.wait_for("Someone has to light the lamp")
            await tab.play("look")  # the story is loaded behind its intro
            await tab.wait_for("try: ")  # the turn is played
            await tab.key("\x10")  # ctrl+p
            await tab.wait_for("Search for commands")
            await asyncio.sleep(0.5)
            for char in "theme":
                await tab.key(char)
            await tab.wait_for("Change the current theme")
            await asyncio.sleep(0.5)
            await tab.key("\r")
            await tab.wait_for("Search for themes", "nord")
            await asyncio.sleep(0.5)
            for char in "nord":
                await tab.key(char)
            await asyncio.sleep(0.5)
            await tab.key("\r")
            await asyncio.sleep(2)  # the theme applied (and, before, written)
        _sound(served, served.saves / f"served-{game}.jsonl")
    assert not config.exists() or "theme" not in config.read_text(encoding="utf-8")
