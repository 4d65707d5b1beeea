"""The log file: rotating, scrubbed of secrets, readable by its owner alone.

Its own module so the CLI can log without importing the window's start-up code.
The window opens the file after its first paint (``logging.handlers`` and what it
imports cost ~10 ms); records from before are held and written then.
"""

from __future__ import annotations

import io
import logging
import os
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Whatever a library logs, a key or a private key never reaches the file."""

    def format(self, record: logging.LogRecord) -> str:
        from gpudesk.services.core.redact import redact

        return redact(super().format(record))


def private_rotating_handler(path: str, max_bytes: int = 2_000_000,
                             backups: int = 3) -> logging.Handler:
    """A rotating file handler whose files are created 0600."""
    import logging.handlers

    class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
        """Creates each log file 0600: host names, account ids and paths are nobody else's."""

        def _open(self) -> io.TextIOWrapper:
            fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # a file from an older version may be wider
            return open(fd, self.mode, encoding=self.encoding, errors=self.errors)  # type: ignore[return-value]  # noqa: SIM115, E501

    return PrivateRotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups,
                                      encoding="utf-8")


class _EarlyRecords(logging.Handler):
    """Holds what is logged before the file is open; ``setup_logging`` writes it out."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def hold_early_records(level: int = logging.INFO) -> None:
    """Keep records in memory until ``setup_logging`` opens the file."""
    root = logging.getLogger()
    root.setLevel(level)
    if not any(isinstance(h, _EarlyRecords) or getattr(h, "_gpudesk", False)
               for h in root.handlers):
        root.addHandler(_EarlyRecords())


def setup_logging(level: int = logging.INFO) -> None:
    """Log to a rotating file in the user log folder, and warnings to stderr."""
    from gpudesk.services.core import paths

    root = logging.getLogger()
    root.setLevel(level)
    if any(getattr(h, "_gpudesk", False) for h in root.handlers):
        return
    early = [h for h in root.handlers if isinstance(h, _EarlyRecords)]
    try:
        file_handler: logging.Handler = private_rotating_handler(str(paths.log_file()))
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
    for held in early:
        root.removeHandler(held)
        for record in held.records:
            for handler in handlers:
                if record.levelno >= handler.level:
                    handler.handle(record)
