"""Entry script of the frozen app (see ``gpudesk.spec``); one script for both executables.

The spec builds two executables from one analysis: ``gpudesk`` (console: the
command line, or the window when run without arguments, like the pip-installed
``gpudesk`` script) and ``gpudesk-gui`` (no console on Windows/macOS: always the
window, like ``gpudesk-gui``). The executable's own name picks the behaviour.
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

from gpudesk.__main__ import main
from gpudesk.__main__ import main_gui

if __name__ == "__main__":
    # The Run page syncs in a spawned child (gpudesk.services.remote.sync_process); in a frozen
    # app that child is this executable again, and freeze_support runs it as the child.
    multiprocessing.freeze_support()
    if Path(sys.executable).stem.lower().endswith("-gui"):
        sys.exit(main_gui())
    sys.exit(main())
