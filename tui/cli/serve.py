"""`storyloom serve`: the game in a browser tab, over textual-serve.

textual-serve (by Textual's authors) runs one process of a Textual app per websocket and
relays its screen to xterm.js in the page. What a game needs on top, built here:

- Each tab is its own game: the server's root sends a new tab to `/game/<id>` (a fresh random
  id); that page plays `storyloom play --save <saves folder>/served-<id>.jsonl`, so the game is
  the same `storyloom play` (the same `PlaySession`, saves and flags) as in a terminal. A reload
  of the address, or a dropped connection, starts `--resume` on the same save: the story goes on
  where it stopped. One process plays a save at a time (the previous one is stopped first).
- Nobody gets in who should not: 127.0.0.1 by default; any other address needs `--token`
  (refused without one), carried in the URL and compared in constant time on every request.
  A game id is 128 random bits and names only its own save; the served app offers no other save
  (nor "New game": a new tab is one). A websocket from another site's page (its Origin) is refused.
- `--max-games`: while that many games are running, a new tab gets a page saying so.
- Closing a tab ends its game the way quitting does (textual-serve sends the app `quit`), so
  the save is closed whole.

This module is imported only by `storyloom serve` (it loads aiohttp and textual-serve).
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import ipaddress
import logging
import os
import re
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from storyloom.tui.cli.exits import EXIT_OK, EXIT_USAGE

GAME_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")
"""What `secrets.token_urlsafe(16)` makes: the only shape a game id (and so a save name) can take."""
TOKEN_ENV = "STORYLOOM_SERVE_TOKEN"
NOT_PASSED = ("served", "headless", "commands", "events", "on_fail", "resume", "save", "screen_reader")
"""Play options that make no sense for a served game (each tab has its own save)."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def play_words(args: argparse.Namespace, play_parser: argparse.ArgumentParser) -> list[str]:
    """The `storyloom play` options given to `serve`, as words for each game's command line."""
    words: list[str] = []
    for action in play_parser._actions:  # noqa: SLF001 - argparse has no public list of its options
        if not action.option_strings or action.dest in NOT_PASSED or action.dest == "help":
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default:
            continue
        flag = action.option_strings[-1]
        words += [flag] if value is True else [flag, str(value)]
    return words


