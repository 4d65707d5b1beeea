"""The normalised machine states every provider maps its own onto, and which of them bill.

Here, below both the cloud providers and the ledger, because the ledger records
them and decides from them what bills, without knowing any provider's SDK.

"Stopped" is not one billing state but two, and only the cloud can say which:

* EC2: a stopped instance bills its EBS volumes only (``STOPPED_DISK_ONLY``).
* Tencent CVM: ``StopChargingMode`` in DescribeInstances. ``STOP_CHARGING``: CPU,
  GPU and memory no longer bill (disks, bandwidth and images still do).
  ``KEEP_CHARGING`` (the default of StopInstances, and what a shutdown from inside
  the machine gets) or ``NOT_APPLICABLE`` (the machine cannot stop charging: spot,
  prepaid, local disks) on a stopped machine: it bills as if it were running.
* Alibaba ECS: ``StoppedMode``. ``StopCharging`` (economical mode): compute no
  longer bills; ``KeepCharging`` or ``Not-applicable``: it bills as if running.

So a stopped machine bills its compute unless its cloud's word says it does not:
an unknown word is billing, never "nothing is billing".
"""

from __future__ import annotations

STATE_PENDING = "pending"
STATE_RUNNING = "running"
STATE_STOPPING = "stopping"
STATE_STOPPED = "stopped"
STATE_TERMINATED = "terminated"  # includes "shutting-down": billing has ended or is ending
# States that bill (or may) whatever the cloud's word: a stopped machine may bill too, see
# is_billing (the one question everything that asks "is it billing?" should ask).
BILLING_STATES = frozenset({STATE_PENDING, STATE_RUNNING, STATE_STOPPING})

# The clouds' own words for what a stopped machine bills (CloudInstance.stopped_mode).
CVM_KEEP_CHARGING = "KEEP_CHARGING"
CVM_STOP_CHARGING = "STOP_CHARGING"
CVM_NOT_APPLICABLE = "NOT_APPLICABLE"
ECS_KEEP_CHARGING = "KeepCharging"
ECS_STOP_CHARGING = "StopCharging"
ECS_NOT_APPLICABLE = "Not-applicable"
STOPPED_DISK_ONLY = "stopped (disk only)"  # EC2's rule, which it never names
# Words that say "compute no longer bills while stopped" (the disks still do).
DISK_ONLY_WORDS = frozenset({CVM_STOP_CHARGING, ECS_STOP_CHARGING, STOPPED_DISK_ONLY})
KEEP_CHARGING_WORDS = frozenset({CVM_KEEP_CHARGING, ECS_KEEP_CHARGING})
# Providers whose stop always ends the compute bill (the word may be absent).
_STOP_ENDS_COMPUTE = frozenset({"aws"})
_NEVER_BILLS = frozenset({"own"})

# What the ledger and the faces call a stopped machine that still bills its compute.
STOPPED_STILL_BILLING = "stopped (still billing)"


def stopped_word(provider: str, word: str) -> str:
    """The cloud's word for a stopped machine, with EC2's unnamed rule filled in."""
    if not word and provider in _STOP_ENDS_COMPUTE:
        return STOPPED_DISK_ONLY
    return word


def stopped_bills_compute(provider: str, word: str) -> bool:
    """Does a stopped (or stopping) machine of ``provider`` with the cloud's ``word`` still
    bill CPU/GPU/memory? Only a word that says it does not (or EC2) makes it stop."""
    if provider in _NEVER_BILLS:
        return False
    return stopped_word(provider, word) not in DISK_ONLY_WORDS


def bills_compute(provider: str, state: str, word: str = "") -> bool:
    """Is the machine's compute billed in ``state``? Running always; stopping and stopped
    unless the cloud's word (``StopChargingMode``, ``StoppedMode``) says otherwise.

    A stopping machine whose word is not known yet is counted as still stopping the bill
    (the ledger's old rule) unless the word says it keeps charging."""
    if provider in _NEVER_BILLS:
        return False
    if state == STATE_RUNNING:
        return True
    if state == STATE_STOPPED:
        return stopped_bills_compute(provider, word)
    if state == STATE_STOPPING:
        return word in KEEP_CHARGING_WORDS
    return False


def is_billing(provider: str, state: str, word: str = "") -> bool:
    """Could this machine be costing its compute price now? The one answer the Instances
    banner, the tray, budgets, reconcile's alert and the quit box should all use."""
    if provider in _NEVER_BILLS:
        return False
    return state in BILLING_STATES or bills_compute(provider, state, word)


def billing_label(provider: str, state: str, word: str = "") -> str:
    """The state as the money sees it: ``stopped (still billing)`` for a stopped machine
    that bills its compute, else the state itself."""
    if state == STATE_STOPPED and bills_compute(provider, state, word):
        return STOPPED_STILL_BILLING
    return state


def billing_state(provider: str, state: str, word: str = "") -> str:
    """The cloud's own word on what the machine bills now, for ``gpudesk show --json``:
    ``KEEP_CHARGING``, ``StopCharging``, ``stopped (disk only)``…; for a machine that is
    not stopped, its state (``running``)."""
    if state in (STATE_STOPPED, STATE_STOPPING):
        return stopped_word(provider, word) or (
            STOPPED_STILL_BILLING if bills_compute(provider, state, word) else state)
    return state
