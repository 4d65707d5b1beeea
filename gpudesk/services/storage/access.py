"""How a run's machine reaches its folder in the bucket: a role, or short-lived keys.

The desktop decides it at run start (``machine_access``) and hands it to the run
(``services.runs.run_store``), which writes the agent's ``store-config.json`` and, for
short-lived keys only, a mode-600 credentials file. A machine never gets the
account's long-lived keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpudesk.services.storage.uri import StoreUri

KINDS = ("role", "sts", "none")


@dataclass(frozen=True)
class TempCredentials:
    """Short-lived keys (STS) limited to one run's prefix; they end at ``expires`` (UTC)."""

    key_id: str
    secret: str
    token: str
    expires: datetime

    def __repr__(self) -> str:  # never print the secret, even in a traceback's locals
        return f"TempCredentials(key_id={self.key_id!r}, expires={self.expires.isoformat()})"


@dataclass(frozen=True)
class StoreAccess:
    """One run's folder (``store`` with its region) and how the machine may write to it."""

    store: StoreUri
    region: str
    run_id: str
    role: str = ""  # the machine's role (credentials from its metadata service)
    sts: TempCredentials | None = None
    why_none: str = ""  # kind "none": why neither a role nor short-lived keys

    @property
    def kind(self) -> str:
        """``role``, ``sts`` or ``none`` (what ``show --json`` calls ``credentials``)."""
        if self.role:
            return "role"
        return "sts" if self.sts is not None else "none"
