"""Recordings of storyloom's transcript for the calm-reading checks, and what reads them."""

STATUSES = (
    "writing",
    "correcting (",
    "corrected",
    "narrator busy",
    "‹ ",
    "version ",
    "another version",
    "couldn't",
    "cancelled",
    "undone",
    "The story is over",
)
"""How storyloom's status rows start (and the ending's note, which an undo rewrites): rows the calm
rules read as statuses, not as story text (the frame tests, the recordings and `count_tmux` alike)."""
