"""The steps that run before the training and then become it: ``STEP [options] -- COMMAND``.

``fetch-data`` and ``fetch-resume`` take their own options before ``--`` and the
training's command after it; once their work is done they put what they found into
the environment and ``exec`` the command, so the training is the same process the
launcher started (its pid, its signals).
"""

from __future__ import annotations

import os
import sys
from typing import List
from typing import Mapping
from typing import Optional
from typing import Sequence
from typing import Tuple


def split_command(argv: Optional[Sequence[str]]) -> Tuple[List[str], List[str]]:
    """The step's own words and the command after ``--`` (empty without one);
    ``argv`` None reads the process's."""
    words = list(sys.argv[1:] if argv is None else argv)
    if "--" not in words:
        return words, []
    cut = words.index("--")
    return words[:cut], words[cut + 1:]


def exec_command(command: Sequence[str], env: Mapping[str, str]) -> None:
    """Become ``command`` with ``env``; nothing happens without a command."""
    if command:
        os.execvpe(command[0], list(command), env)
