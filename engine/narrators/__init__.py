"""Narrators: who writes the turns (`offline/`, `anthropic`, `openai`, `replay`), and the prompts the
model narrators send (`prompts`). See `storyloom.engine.narration` for the interface they implement."""
