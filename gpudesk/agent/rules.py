"""rules.json: what the app tells the agent to enforce and watch, validated on load.

Written by the app at bootstrap (and rewritten when the user changes a
budget or the spot price changes)::

    {"runs_dir": "/home/ubuntu/.gpudesk/runs",      # default: <agent dir>/runs
     "interval_ms": 1000, "procs_every_s": 5,
     "metrics": {"max_bytes": 33554432, "keep": 8},
     "idle":   {"below_pct": 5, "minutes": 30, "action": "stop"},
     "budget": {"cap": 100.0, "currency": "USD", "price_per_hour": 3.06,
                "since": 1700000000.0, "spent_before": 12.5,
                "thresholds": [50, 80, 100], "action": "stop"},
     "commands": {"stop": ["sudo", "-n", "shutdown", "-h", "now"],
                  "terminate": ["sudo", "-n", "shutdown", "-h", "now"], "warn": []},
     "spot": {"provider": "aws", "base_url": "http://169.254.169.254", "every_s": 5}}

Budget spend = ``spent_before + price_per_hour × billable hours since ``since```, the
billable seconds being those the machine was up (``guard.SpendMeter``, kept in the
agent folder's ``spend.json``): a stopped machine's hours are not counted.
A rule's identity (``id``, else a hash of what defines it: the cap, currency,
thresholds and action; the idle threshold, minutes and action) decides what
"already fired" means: rewriting ``price_per_hour``/``since``/``spent_before``
keeps it, raising the cap makes a new budget whose thresholds fire anew.
Wrong types or values raise ``RulesError`` naming the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Dict
from typing import Mapping
from typing import Optional
from typing import Tuple

from .metrics import DEFAULT_KEEP
from .metrics import DEFAULT_MAX_BYTES

ACTIONS = ("stop", "terminate", "warn")
# Without a configured command, stop and terminate power the machine off: on EC2 that
# stops (or terminates, per the instance's shutdown behaviour); billing ends either way.
DEFAULT_POWEROFF = ("sudo", "-n", "shutdown", "-h", "now")
SPOT_PROVIDERS = ("aws", "tencent", "aliyun", "none")
AWS_IMDS = "http://169.254.169.254"
TENCENT_METADATA = "http://metadata.tencentyun.com"
ALIYUN_METADATA = "http://100.100.100.200"  # ECS instance metadata


class RulesError(ValueError):
    """rules.json is not something the agent can enforce; the message names the field."""


@dataclass(frozen=True)
class IdleRule:
    below_pct: float
    minutes: float
    action: str
    id: str


@dataclass(frozen=True)
class BudgetRule:
    cap: float
    price_per_hour: float
    since: float
    spent_before: float
    action: str
    id: str
    thresholds: Tuple[float, ...] = (50.0, 80.0, 100.0)
    currency: str = "USD"

    def spend(self, now: float) -> float:
        return self.spent_before + self.price_per_hour * max(0.0, now - self.since) / 3600.0


@dataclass(frozen=True)
class SpotConfig:
    provider: str = "none"
    base_url: str = ""
    every_s: float = 5.0


@dataclass(frozen=True)
class Rules:
    idle: Optional[IdleRule] = None
    budget: Optional[BudgetRule] = None
    commands: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    spot: SpotConfig = SpotConfig()
    runs_dir: Optional[Path] = None
    interval_ms: int = 1000
    procs_every_s: float = 5.0
    metrics_max_bytes: int = DEFAULT_MAX_BYTES
    metrics_keep: int = DEFAULT_KEEP

    def command(self, action: str) -> Tuple[str, ...]:
        if action in self.commands:
            return self.commands[action]
        return () if action == "warn" else DEFAULT_POWEROFF


def _num(d: Mapping[str, Any], key: str, where: str, default: Any = None, *,
         low: float = 0.0, positive: bool = False) -> float:
    value = d.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value < low or (positive and value <= 0):
        raise RulesError(f"{where}.{key} must be a {'positive ' if positive else ''}number, "
                         f"got {value!r}")
    return float(value)


def _action(d: Mapping[str, Any], where: str) -> str:
    action = d.get("action", "stop")
    if action not in ACTIONS:
        raise RulesError(f"{where}.action must be one of {', '.join(ACTIONS)}, got {action!r}")
    return str(action)


def _digest(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:12]


def _section(data: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RulesError(f"{key} must be an object, got {type(value).__name__}")
    return value


def parse_rules(data: Any) -> Rules:
    if not isinstance(data, dict):
        raise RulesError("rules must be a JSON object")
    idle = budget = None
    d = _section(data, "idle")
    if d is not None:
        pct = _num(d, "below_pct", "idle", 5)
        if pct > 100:
            raise RulesError(f"idle.below_pct must be at most 100, got {pct}")
        minutes = _num(d, "minutes", "idle", positive=True)
        action = _action(d, "idle")
        idle = IdleRule(pct, minutes, action, str(d.get("id") or _digest("idle", pct, minutes,
                                                                         action)))
    d = _section(data, "budget")
    if d is not None:
        cap = _num(d, "cap", "budget", positive=True)
        raw = d.get("thresholds", [50, 80, 100])
        if not isinstance(raw, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= 1000
                for x in raw):
            raise RulesError(f"budget.thresholds must be a list of percentages, got {raw!r}")
        thresholds = tuple(sorted({float(x) for x in raw}))
        currency = str(d.get("currency", "USD"))
        action = _action(d, "budget")
        budget = BudgetRule(
            cap=cap, price_per_hour=_num(d, "price_per_hour", "budget"),
            since=_num(d, "since", "budget"), spent_before=_num(d, "spent_before", "budget", 0),
            action=action, thresholds=thresholds, currency=currency,
            id=str(d.get("id") or _digest("budget", cap, currency, thresholds, action)))
    commands: Dict[str, Tuple[str, ...]] = {}
    for name, argv in (_section(data, "commands") or {}).items():
        if name not in ACTIONS or not isinstance(argv, list) or \
                not all(isinstance(a, str) for a in argv):
            raise RulesError(f"commands.{name} must be a list of strings for one of "
                             f"{', '.join(ACTIONS)}")
        commands[name] = tuple(argv)
    s = _section(data, "spot") or {}
    provider = s.get("provider", "none")
    if provider not in SPOT_PROVIDERS:
        raise RulesError(f"spot.provider must be one of {', '.join(SPOT_PROVIDERS)}, "
                         f"got {provider!r}")
    base = s.get("base_url") or {"aws": AWS_IMDS, "tencent": TENCENT_METADATA,
                                 "aliyun": ALIYUN_METADATA}.get(provider, "")
    spot = SpotConfig(str(provider), str(base).rstrip("/"),
                      _num(s, "every_s", "spot", 5.0, positive=True))
    runs_dir = data.get("runs_dir")
    if runs_dir is not None and not isinstance(runs_dir, str):
        raise RulesError("runs_dir must be a path")
    m = _section(data, "metrics") or {}
    return Rules(
        idle=idle, budget=budget, commands=commands, spot=spot,
        runs_dir=Path(runs_dir) if runs_dir else None,
        interval_ms=int(_num(data, "interval_ms", "rules", 1000, low=10)),
        procs_every_s=_num(data, "procs_every_s", "rules", 5.0, positive=True),
        metrics_max_bytes=int(_num(m, "max_bytes", "metrics", DEFAULT_MAX_BYTES, low=1024)),
        metrics_keep=int(_num(m, "keep", "metrics", DEFAULT_KEEP, low=1)),
    )


def load_rules(path: Path | None) -> Rules:
    if path is None:
        return Rules()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise RulesError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise RulesError(f"{path} is not JSON: {exc}") from None
    return parse_rules(data)


def boot_id() -> str:
    """Changes at every boot: a stop fired on a previous boot must not block this one's."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()[:64]
    except OSError:
        return ""


__all__ = ["ACTIONS", "BudgetRule", "IdleRule", "Rules", "RulesError", "SpotConfig",
           "boot_id", "load_rules", "parse_rules"]
