"""How storyloom says a count: "1 issue", "2 issues", never "issue(s)" (every layer's one helper)."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` and the noun in the form that agrees with it (`nouns` when adding an "s" is wrong)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def were(count: int) -> str:
    """The verb that agrees with a count: "1 turn was", "2 turns were"."""
    return "was" if count == 1 else "were"
