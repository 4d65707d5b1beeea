"""``gpudesk.sizing`` stays importable: it is :mod:`gpudesk.calc.sizing`, the calculator's room.

The same module object under both names (not a copy), so module attributes,
private names and monkeypatching behave alike whichever name is used. New code
imports ``gpudesk.calc.sizing``.
"""

from __future__ import annotations

import sys

from gpudesk.calc import sizing as _moved
from gpudesk.calc.sizing import *  # noqa: F403  (the names type checkers see here)

sys.modules[__name__] = _moved
