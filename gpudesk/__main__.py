"""Entry points: ``gpudesk`` (GUI with no arguments, CLI otherwise) and ``gpudesk-gui``.

Imports are lazy so that the command-line path never loads Qt.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Start the window when called without arguments, else run a CLI verb."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        return main_gui()
    if args[0] == "sync":  # the quick path: only what a sync needs is imported
        from gpudesk.cli.remote import main_sync

        return main_sync(args)
    from gpudesk.cli.entry import main as cli_main

    return cli_main(args)


def main_gui() -> int:
    """Always start the window (the ``gpudesk-gui`` script)."""
    import gc

    gc.disable()  # from the first import on: see app.pause_collection_for_start
    from gpudesk.app import run_gui

    return run_gui()


if __name__ == "__main__":
    sys.exit(main())
