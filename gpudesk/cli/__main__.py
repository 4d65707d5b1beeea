"""``python -m gpudesk.cli VERB …``: the command line without the window's entry point."""

from __future__ import annotations

import sys

from gpudesk.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
