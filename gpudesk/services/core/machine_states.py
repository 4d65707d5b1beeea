"""The normalised machine states every provider maps its own onto.

Here, below both the cloud providers and the ledger, because the ledger records
them and decides from them what bills, without knowing any provider.
"""

from __future__ import annotations

STATE_PENDING = "pending"
STATE_RUNNING = "running"
STATE_STOPPING = "stopping"
STATE_STOPPED = "stopped"
STATE_TERMINATED = "terminated"  # includes "shutting-down": billing has ended or is ending
BILLING_STATES = frozenset({STATE_PENDING, STATE_RUNNING, STATE_STOPPING})
