"""`python -m tui.cli`: the `storyloom` command."""

from __future__ import annotations

import sys

from tui.cli import main

sys.exit(main())
