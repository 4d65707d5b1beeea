"""User settings: a small versioned model stored as JSON in the config folder.

The loader is tolerant on purpose: a settings file must never stop the app from
starting. Unknown keys are dropped, values of the wrong type or out of range fall
back to their defaults, and a file that is not JSON at all is moved aside to
``settings.json.bad``; each of these is logged as a warning. Writes are atomic
(a temporary file in the same folder, then :func:`os.replace`).

A machine's budget by default (issue 29): ``machine_budget_hours`` hours of the
machine's price (a day, out of the box), unless ``machine_budget_usd`` fixes an amount.
``machine_budget_usd`` = 0 reads as "no fixed amount: the hours", which is also what a
file written when 0 meant "no budget" gets now, on purpose: no budget is never a setting,
only a choice made for one launch (the Launch dialog's "No budget", ``--no-budget``).

Secrets never go here; they live in the OS keyring.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpudesk.services.core import paths
from gpudesk.services.core.files import atomic_write_text

log = logging.getLogger(__name__)

SETTINGS_VERSION = 1
LANGUAGES: tuple[str, ...] = ("system", "en", "zh_CN")
THEMES: tuple[str, ...] = ("system", "light", "dark")
CURRENCIES: tuple[str, ...] = ("USD", "CNY")
"""The currencies the Preferences dialog offers (prices are stored in USD)."""
IDLE_ACTIONS: tuple[str, ...] = ("warn", "stop", "terminate")
MAX_IDLE_MINUTES = 24 * 60
DEFAULT_BUDGET_HOURS = 24.0  # a day of the machine
MAX_BUDGET_HOURS = 366 * 24.0


@dataclass
class Settings:
    version: int = SETTINGS_VERSION
    language: str = "system"
    """``"system"`` follows the OS locale; otherwise ``"en"`` or ``"zh_CN"``."""
    theme: str = "system"
    """``"system"``, ``"light"`` or ``"dark"``."""
    system_scheme_seen: str = ""
    """The OS colour scheme at the last start (``"light"``/``"dark"``, or ``""``): the
    window's first paint uses it, since asking Qt costs ~15 ms; it is checked after."""
    currency: str = "USD"
    """ISO 4217 code used to show prices."""
    default_region: str = ""
    """Provider region preselected when renting; empty means none."""
    mfu: float = 0.35
    """Model FLOPs utilisation assumed by time-to-finish estimates, in (0, 1]."""
    cny_per_usd: float = 7.2
    """The user's exchange rate, used when ``currency`` is ``"CNY"``; > 0."""
    monthly_budget_usd: float = 0.0
    """Spending limit per calendar month in USD; 0 means no budget."""
    machine_budget_usd: float = 0.0
    """A fixed default budget per rented machine in USD; 0 means none fixed: the default
    is then ``machine_budget_hours`` of the machine's price (never "no budget")."""
    machine_budget_hours: float = DEFAULT_BUDGET_HOURS
    """The default budget per machine in hours of its price, in the machine's own
    currency (above 0, at most a year); used where ``machine_budget_usd`` is 0."""
    budget_action: str = "stop"
    """At 100 % of a budget: ``"warn"``, ``"stop"`` or ``"terminate"`` the billing machines."""
    idle_gpu_percent: float = 5.0
    """A machine whose GPU utilisation stays below this (0-100 %) counts as idle."""
    idle_minutes: int = 30
    """...for this many minutes (1 to 1440)."""
    idle_action: str = "warn"
    """What to do with an idle machine: ``"warn"``, ``"stop"`` or ``"terminate"``."""
    welcomed: bool = False
    """True once the first-start welcome has been dismissed."""
    store_keep_days: int = 30
    """Days a run's folder stays in the bucket after the run ends (0 = keep it)."""
    store_keep_checkpoints: int = 3
    """Checkpoints kept in the bucket per run (the newest K, K >= 1)."""
    keep_alive_wait_min: int = 60
    """A kept-alive spot run whose group finds no capacity for this many minutes after a
    reclaim is ended (its group deleted) and you are told what was saved (5 to 10080)."""
    last_plan: dict[str, Any] = field(default_factory=dict)
    """The planner's last inputs, restored at start-up (JSON-compatible values)."""


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _one_of(choices: tuple[str, ...]) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        return isinstance(value, str) and value in choices

    return check


def _is_currency(value: object) -> bool:
    return isinstance(value, str) and len(value) == 3 and value.isascii() and value.isalpha()


def _is_mfu(value: object) -> bool:
    # bool is an int subclass; True is not a utilisation.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and 0.0 < value <= 1.0


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(
        value)


