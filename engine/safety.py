"""Making model text safe to show: it must never act on the terminal or on the reader.

Model output is untrusted. Before it reaches a screen it loses escape sequences
(which could move the cursor, retitle the window or rewrite earlier lines), C0
and C1 control characters other than newline and tab, bidi overrides (which can
make text read differently from how it is stored) and zero-width characters
(which hide content). Markup is a separate concern: the UI renders text as
plain content, never as markup.
"""

from __future__ import annotations

import re

_ESCAPE_SEQUENCE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]          # CSI: colours, cursor moves
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?   # OSC: window titles, hyperlinks
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?  # DCS, SOS, PM, APC strings
    | \x1b[ -/]*[0-~]                # two-character escapes
    | \x9b[0-?]*[ -/]*[@-~]          # 8-bit CSI
    """,
    re.VERBOSE,
)
_UNSAFE_CHARACTERS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (except tab, newline) and C1 controls, DEL
    "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"  # zero-width, line/para separators, bidi marks
)


def safe_text(s: str) -> str:
    """`s` with escape sequences, control characters (except newline and tab), bidi overrides
    and zero-width characters removed (Windows line ends become plain newlines)."""
    s = s.replace("\r\n", "\n")
    s = _ESCAPE_SEQUENCE.sub("", s)
    return _UNSAFE_CHARACTERS.sub("", s)
