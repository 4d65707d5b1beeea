"""Moved to :mod:`gpudesk.calc.finetune`; this old name is kept until its last importers move.

The same module object under both names (not a copy), so module attributes,
private names and monkeypatching behave alike whichever name is used.
"""

from __future__ import annotations

import sys

from gpudesk.calc import finetune as _moved
from gpudesk.calc.finetune import *  # noqa: F403  (the names type checkers see here)

sys.modules[__name__] = _moved
