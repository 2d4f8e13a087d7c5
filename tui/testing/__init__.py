"""Testing aids for Textual apps: the frame-geometry recorder (a pytest plugin) and a gated narrator."""
