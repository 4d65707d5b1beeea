"""A run's dataset fetched from its bucket onto the machine: a download in the month's spend.

The agent's ``fetch-data`` (and a kept-alive replacement at first boot) notes each fetch in
the run folder's ``data-fetch.json`` (``agent/data_fetch.note_fetch``): its id, the dataset,
its version and the bytes fetched that time (0 when the machine's cache had it). The
launcher's ``status`` hands those notes back with the run's state, and every front end
reads a run's state through ``detached.status``, which passes them here with the run's
record. Each is kept once
in ``data-transfers.json`` (``data_costs.record``, keyed by run and fetch id), with the
machine it went to, so the price rule applies (``data_costs.download_charge``): free in
the bucket's region on AWS and Tencent, internet data out to an own machine.

A public source is fetched from the source, not the user's bucket: never noted here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

OWN = "own"  # a machine not in a cloud (ledger provider "own", or an ssh:// address)


@dataclass(frozen=True)
class DataFetch:
    """One fetch the agent noted in the run folder."""

    id: str
    dataset: str
    sha: str
    bytes: int
    at: float


def parse(raw: Any) -> tuple[DataFetch, ...]:
    """The launcher's ``data_fetches``; a damaged row is skipped."""
    out = []
    for row in raw if isinstance(raw, list) else []:
        try:
            out.append(DataFetch(str(row["id"]), str(row.get("dataset", "")),
                                 str(row.get("sha", "")), int(row.get("bytes") or 0),
                                 float(row.get("at") or 0.0)))
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("a damaged data-fetch note was skipped")
    return tuple(out)


@dataclass(frozen=True)
class Destination:
    """Where the bytes went: ``cloud`` "own" for a machine outside the clouds (its
    ``place`` is its address), else the cloud and its region."""

    cloud: str
    place: str


def destination(target: str) -> Destination:
    """The machine a run target names: a ledger row's cloud and region, else own."""
    from gpudesk.services.runs import machine_access

    machine = machine_access.ledger_machine(target)
    if machine is None or machine.provider == OWN or not machine.region:
        where = (machine.public_ip or machine.name) if machine is not None else target
        return Destination(OWN, str(where or target))
    return Destination(machine.provider, machine.region)


def note(run_id: str, data: dict[str, Any], store_region: str, target: str,
         fetches: tuple[DataFetch, ...]) -> int:
    """Keep each fetch that brought bytes as a DOWNLOAD (once per run and fetch id);
    returns how many were kept now. Never raises: a cost note must not break a status read."""
    from gpudesk.services.runs import run_data_public
    from gpudesk.services.storage import data_costs
    from gpudesk.services.storage.uri import parse_uri

    wanted = [f for f in fetches if f.bytes > 0]
    if not wanted or not data or run_data_public.is_public_data(data):
        return 0
    try:
        bucket = parse_uri(str(data.get("uri") or ""))
        to = destination(target)
    except Exception as exc:  # noqa: BLE001 - an unreadable record: no cost note, said in the log
        log.warning("run %s: its dataset download is not counted (%s)", run_id, exc)
        return 0
    kept = 0
    for f in wanted:
        kept += data_costs.record(
            data_costs.DOWNLOAD, f.dataset or str(data.get("name", "")), bucket.cloud,
            store_region, f.bytes, to=to.place, machine_cloud=to.cloud, at=f.at or None,
            ref=f"{run_id}:{f.id}")
    return kept

