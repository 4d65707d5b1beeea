"""What the agent on a watched machine has put in the run's bucket: its ``store.json``.

The agent's uploader keeps ``store.json`` in the run folder (``gpudesk/agent/uploader.py``):
the last upload, what the bucket holds, the last error ("cannot reach the bucket:
…") and the run's request count (samples for the month's spend, ``usage.py``). The
Watch page reads it with one ``cat`` over the feed's own SSH connection, on its spend
timer (every 30 s) and when the feed goes live: no faster than it already asks the
machine, and no new connection. Texts are in the "WatchPage" context.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any

from PySide6.QtCore import QCoreApplication

from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.run_control import recorded_runs
from gpudesk.services.storage import usage
from gpudesk.services.storage.uri import SCHEMES

STATE_FILE = "store.json"  # the agent's uploader.STATE_FILE
UNREACHABLE = "cannot reach the bucket: "  # how the agent's store words that error
READ_TIMEOUT_S = 20.0

translate = QCoreApplication.translate  # the name lupdate looks for


@dataclass(frozen=True)
class StoreState:
    """``store.json`` as read; ``reported`` is False while the agent has written none."""

    run: str
    uri: str
    reported: bool = False
    last_upload: dict[str, Any] = field(default_factory=dict)
    latest: str = ""
    checkpoints: tuple[str, ...] = ()
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    error_at: str = ""
    finished: str = ""
    bucket_bytes: int | None = None  # what the agent says the folder holds
    requests: usage.RequestSample | None = None  # the agent's request count, cumulative


def run_with_store(ref: str) -> RunRecord | None:
    """The newest run this computer started on machine ``ref`` that has a bucket."""
    for record in recorded_runs():  # newest first
        if record.store_uri and record.nodes and record.main.target == ref:
            return record
    return None


def parse_state(record: RunRecord, text: str | None) -> StoreState:
    uri = record.store_uri
    if not text:
        return StoreState(record.id, uri)
    try:
        data = json.loads(text)
    except ValueError:
        return StoreState(record.id, uri)
    if not isinstance(data, dict):
        return StoreState(record.id, uri)

    def mapping(key: str) -> dict[str, Any]:
        value = data.get(key)
        return value if isinstance(value, dict) else {}

    names = data.get("checkpoints")
    return StoreState(
        run=str(data.get("run") or record.id), uri=str(data.get("uri") or uri), reported=True,
        last_upload=mapping("last_upload"), latest=str(data.get("latest") or ""),
        checkpoints=tuple(str(n) for n in names) if isinstance(names, list) else (),
        outputs=mapping("outputs"), error=str(data.get("error") or ""),
        error_at=str(data.get("error_at") or ""), finished=str(data.get("finished") or ""),
        bucket_bytes=usage.agent_bytes(data), requests=usage.agent_requests(data))


def read_state(conn: Any, record: RunRecord) -> StoreState:
    """``store.json`` of ``record``'s first node over ``conn`` (blocking: a worker thread)."""
    path = f"{record.main.run_dir}/{STATE_FILE}"
    result = conn.exec(f"cat -- {shlex.quote(path)}", timeout=READ_TIMEOUT_S,
                       what="reading the run's upload state")
    text = result.stdout.decode("utf-8", "replace") if result.ok else None
    state = parse_state(record, text)
    if state.bucket_bytes is not None:  # a sample for the month's storage spend
        usage.record_sample(record.id, _cloud(record.store_uri), record.store_region,
                            state.bucket_bytes, uri=state.uri, source=usage.SOURCE_AGENT)
    if state.requests is not None:  # a sample for the month's request spend
        usage.record_agent_requests(record.id, _cloud(record.store_uri), record.store_region,
                                    state.requests.tier1, state.requests.tier2,
                                    state.requests.since, uri=state.uri)
    return state


def _cloud(uri: str) -> str:
    return SCHEMES.get(uri.split("://", 1)[0], "")


def _when(iso: str) -> str:
    """The agent's UTC time in this computer's local time."""
    try:
        when = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return iso or "?"
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _size(n: Any) -> str:
    value = float(n) if isinstance(n, (int, float)) else 0.0
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value} B"  # pragma: no cover


def state_text(state: StoreState) -> str:
    """The state in words for the Watch page."""
    if state.error:
        at = _when(state.error_at)
        if state.error.startswith(UNREACHABLE):
            return translate(
                "WatchPage", "Run {run}: Cannot reach the bucket: {detail} (since {at}). "
                "Checkpoints are still copied to this laptop.").format(
                run=state.run, detail=state.error[len(UNREACHABLE):], at=at)
        return translate(
            "WatchPage", "Run {run}: the last upload to {uri} failed: {detail} (at {at}). "
            "Checkpoints are still copied to this laptop.").format(
            run=state.run, uri=state.uri, detail=state.error, at=at)
    if not state.reported or not state.last_upload:
        return translate("WatchPage", "Run {run} uploads to {uri}; the agent has not reported "
                         "an upload yet.").format(run=state.run, uri=state.uri)
    up = state.last_upload
    whats = {"checkpoint": translate("WatchPage", "checkpoint"),
             "log": translate("WatchPage", "log part"),
             "outputs": translate("WatchPage", "outputs")}
    text = translate("WatchPage", "Run {run} → {uri}: last upload at {at}, {what} {name} "
                     "({size}).").format(
        run=state.run, uri=state.uri, at=_when(str(up.get("at") or "")),
        what=whats.get(str(up.get("what")), str(up.get("what") or "")),
        name=str(up.get("name") or ""), size=_size(up.get("bytes")))
    if state.latest:
        text += " " + translate("WatchPage", "The bucket holds {n} checkpoint(s), the latest "
                                "{latest}.").format(n=len(state.checkpoints),
                                                    latest=state.latest)
    else:
        text += " " + translate("WatchPage", "The bucket holds no complete checkpoint yet.")
    if state.outputs:
        text += " " + translate("WatchPage", "Outputs: {n} file(s), {size}.").format(
            n=state.outputs.get("files", 0), size=_size(state.outputs.get("bytes")))
    return text
