"""One run's machines, one after another (issue 23): reclaimed at, replaced at, resumed
from step N, and what each cost.

A run that recovers by itself lives on several machines of its group. The agents keep
the story in the run's bucket, where it survives every machine: ``spend.json`` (each
machine's billable seconds, price and spend, kept by ``gpudesk/agent/bucket_spend.py``)
and ``machines/<cloud id>.json`` (when it took over and from which step, written by
``gpudesk/agent/replacement.py``). The ledger's group row adds what the desktop saw
(``keep_alive_launch.members``) for a machine the bucket does not name yet. The bucket's
word wins; the ledger's fills gaps, with no money (the ledger keeps one spend per row).

Blocking (boto3): call it from a worker thread.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from dataclasses import dataclass
from typing import Any

from gpudesk.services.storage.clients import account_client
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import parse_uri

SPEND_FILE = "spend.json"  # gpudesk/agent/bucket_spend.py SPEND_FILE
MACHINES = "machines/"  # gpudesk/agent/replacement.py MACHINES


@dataclass
class Stint:
    """One machine's part of a run."""

    cloud_id: str
    start: float | None  # unix s
    end: float | None  # None: still running (or not known to have ended)
    why: str  # how it ended: "reclaimed", "ended", "budget", "lost"; "" while it runs
    spent: float | None  # in ``currency``; None where no agent counted it
    currency: str
    resumed_from_step: int | None = None
    checkpoint: str = ""
    target: str = ""  # how the run reached it: a ledger id or ssh:// address ("": a group's)
    # when the run went on here (the replacement agent's ``resumed_at``: after the new
    # machine's set-up and checkpoint fetch); None where no agent said
    resumed_at: float | None = None

    def as_json(self) -> dict[str, Any]:
        """``show RUN --json``'s ``machines`` item: {cloud_id, from, to, why, ...}."""
        data = asdict(self)
        data["from"], data["to"] = data.pop("start"), data.pop("end")
        if data["resumed_at"] is None:
            del data["resumed_at"]
        return data


def _read_json(client: Any, bucket: str, key: str) -> Any:
    from botocore.exceptions import ClientError

    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as err:
        if str(err.response.get("Error", {}).get("Code", "")) in ("NoSuchKey", "404"):
            return None
        raise
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None  # a half-written file: the next read has it whole


