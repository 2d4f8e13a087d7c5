"""Narrators: who writes the turns. See `engine.narrators.base` for the interface."""
