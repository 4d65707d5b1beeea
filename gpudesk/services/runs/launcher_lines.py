"""The run launcher's own ``gpudesk:`` lines, read back out of a run's log as ``Said``.

The launcher runs on the machine without Qt and writes its few lines in English
(``run_launcher_script.SAID_LINES``); the window finds them in the log it shows and
translates them as it does every other ``gpudesk:`` line.
"""

from __future__ import annotations

import re

from gpudesk.services.core.said import Said
from gpudesk.services.runs.run_launcher_script import SAID_LINES

PREFIX = "gpudesk: "
CONTEXT = "Runs"  # the launcher marks its lines in this context


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)  # literal, name, literal, name, …
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.*?)"
                              for i, p in enumerate(parts)) + r"\Z")


_PATTERNS = tuple((template, _pattern(template)) for template in SAID_LINES)


def said_in_log(line: str) -> Said | None:
    """The launcher's line ``line`` (without its newline) as a Said; None for any other."""
    if not line.startswith(PREFIX):
        return None
    rest = line[len(PREFIX):]
    for template, pattern in _PATTERNS:
        found = pattern.match(rest)
        if found:
            return Said(CONTEXT, template, **found.groupdict())
    return None