class GameServer(Server):
    """textual-serve's server, with a game per tab, a token and a limit of games."""

    def __init__(
        self, *, host: str, port: int, token: str | None, max_games: int, words: list[str], saves: Path
    ) -> None:
        super().__init__("storyloom", host=host, port=port, title="storyloom")
        self.token = token
        self.max_games = max_games
        self.words = words
        self.saves = saves
        self.games: dict[str, tuple[AppService, web.WebSocketResponse]] = {}
        """The running game of each id (one process a save)."""
        self._turns: dict[str, asyncio.Lock] = {}

    def initialize_logging(self) -> None:
        """Plain log lines without the request lines (their address carries the token) or a traceback's locals."""
        logging.basicConfig(level=logging.INFO, format="storyloom serve: %(message)s")
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._check_token])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/", self.handle_root, name="index"),
                web.get("/game/{game}", self.handle_game, name="game"),
                web.get("/ws/{game}", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        app.on_startup.append(self.on_startup)
        return app

    @web.middleware
    async def _check_token(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Every request but the page's static files carries the token (when there is one)."""
        if self.token is not None and not request.path.startswith("/static/"):
            given = request.query.get("token", "")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return web.Response(status=403, text="storyloom: this address needs the server's token.\n")
        response: web.StreamResponse = await handler(request)
        return response

    def _query(self) -> str:
        return f"?token={self.token}" if self.token is not None else ""

    def _full(self) -> web.Response:
        return web.Response(
            status=503,
            content_type="text/html",
            text=(
                "<!doctype html><title>storyloom: full</title><h1>All games are taken</h1>"
                f"<p>This server plays at most {self.max_games} games at a time, and they are all being played. "
                "Try again when someone has closed their tab.</p>"
            ),
        )

    async def handle_root(self, request: web.Request) -> web.StreamResponse:
        """A new tab: a new game, at its own address (which a reload finds again)."""
        if len(self.games) >= self.max_games:
            return self._full()
        raise web.HTTPFound(f"/game/{secrets.token_urlsafe(16)}{self._query()}")

    async def handle_game(self, request: web.Request) -> web.StreamResponse:
        game = request.match_info["game"]
        if not GAME_ID.match(game):
            raise web.HTTPNotFound(text="storyloom: no such game\n")
        if game not in self.games and len(self.games) >= self.max_games:
            return self._full()
        base = f"{request.scheme}://{request.host}"  # the address the browser reached (not 0.0.0.0)
        ws = "ws" + base[4:]
        context = {
            "font_size": 16,
            "app_websocket_url": f"{ws}/ws/{game}{self._query()}",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": "storyloom"},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    def game_command(self, game: str) -> str:
        """The game's own `storyloom play`: a new save the first time, that save resumed after."""
        save = self.saves / f"served-{game}.jsonl"
        where = ["--resume", str(save)] if save.is_file() else ["--save", str(save)]
        words = [sys.executable, "-m", "storyloom.tui.cli", "play", "--served", *where, *self.words]
        return " ".join(shlex.quote(word) for word in words)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        game = request.match_info["game"]
        websocket = web.WebSocketResponse(heartbeat=15)
        if not GAME_ID.match(game):
            raise web.HTTPNotFound(text="storyloom: no such game\n")
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="storyloom: a game is played only from its own page\n")
        lock = self._turns.setdefault(game, asyncio.Lock())
        previous = self.games.get(game)
        if previous is not None:  # a reload while the old page's game still runs: it ends (and saves) first
            await previous[0].stop()
            await previous[1].close()
        async with lock:
            if game not in self.games and len(self.games) >= self.max_games:
                await websocket.prepare(request)
                await websocket.close(code=1013, message=b"all games are taken")
                return websocket
            await websocket.prepare(request)
            width = _number(request.query.get("width"), 80)
            height = _number(request.query.get("height"), 24)

            async def close() -> None:
                await websocket.close()

            service = AppService(
                self.game_command(game),
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.games[game] = (service, websocket)
            try:
                await service.start(width, height)
                await self._process_messages(websocket, service)
            except asyncio.CancelledError:
                pass
            finally:
                await service.stop()
                if self.games.get(game, (None,))[0] is service:
                    del self.games[game]
                await websocket.close()
        return websocket

    async def on_startup(self, app: web.Application) -> None:
        print(f"storyloom: serving on {self.public_url}/{self._query()}", file=sys.stderr, flush=True)
        print("storyloom: each new tab there is a new game; press Ctrl+C to stop", file=sys.stderr, flush=True)


def _number(text: str | None, default: int) -> int:
    try:
        return max(1, min(int(text or default), 1000))
    except ValueError:
        return default


def run_serve(args: argparse.Namespace, play_parser: argparse.ArgumentParser) -> int:
    """`storyloom serve`: check where it listens and with what token, then serve until Ctrl+C."""
    from storyloom.saves.locations import saves_dir

    token = args.token or os.environ.get(TOKEN_ENV) or None
    if not _loopback(args.host) and token is None:
        print(
            f"storyloom: serving on {args.host} lets anyone who reaches it play: give a token "
            f"(--token, or {TOKEN_ENV}; e.g. --token {secrets.token_urlsafe(24)}), which every address will carry",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if token is not None and len(token) < 16:
        print(
            "storyloom: the token must be at least 16 characters (it is all that stands at the door)", file=sys.stderr
        )
        return EXIT_USAGE
    saves = saves_dir()
    saves.mkdir(parents=True, exist_ok=True)
    server = GameServer(
        host=args.host,
        port=args.port,
        token=token,
        max_games=args.max_games,
        words=play_words(args, play_parser),
        saves=saves,
    )
    server.serve()
    return EXIT_OK
