"""`python -m storyloom.tui.cli`: the `storyloom` command."""

from __future__ import annotations

import sys

from storyloom.tui.cli import main

sys.exit(main())
