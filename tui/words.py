"""How the front ends say a count: "1 issue", "2 issues", never "issue(s)"."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` and the noun in the form that agrees with it (`nouns` when adding an "s" is wrong)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
