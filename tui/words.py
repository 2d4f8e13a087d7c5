"""How the front ends say a count: "1 issue", "2 issues", never "issue(s)" (the engine's one helper)."""

from __future__ import annotations

from storyloom.engine.words import plural

__all__ = ["plural"]