def _machine_files(client: Any, store: StoreUri, root: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    token = ""
    while True:
        kwargs: dict[str, Any] = {"Bucket": store.bucket, "Prefix": root + MACHINES,
                                  "MaxKeys": 1000}
        if token:
            kwargs["ContinuationToken"] = token
        page = client.list_objects_v2(**kwargs)
        for obj in page.get("Contents", []):
            data = _read_json(client, store.bucket, obj["Key"])
            if isinstance(data, dict) and data.get("cloud_id"):
                out.append(data)
        token = page.get("NextContinuationToken", "")
        if not page.get("IsTruncated") or not token:
            return out


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def from_bucket(client: Any, store_uri: str, run_id: str) -> tuple[list[Stint], float | None,
                                                                   str]:
    """The bucket's story: (stints oldest first, the run's total spend, its currency)."""
    store = parse_uri(store_uri)
    root = store.run(run_id).root
    spend = _read_json(client, store.bucket, root + SPEND_FILE)
    machines = {m["cloud_id"]: m for m in _machine_files(client, store, root)}
    currency = str(spend.get("currency", "")) if isinstance(spend, dict) else ""
    total = _num(spend.get("total")) if isinstance(spend, dict) else None
    stints: dict[str, Stint] = {}
    for entry in (spend.get("machines", []) if isinstance(spend, dict) else []):
        if not isinstance(entry, dict) or not entry.get("cloud_id"):
            continue
        cid = str(entry["cloud_id"])
        why = str(entry.get("why") or "")
        stints[cid] = Stint(cid, _num(entry.get("from")), _num(entry.get("to")),
                            "" if why in ("started", "replaced") else why,
                            _num(entry.get("spent")), currency,
                            entry.get("resumed_from_step")
                            if isinstance(entry.get("resumed_from_step"), int) else None)
    for cid, m in machines.items():
        step = m.get("resumed_from_step")
        one = stints.get(cid)
        if one is None:
            one = stints[cid] = Stint(cid, _num(m.get("from")), None, "", None, currency,
                                      step if isinstance(step, int) else None,
                                      str(m.get("checkpoint") or ""))
        else:
            if one.resumed_from_step is None and isinstance(step, int):
                one.resumed_from_step = step
            one.checkpoint = one.checkpoint or str(m.get("checkpoint") or "")
            if one.start is None:
                one.start = _num(m.get("from"))
        one.resumed_at = _num(m.get("resumed_at"))
    return sorted(stints.values(), key=lambda s: s.start or 0.0), total, currency


def merged(bucket: list[Stint], ledger: list[dict[str, object]], currency: str
           ) -> list[Stint]:
    """The bucket's stints, with the ledger's for machines the bucket does not name (one
    that was reclaimed before its agent wrote anything, a replacement still booting)."""
    named = {s.cloud_id for s in bucket}
    out = list(bucket)
    for m in ledger:
        cid = str(m.get("cloud_id") or "")
        if not cid or cid in named:
            if cid in named:  # the desktop saw how it ended; the agent may not have
                one = next(s for s in out if s.cloud_id == cid)
                if one.end is None and m.get("to") is not None:
                    one.end, one.why = _num(m.get("to")), str(m.get("why") or one.why)
            continue
        out.append(Stint(cid, _num(m.get("from")), _num(m.get("to")), str(m.get("why") or ""),
                         None, currency))
    return sorted(out, key=lambda s: s.start or 0.0)


@dataclass
class RunStory:
    """``show RUN --json``: the run's machines and what they cost, with where it came from."""

    run: str
    machine: str  # the run's first target (a ledger id for a machine gpudesk launched)
    group: str  # the keep-alive group ("" for a machine on its own)
    machines: list[Stint]
    total: float | None
    currency: str
    bucket_error: str = ""  # why the bucket's part is missing ("" when it was read)

    def as_json(self) -> dict[str, Any]:
        return {"run": self.run, "machine": self.machine, "group": self.group or None,
                "machines": [s.as_json() for s in self.machines], "spent": self.total,
                "currency": self.currency or None, "bucket_error": self.bucket_error or None}


def story(record: Any, *, client: Any = None) -> RunStory:
    """Blocking: the story of ``record`` (a ``RunRecord``) from its bucket and the ledger."""
    from gpudesk.services.cloud.keep_alive_launch import members
    from gpudesk.services.money.ledger import Ledger

    target = record.main.target
    ledger_rows: list[dict[str, object]] = []
    group = ""
    with Ledger() as ledger:
        m = ledger.get(target) if not target.startswith("ssh://") else None
        if m is not None and m.group_id:
            group = m.group_id
            ledger_rows = members(ledger, m)
        elif m is not None and m.cloud_id:
            ledger_rows = [{"cloud_id": m.cloud_id, "from": m.launched_at, "to": m.ended_at,
                            "why": "ended" if m.ended else ""}]
    stints: list[Stint] = []
    total: float | None = None
    currency = ""
    error = ""
    if record.store_uri:
        try:
            bucket = client if client is not None else account_client(
                parse_uri(record.store_uri).cloud, record.store_region)
            stints, total, currency = from_bucket(bucket, record.store_uri, record.id)
        except Exception as exc:  # noqa: BLE001 - the ledger's part is still shown
            error = str(getattr(exc, "message", lambda: "")() or type(exc).__name__)
    machines = merged(stints, ledger_rows, currency)
    hops = list(getattr(record, "hops", None) or [])
    if not group and hops:  # the run moved itself (recover, resume --on): the record knows
        machines = from_hops(hops, currency)
    return RunStory(record.id, target, group, machines, total, currency, error)


def from_hops(hops: list[dict[str, Any]], currency: str) -> list[Stint]:
    """The run record's machines in order (``RunRecord.hops``): each stint ends when the
    next began, where the run was moved ("moved"); the last has no end while it runs."""
    from gpudesk.services.money.ledger import Ledger

    out: list[Stint] = []
    with Ledger() as ledger:
        for i, hop in enumerate(hops):
            target = str(hop.get("target") or "")
            m = ledger.get(target) if target and not target.startswith("ssh://") else None
            nxt = hops[i + 1] if i + 1 < len(hops) else None
            step = hop.get("resumed_from_step")
            out.append(Stint(m.cloud_id if m is not None else "", _num(hop.get("from")),
                             _num(nxt.get("from")) if nxt else None, "moved" if nxt else "",
                             None, currency, step if isinstance(step, int) else None,
                             str(hop.get("checkpoint") or ""), target))
    return out
