"""A run's own checkpoint and restart times, for its expected cost on spot (issue 33).

The expected cost assumes a checkpoint every 30 minutes that takes a minute to write and
15 minutes to come back after a reclaim, unless something better is known. A run that
already ran knows better, from its own record:

- each checkpoint's sidecar (``ckpt-<step>.json``, ``gpudesk/training/checkpoint.py``)
  says when it was written (``time``) and how long the write took (``write_s``); the
  desktop keeps copies of the newest ones (``spot_recovery.mirror_dir``). The interval
  is the median gap between consecutive checkpoints written on the same machine;
- the run's story (``run_story``: the bucket's ``spend.json`` and ``machines/*.json``)
  says when a machine was reclaimed (``to``) and when the run went on on the next one
  (``resumed_at``, after its set-up and the checkpoint fetch; else the next machine's
  ``from``, which leaves the fetch out, and says so).

A figure with no sample stays the default and says so. Medians: one slow write or one
long wait for capacity is a fact of that run, not its typical cost.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpudesk.services.plan.expected_cost import SpotAssumptions

ASSUMED = "assumed: gpudesk's default"
GIVEN = "given by the user"
FIGURES = ("checkpoint_minutes", "restart_minutes", "checkpoint_cost_seconds")


@dataclass(frozen=True)
class Measured:
    """One figure of a run: its median over ``samples`` measurements, and from where."""

    value: float | None  # None: nothing measured
    samples: int
    source: str


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def read_sidecars(folder: Path) -> list[dict[str, Any]]:
    """The checkpoint sidecars kept in ``folder`` (``ckpt-*.json``), oldest step first;
    unreadable ones are skipped."""
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob("ckpt-*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("step"), int):
            found.append(data)
    return sorted(found, key=lambda d: int(d["step"]))


def checkpoint_figures(sidecars: Sequence[dict[str, Any]], where: str
                       ) -> tuple[Measured, Measured]:
    """(interval in minutes, write time in seconds) from a run's checkpoint sidecars."""
    gaps: list[float] = []
    for older, newer in zip(sidecars, sidecars[1:], strict=False):
        t0, t1 = _num(older.get("time")), _num(newer.get("time"))
        if t0 is None or t1 is None or older.get("host") != newer.get("host") or t1 <= t0:
            continue  # another machine between them: the gap holds a reclaim
        gaps.append((t1 - t0) / 60)
    writes = [w for w in (_num(s.get("write_s")) for s in sidecars) if w is not None and w >= 0]
    interval = (Measured(statistics.median(gaps), len(gaps),
                         f"median of {len(gaps)} gap(s) between the run's checkpoints ({where})")
                if gaps else Measured(None, 0, ASSUMED))
    cost = (Measured(statistics.median(writes), len(writes),
                     f"median write time of {len(writes)} checkpoint(s) ({where})")
            if writes else Measured(None, 0, ASSUMED))
    return interval, cost


def restart_figure(stints: Iterable[Any], where: str) -> Measured:
    """Minutes from each reclaim to the run going on again on the next machine."""
    ordered = sorted(stints, key=lambda s: s.start or 0.0)
    waits: list[float] = []
    fetch_left_out = False
    for gone, nxt in zip(ordered, ordered[1:], strict=False):
        if gone.why != "reclaimed" or gone.end is None:
            continue
        back = nxt.resumed_at if getattr(nxt, "resumed_at", None) is not None else nxt.start
        if back is None or back < gone.end:
            continue
        fetch_left_out |= getattr(nxt, "resumed_at", None) is None
        waits.append((back - gone.end) / 60)
    if not waits:
        return Measured(None, 0, ASSUMED)
    said = f"median of {len(waits)} reclaim(s) to the run going on again ({where})"
    if fetch_left_out:
        said += "; the checkpoint fetch is not in every one"
    return Measured(statistics.median(waits), len(waits), said)


@dataclass(frozen=True)
class RunFigures:
    """A run's measured checkpoint interval, restart time and checkpoint write time."""

    run_id: str
    checkpoint_minutes: Measured
    restart_minutes: Measured
    checkpoint_cost_seconds: Measured
    note: str = ""  # what could not be read (the bucket), "" when all was

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "note": self.note or None,
                **{name: {"value": getattr(self, name).value,
                          "samples": getattr(self, name).samples,
                          "source": getattr(self, name).source} for name in FIGURES}}

    def assumptions(self, base: SpotAssumptions) -> SpotAssumptions:
        """``base`` with every measured figure in place of its default; ``assumed`` only
        while some figure is still gpudesk's default; ``sources`` names where each
        came from."""
        values = {}
        sources = dict(base.sources)
        for name in FIGURES:
            m: Measured = getattr(self, name)
            if sources.get(name, ASSUMED) != ASSUMED:
                continue  # the user's own figure wins
            if m.value is not None and m.value > 0 or (
                    name == "checkpoint_cost_seconds" and m.value is not None):
                values[name] = m.value
                sources[name] = f"run {self.run_id}: {m.source}"
            else:
                sources[name] = ASSUMED
        assumed = any(sources.get(n, ASSUMED) == ASSUMED for n in FIGURES)
        return replace(base, **values, assumed=assumed,
                       sources=tuple(sorted(sources.items())))


def given(figures: dict[str, float | None], budget: float | None = None) -> SpotAssumptions:
    """The defaults with the user's own figures (``None``: not given) in their place."""
    values = {k: float(v) for k, v in figures.items() if k in FIGURES and v is not None}
    sources = {k: GIVEN if k in values else ASSUMED for k in FIGURES}
    return replace(SpotAssumptions(), **values, budget_usd=budget,
                   assumed=len(values) < len(FIGURES), sources=tuple(sorted(sources.items())))


def measure(run_id: str, sidecars: Sequence[dict[str, Any]], stints: Iterable[Any], *,
            sidecar_where: str, story_where: str, note: str = "") -> RunFigures:
    interval, cost = checkpoint_figures(sidecars, sidecar_where)
    return RunFigures(run_id, interval, restart_figure(stints, story_where), cost, note)


def of_run(record: Any, *, client: Any = None) -> RunFigures:
    """Blocking (the bucket): a run's figures from its mirrored checkpoints and story."""
    from gpudesk.services.runs.run_story import story
    from gpudesk.services.runs.spot_recovery import mirror_dir

    folder = mirror_dir(record) / "checkpoints"
    told = story(record, client=client)
    where = (f"the bucket {record.store_uri}" if record.store_uri and not told.bucket_error
             else "the ledger")
    note = f"the bucket could not be read: {told.bucket_error}" if told.bucket_error else ""
    return measure(record.id, read_sidecars(folder), told.machines,
                   sidecar_where=f"copies in {folder}", story_where=where, note=note)
