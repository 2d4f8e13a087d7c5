"""The offline narrator: a deterministic game master that needs no key and no server.

Its parts, each knowing less than the one before:

- `narrator`: `OfflineNarrator`, which streams answers like a remote model and makes
  (and corrects) a model's realistic mistakes on request;
- `world`: what a command does to the world, written as a turn that passes every rule;
- `parse`: a player's line turned into a command against the pack;
- `prose`: the phrasebook the other parts write with.
"""

from __future__ import annotations

from storyloom.engine.narrators.offline.narrator import FAULT_KINDS, OfflineNarrator

__all__ = ["FAULT_KINDS", "OfflineNarrator"]
