"""Numbers the engine and the settings share, in a module light enough to load before the engine.

Settings are read before the first frame is painted; the engine (pydantic models) is not.
"""

DEFAULT_BUDGET = 2
"""Corrections a turn may use before it fails and the retry key appears."""
