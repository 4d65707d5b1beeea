"""A faster answer to the question PySide6 asks of every module imported after it.

PySide6's ``__feature__`` support (PYSIDE-2029) decides per module whether it uses
PySide by reading its whole source with ``inspect.getsource`` (linecache and the
tokenizer) and looking for the text "PySide6". gpudesk imports some 180 modules after
Qt, so this cost about 20 ms before the window's first paint and 40 ms before it was
ready (``benchmarks/bench_startup.py``). The same question is answered here from the
file's bytes; a module without a ``.py`` file is still asked the upstream way, and
where PySide's internals are not what this expects nothing is changed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

_MARK = "_gpudesk_reads_bytes"


def speed_up_pyside_source_check() -> bool:
    """Install the byte-reading check after PySide6 is imported; True if installed."""
    feature = sys.modules.get("shibokensupport.feature")
    upstream = getattr(feature, "_mod_uses_pyside", None)
    if feature is None or not callable(upstream):
        return False
    if getattr(upstream, _MARK, False):
        return True
    feature._mod_uses_pyside = _reading_bytes(upstream)  # type: ignore[attr-defined]
    return True


def _reading_bytes(upstream: Callable[[ModuleType], bool]) -> Callable[[ModuleType], bool]:
    def uses_pyside(module: ModuleType) -> bool:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            return upstream(module)
        try:
            with open(path, "rb") as source:
                return b"PySide6" in source.read()
        except OSError:
            return upstream(module)

    setattr(uses_pyside, _MARK, True)
    return uses_pyside
