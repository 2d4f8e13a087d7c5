"""Narrators: who writes the turns. See `engine.narration` for the interface."""
