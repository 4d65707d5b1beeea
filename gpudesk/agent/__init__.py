"""gpudesk's agent: the small program that runs ON the rented machine.

It samples the GPUs into a bounded JSON-lines file the desktop tails, watches
the cloud's spot notice, and enforces the idle and budget rules the app set,
so the money is protected while the laptop is shut.

Constraints that shape every module here: the standard library only (pynvml
is used when it happens to import), Python 3.8+, no Qt, and relative imports
only, so the folder also runs on its own after being uploaded
(``python3 path/to/agent --dir RUNDIR``).
"""

from __future__ import annotations

AGENT_VERSION = "1"
