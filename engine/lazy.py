"""Package names that load on first use (PEP 562), so importing a light module stays light.

`storyloom` paints its first frame before the engine's pydantic models are built;
that needs `import engine.safety` (say) not to run every import in `engine/__init__`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each exported name from its module when first asked.

    Args:
        package: the package's `__name__`.
        exports: exported name -> the module (absolute name) that defines it.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # asked once: later lookups find it directly
        return value

    return __getattr__
