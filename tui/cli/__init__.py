"""The `storyloom` command line: one parser for every command, and a handler for each.

The command line is the front end's text half: headless play (`headless`), the
save commands (`save_commands`), the story and config commands (`story_commands`),
and the start of the Textual app (`ui`); they share one table of exit codes
(`exits`: 0 success, 1 failure, 2 bad arguments or input files, 3 a headless turn
failed: its correction budget spent or its narrator failing) and one printer of events as text (`printer`).
Each handler's module is imported only when its command runs, so `storyloom` paints its
first frame without loading the others.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_USAGE
from storyloom.tui.narrators import narrator_help, narrator_names, taking
from storyloom.tui.settings import DEFAULT_STORY, OUTPUTS

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse, but bad arguments exit 2 with a one-line message (its default too, made explicit)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"storyloom: {message}\n")


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be 1 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be above 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="storyloom", description="A terminal narrative game with a model as game master.")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    play = commands.add_parser("play", help="play a story (the default command)")
    _add_play_arguments(play)

    serve = commands.add_parser("serve", help="serve the game to browser tabs (each tab its own game and save)")
    serve.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", type=int, default=8000, help="the port to listen on (default 8000)")
    serve.add_argument(
        "--token",
        default=None,
        help="a secret every address must carry (?token=…); required on any address but 127.0.0.1 "
        "(or set STORYLOOM_SERVE_TOKEN)",
    )
    serve.add_argument(
        "--max-games", type=_positive_int, default=8, help="games played at once; a new tab waits (default 8)"
    )
    _add_play_arguments(serve)

    replay = commands.add_parser("replay", help="play a saved session back through the same engine and UI")
    replay.add_argument("save", help="a save file, or 'latest'")
    replay.add_argument(
        "--speed",
        type=_positive_float,
        default=None,
        help="timing scale: 2 = twice as fast, inf = as fast as possible "
        "(default: 1, the recorded pace, in the UI; inf with --headless)",
    )
    replay.add_argument("--headless", action="store_true", help="print the replay instead of showing it")
    replay.add_argument(
        "--branch",
        type=_positive_int,
        default=None,
        help="show only this branch's path (default: with --headless the one played last; in the UI "
        "the session as played, every branch as it was switched to)",
    )
    replay.add_argument(
        "--drafts",
        action="store_true",
        help="with --headless: print every attempt's prose as it streams, rejected drafts too "
        "(default: the committed prose, one line per correction)",
    )

    verify = commands.add_parser("verify", help="re-validate every turn of a save and check its hash chain")
    verify.add_argument("save")

    export = commands.add_parser("export", help="export a save as a transcript")
    export.add_argument("save")
    export.add_argument("--format", choices=["md", "json"], default="md")
    export.add_argument(
        "--branch", type=_positive_int, default=None, help="export this branch's path (default: the one played last)"
    )

    diff = commands.add_parser(
        "diff",
        help="compare two paths of a story: two saves, or two branches of one save",
        description="Where two paths fork (the turn and the commands after it), their turns after the fork "
        "side by side at the terminal's width, and how the worlds differ at their ends (room, items, flags, "
        "stats). Exit 0 when the paths are the same, 1 when they differ, 2 when a save cannot be read or is "
        "refused as damaged.",
    )
    diff.add_argument("saves", nargs="+", metavar="SAVE", help="one save (with two --branch) or two saves, or 'latest'")
    diff.add_argument(
        "--branch",
        type=_positive_int,
        action="append",
        help="a branch to compare, once per path (default: the branch played last of each save)",
    )
    diff.add_argument("--format", choices=["text", "json"], default="text")

    commands.add_parser("saves", help="list saved sessions")
    commands.add_parser("stories", help="list the built-in stories")
    check = commands.add_parser(
        "check-story",
        help="check a story pack and list every problem",
        description=(
            "Check a story pack (a TOML file, or a built-in story's id) the way `storyloom play` would load it. "
            "Every problem is listed with its file, line and key, and the keys or values that would be valid "
            "there; the exit status is 2 when there is any. A sound pack gets a summary: what the story's "
            "actions bind, what it leaves free to the narrator, what can never happen in it, and warnings "
            "about verbs and words that mean different things in different rooms. "
            "How to write a pack: docs/authoring.md."
        ),
    )
    check.add_argument("path", help="the pack file to check (or a built-in story's id)")
    commands.add_parser("config", help="print the effective settings (secrets masked)")
    return parser


def _add_play_arguments(play: argparse.ArgumentParser) -> None:
    play.add_argument(
        "--story",
        default=None,
        help=f"a built-in story id (see `storyloom stories`) or a pack file (default: {DEFAULT_STORY})",
    )
    play.add_argument("--narrator", choices=narrator_names(), default=None, help=narrator_help())
    play.add_argument("--model", default=None, help=f"{_for('model')}: the model to ask (default: the narrator's own)")
    play.add_argument(
        "--base-url",
        default=None,
        help=f"{_for('base_url')}: the server's address, e.g. http://127.0.0.1:11434/v1 for a local Ollama",
    )
    play.add_argument("--output", choices=OUTPUTS, default=None, help=f"{_for('output')}: how the turn is returned")
    play.add_argument(
        "--max-tokens",
        type=_non_negative_int,
        default=None,
        help=f"{_for('max_tokens')}: the longest answer (default 1024)",
    )
    play.add_argument(
        "--thinking", action="store_true", help=f"{_for('thinking')}: extended thinking (tool choice auto)"
    )
    play.add_argument("--budget", type=_non_negative_int, default=None, help="corrections per turn (default 2)")
    play.add_argument("--faults", type=_fraction, default=0.0, help=f"{_for('faults')}: rate of realistic faults, 0..1")
    play.add_argument(
        "--seed",
        type=int,
        default=0,
        help=f"{_for('seed')}: the same seed and commands tell the same story word for word (default 0)",
    )
    play.add_argument("--pace", type=float, default=None, help=f"{_for('pace')}: seconds per streamed chunk in the UI")
    play.add_argument("--resume", default=None, help="a save file, or 'latest'")
    play.add_argument("--headless", action="store_true", help="read commands, print prose, no UI")
    play.add_argument(
        "--screen-reader",
        action="store_true",
        default=None,
        help="play with plain lines for a screen reader: each turn printed once, whole, no redrawing "
        "(also the setting screen_reader = true, and offered when TERM=dumb)",
    )
    play.add_argument("--served", action="store_true", help=argparse.SUPPRESS)  # a game of `storyloom serve`
    play.add_argument("--commands", default=None, help="headless: a file of commands, one a line, or -")
    play.add_argument("--save", default=None, help="where to write the save journal")
    play.add_argument("--events", default=None, help="headless: write events as JSON Lines here")
    play.add_argument(
        "--on-fail",
        choices=["stop", "skip", "retry"],
        default="stop",
        help="headless: after a turn fails (its correction budget spent, or its narrator unavailable, "
        "declining or unable to answer), stop (exit 3, the default), skip to the next command, or retry it "
        "(up to 3 times, then stop)",
    )


def _for(option: str) -> str:
    """Which narrators a flag is for, as its help begins ("anthropic/openai")."""
    return "/".join(taking(option)) or "no narrator"


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words or (words[0].startswith("-") and words[0] not in ("-h", "--help")):
        words = ["play", *words]
    args = build_parser().parse_args(words)
    handler = _HANDLERS[args.command]
    try:
        return handler(args)
    except KeyboardInterrupt:
        return EXIT_FAILURE
    except BrokenPipeError:
        # stdout was closed by its reader (`| head`): stop quietly, as other command line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE


def _play(args: argparse.Namespace) -> int:
    if args.headless:
        from storyloom.tui.cli.headless import run_headless

        return run_headless(args)
    if _plain_lines(args):
        from storyloom.tui.cli.screen_reader import run_screen_reader

        return run_screen_reader(args)
    from storyloom.tui.cli.ui import run_app

    return run_app(args)


def _serve(args: argparse.Namespace) -> int:
    from storyloom.tui.cli.serve import run_serve

    play = _Parser(prog="storyloom play")
    _add_play_arguments(play)
    return run_serve(args, play)


def _plain_lines(args: argparse.Namespace) -> bool:
    """The screen-reader front end: asked for by the flag or the setting, or accepted on a `dumb` terminal.

    Never for a game of `storyloom serve`: its tab is a browser's terminal, drawn by the app (the
    setting is the player's terminal's, and plain lines on textual-serve's pipe would be no screen)."""
    if args.served:
        return False
    if args.screen_reader:
        return True
    from storyloom.tui.settings import SettingsError, load_settings

    try:
        if load_settings(args).screen_reader:
            return True
    except SettingsError:
        return False  # the app's start reports it
    if os.environ.get("TERM") != "dumb" or not sys.stdin.isatty():
        return False
    from storyloom.tui.cli.screen_reader import offer_screen_reader

    return offer_screen_reader(sys.stdout)


def _diff(args: argparse.Namespace) -> int:
    if len(args.saves) > 2:
        print("storyloom: diff compares two paths: one save with two --branch, or two saves", file=sys.stderr)
        return EXIT_USAGE
    from storyloom.tui.cli.diff import run_diff

    return run_diff(args)


def _saves_command(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from storyloom.tui.cli import save_commands

        handler: Handler = getattr(save_commands, name)
        return handler(args)

    return run


def _story_command(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from storyloom.tui.cli import story_commands

        handler: Handler = getattr(story_commands, name)
        return handler(args)

    return run


_HANDLERS: dict[str, Handler] = {
    "play": _play,
    "serve": _serve,
    "replay": _saves_command("replay"),
    "verify": _saves_command("verify"),
    "export": _saves_command("export"),
    "diff": _diff,
    "saves": _saves_command("saves"),
    "stories": _story_command("stories"),
    "check-story": _story_command("check_story"),
    "config": _story_command("config"),
}
