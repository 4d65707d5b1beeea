"""Qt front end: widgets, dialogs and plots over :mod:`gpudesk.services`.

Services never import this package; everything here runs on the GUI thread.

On Python 3.11, PySide6 6.12 returns ``None`` from every void C++ call (and
from an empty ``QVariant``), and ``True``/``False`` from ``Signal.emit`` and
``disconnect``, without taking a reference: it assumes the immortal
singletons of Python 3.12+. After a few thousand calls one of them is
"freed" and the interpreter aborts (``none_dealloc`` / ``bool_dealloc``).
Until the project moves to Python 3.12 or a fixed PySide6, importing this
package gives those three a reference count no session can exhaust.
``tests/test_ui_plan.py`` checks that the shield is in place.
"""

from __future__ import annotations

import ctypes
import sys

SHIELD = 1 << 40


def _shield_singletons() -> None:
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return  # immortal there
    for singleton in (None, True, False):
        refcount = ctypes.c_ssize_t.from_address(id(singleton))  # ob_refcnt comes first
        if refcount.value < SHIELD:
            refcount.value += SHIELD


_shield_singletons()