def _is_rate(value: object) -> bool:
    return _is_number(value) and 0.0 < value <= 1000.0  # type: ignore[operator]


def _is_budget(value: object) -> bool:
    return _is_number(value) and 0.0 <= value <= 1e9  # type: ignore[operator]


def _is_hours(value: object) -> bool:
    return _is_number(value) and 0.0 < value <= MAX_BUDGET_HOURS  # type: ignore[operator]


def _is_percent(value: object) -> bool:
    return _is_number(value) and 0.0 <= value <= 100.0  # type: ignore[operator]


def _is_minutes(value: object) -> bool:
    return (not isinstance(value, bool) and isinstance(value, int)
            and 1 <= value <= MAX_IDLE_MINUTES)


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _is_count(value: object, low: int, high: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high


def _is_plan(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


_VALIDATORS: dict[str, Callable[[object], bool]] = {
    "language": _one_of(LANGUAGES),
    "theme": _one_of(THEMES),
    "system_scheme_seen": _one_of(("", "light", "dark")),
    "currency": _is_currency,
    "default_region": _is_str,
    "mfu": _is_mfu,
    "cny_per_usd": _is_rate,
    "monthly_budget_usd": _is_budget,
    "machine_budget_usd": _is_budget,
    "machine_budget_hours": _is_hours,
    "idle_gpu_percent": _is_percent,
    "idle_minutes": _is_minutes,
    "idle_action": _one_of(IDLE_ACTIONS),
    "budget_action": _one_of(IDLE_ACTIONS),
    "welcomed": _is_bool,
    "last_plan": _is_plan,
    "store_keep_days": lambda v: _is_count(v, 0, 3650),
    "store_keep_checkpoints": lambda v: _is_count(v, 1, 1000),
    "keep_alive_wait_min": lambda v: _is_count(v, 5, 10080),
}
_FLOAT_FIELDS = frozenset({"mfu", "cny_per_usd", "monthly_budget_usd", "machine_budget_usd",
                           "machine_budget_hours", "idle_gpu_percent"})


def is_valid(key: str, value: object) -> bool:
    """Whether ``value`` is acceptable for the setting ``key`` (the loader's own rule)."""
    check = _VALIDATORS.get(key)
    return check is not None and check(value)

# Migrations from version N to N + 1, applied in order to the raw dict before
# validation. Add one here whenever a field is renamed or its meaning changes.
_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def _migrate(raw: dict[str, Any], source: Path) -> dict[str, Any]:
    version = raw.get("version", SETTINGS_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        log.warning("%s: invalid settings version %r; reading it as version 1", source, version)
        version = 1
    if version > SETTINGS_VERSION:
        log.warning(
            "%s: settings version %d is newer than this gpudesk understands (%d); "
            "keeping the fields it knows",
            source,
            version,
            SETTINGS_VERSION,
        )
        return raw
    while version < SETTINGS_VERSION:
        migrate = _MIGRATIONS.get(version)
        if migrate is not None:
            raw = migrate(raw)
        version += 1
    return raw


def settings_from_dict(raw: dict[str, Any], source: Path | str = "<settings>") -> Settings:
    """Build a :class:`Settings` from untrusted data, keeping every valid field."""
    source = Path(source)
    raw = _migrate(dict(raw), source)
    defaults = Settings()
    known = {f.name for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            log.warning("%s: dropping unknown setting %r", source, key)
            continue
        if key == "version":
            continue
        if not _VALIDATORS[key](value):
            log.warning(
                "%s: setting %r has invalid value %r; using the default %r",
                source,
                key,
                value,
                getattr(defaults, key),
            )
            continue
        values[key] = float(value) if key in _FLOAT_FIELDS else value
    return Settings(**values)


def load_settings(path: Path | None = None) -> Settings:
    """Read the settings file; any problem is logged and answered with defaults."""
    path = paths.settings_file() if path is None else path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as exc:
        log.warning("%s: cannot read settings (%s); using defaults", path, exc)
        return Settings()
    try:
        raw = json.loads(data.decode("utf-8"))
        if not isinstance(raw, dict):
            raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    except (ValueError, UnicodeDecodeError) as exc:
        bad = path.with_name(path.name + ".bad")
        try:
            os.replace(path, bad)
        except OSError as move_exc:
            log.warning("%s: corrupt settings (%s), cannot move aside: %s", path, exc, move_exc)
        else:
            log.warning("%s: corrupt settings (%s); moved to %s, using defaults", path, exc, bad)
        return Settings()
    return settings_from_dict(raw, path)


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Write the settings atomically: readers see the old file or the new one, never half."""
    path = paths.settings_file() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(settings)
    data["version"] = SETTINGS_VERSION
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)
    return path
