"""The log file: rotating, scrubbed of secrets, readable by its owner alone.

Its own module so the CLI can log without importing the window's start-up code.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys

from gpudesk.services.core import paths

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Whatever a library logs, a key or a private key never reaches the file."""

    def format(self, record: logging.LogRecord) -> str:
        from gpudesk.services.core.redact import redact

        return redact(super().format(record))


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Creates each log file 0600: host names, account ids and paths are nobody else's."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # a file from an older version may be wider
        return open(fd, self.mode, encoding=self.encoding, errors=self.errors)  # type: ignore[return-value]  # noqa: SIM115, E501


def setup_logging(level: int = logging.INFO) -> None:
    """Log to a rotating file in the user log folder, and warnings to stderr."""
    root = logging.getLogger()
    root.setLevel(level)
    if any(getattr(h, "_gpudesk", False) for h in root.handlers):
        return
    try:
        file_handler: logging.Handler = PrivateRotatingFileHandler(
            paths.log_file(), maxBytes=2_000_000, backupCount=3, encoding="utf-8"
        )
    except OSError as exc:  # a read-only home must not stop the app
        file_handler = logging.NullHandler()
        if sys.stderr is not None:
            print(f"gpudesk: cannot open the log file: {exc}", file=sys.stderr)
    file_handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    handlers = [file_handler]
    if sys.stderr is not None:  # None under a Windows gui-script
        stderr_handler = logging.StreamHandler(sys.stderr)
        stderr_handler.setLevel(logging.WARNING)
        stderr_handler.setFormatter(RedactingFormatter(LOG_FORMAT))
        handlers.append(stderr_handler)
    for handler in handlers:
        handler._gpudesk = True  # type: ignore[attr-defined]
        root.addHandler(handler)
