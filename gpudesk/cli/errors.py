"""How a verb module says one of its services' errors: ``gpudesk: error: <its message>``.

Each verb module's ``handle_error`` names the error classes that are its own; a class is
looked up only in a module already imported (one not imported cannot have raised it, and
looking does not load it, so ``--help`` stays quick).
"""

from __future__ import annotations

import sys
from typing import Any


def said_error(err: BaseException, *kinds: str) -> int | None:
    """1, after printing ``err``'s message, when ``err`` is one of ``kinds``
    ("package.module:Class", each with a ``message()``); None if not ours."""
    loaded: list[type[BaseException]] = []
    for kind in kinds:
        module_name, _, class_name = kind.partition(":")
        kind_class = getattr(sys.modules.get(module_name), class_name, None)
        if kind_class is not None:
            loaded.append(kind_class)
    if not loaded or not isinstance(err, tuple(loaded)):
        return None
    said: Any = err  # each kind has message(); BaseException does not say so
    print(f"gpudesk: error: {said.message()}", file=sys.stderr)
    return 1
