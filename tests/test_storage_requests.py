"""Bucket requests counted per run by S3's billing classes and added to the month's spend.

AWS bills S3 requests in two classes (aws.amazon.com/s3/pricing, "Requests & data
retrievals"): PUT, COPY, POST and LIST requests; GET, SELECT and all other requests;
DELETE and CANCEL requests are free. The agent's Store counts what it sends; the test's
oracle is the wire: a forward proxy between the Store and moto's server that names each
request's S3 operation from its method and query, independently of the agent's code.
The desktop's own listing and download requests are checked against the COS stand-in's
bill (tests/s3compat_standin.py), which counts every request by operation.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from datetime import date
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import pytest
from fixtures_agent_store import REPO  # noqa: F401 - fixtures
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import agent_env  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_agent_store import write_fake_checkpoint  # noqa: F401 - fixtures
from fixtures_agent_store import write_sts_file  # noqa: F401 - fixtures
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401
from PySide6.QtWidgets import QLabel
from test_storage_price_list import PriceList  # noqa: F401
from test_storage_price_list import offer_file  # noqa: F401
from test_storage_price_list import price_list  # noqa: F401

from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreConfig
from gpudesk.agent.uploader import STATE_FILE
from gpudesk.agent.uploader import Uploader
from gpudesk.cli import spend as cli_spend
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.storage import buckets
from gpudesk.services.storage import outputs
from gpudesk.services.storage import s3_price_list
from gpudesk.services.storage import usage
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.watch import store_state

UTC = ZoneInfo("UTC")
OCT30 = datetime(2026, 10, 30, tzinfo=UTC).timestamp()
NOV10 = datetime(2026, 11, 10, tzinfo=UTC).timestamp()
NOV20 = datetime(2026, 11, 20, tzinfo=UTC).timestamp()
NOV25 = datetime(2026, 11, 25, tzinfo=UTC).timestamp()
NOV26 = datetime(2026, 11, 26, tzinfo=UTC).timestamp()
DEC1 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
DEC2 = datetime(2026, 12, 2, tzinfo=UTC).timestamp()
# the stand-in offer file's per-request prices (test_storage_price_list.offer_file)
TIER1_PRICE, TIER2_PRICE = 0.000005, 0.0000004

# S3's classes as the pricing page states them, by operation name
TIER1 = {"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload",
         "ListObjectsV2", "ListMultipartUploads"}  # PUT, COPY, POST, LIST
TIER2 = {"GetObject", "HeadObject"}  # GET and all other requests
FREE = {"DeleteObject", "AbortMultipartUpload"}  # DELETE and CANCEL


def operation(method: str, query: dict[str, Any]) -> str:
    """The S3 operation a request is (S3 API reference: method, path and sub-resource)."""
    if "uploadId" in query:
        return {"PUT": "UploadPart", "POST": "CompleteMultipartUpload",
                "DELETE": "AbortMultipartUpload", "GET": "ListParts"}[method]
    if "uploads" in query:
        return {"POST": "CreateMultipartUpload", "GET": "ListMultipartUploads"}[method]
    if method == "GET" and "list-type" in query:
        return "ListObjectsV2"
    return {"PUT": "PutObject", "GET": "GetObject", "HEAD": "HeadObject",
            "DELETE": "DeleteObject"}[method]


@dataclass
class Wire:
    """A forward proxy to moto that names every request it passes on."""

    url: str = ""
    seen: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tiers(self) -> tuple[int, int, int]:
        with self.lock:
            return (sum(n for op, n in self.seen.items() if op in TIER1),
                    sum(n for op, n in self.seen.items() if op in TIER2),
                    sum(n for op, n in self.seen.items() if op in FREE))


@pytest.fixture
def wire() -> Iterator[Wire]:
    found = Wire()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            url = urlsplit(self.path)  # the Store sends the absolute URI to a proxy
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            conn = http.client.HTTPConnection(url.netloc, timeout=60)
            try:
                conn.putrequest(self.command, url.path + (f"?{url.query}" if url.query else ""),
                                skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():  # signed: passed on unchanged
                    conn.putheader(name, value)
                conn.endheaders()
                if body:
                    conn.send(body)
                resp = conn.getresponse()
                data = resp.read()
                headers = resp.getheaders()
            finally:
                conn.close()
            with found.lock:
                found.seen[operation(self.command, parse_qs(url.query,
                                                            keep_blank_values=True))] += 1
            self.send_response(resp.status)
            for name, value in headers:
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            if self.command == "HEAD":  # the object's size, no body
                self.send_header("Content-Length", resp.headers.get("content-length", "0"))
            else:
                self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    found.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()


def _store(bucket: Bucket, wire: Wire, prefix: str) -> Store:
    creds = write_sts_file(bucket.root / "sts.json")
    config = StoreConfig.from_dict({
        "cloud": "aws", "region": "us-east-1", "bucket": bucket.name, "prefix": prefix,
        "endpoint": bucket.moto.endpoint, "addressing": "path", "proxy": wire.url,
        "credentials_file": str(creds)})
    return Store(config, multipart_threshold=8 << 20, part_size=5 << 20)


def _diff(after: tuple[int, int, int], before: tuple[int, int, int]) -> tuple[int, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


# --------------------------------------------------------------------------- the agent


def test_the_agents_store_counts_a_multipart_upload_get_head_and_delete(
        bucket: Bucket, wire: Wire, tmp_path: Path) -> None:
    store = _store(bucket, wire, "runs/count-1/")
    before = store.requests.counts()  # one count per run folder in this process
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(12 << 20))  # three parts: 5, 5 and 2 MiB
    info = store.put_file("runs/count-1/checkpoints/big.pt", big)
    assert info.etag.endswith("-3")
    # CreateMultipartUpload + 3 UploadPart + CompleteMultipartUpload; the HEAD that
    # verifies the object is a tier2 request
    assert _diff(store.requests.counts(), before) == (3 + 2, 1, 0)
    assert wire.seen == Counter({"CreateMultipartUpload": 1, "UploadPart": 3,
                                 "CompleteMultipartUpload": 1, "HeadObject": 1})
    mid = store.requests.counts()
    assert store.get_bytes("runs/count-1/checkpoints/big.pt") == big.read_bytes()
    assert store.head("runs/count-1/nothing-here") is None  # a 404 is answered: billed
    assert _diff(store.requests.counts(), mid) == (0, 2, 0)
    store.delete("runs/count-1/checkpoints/big.pt")
    assert _diff(store.requests.counts(), mid) == (0, 2, 1)
    assert store.list("runs/count-1/") == []
    assert _diff(store.requests.counts(), before) == (5 + 1, 3, 1)
    # the wire agrees, class by class
    assert _diff(store.requests.counts(), before) == wire.tiers()
    # another Store of the same run folder in this process (the keep-alive spend's, in
    # bucket_spend.py) adds to the same count; another run's folder does not
    other = _store(bucket, wire, "runs/count-1/")
    other.get_bytes("runs/count-1/spend.json")
    assert _diff(store.requests.counts(), before) == (6, 4, 1)
    elsewhere = _store(bucket, wire, "runs/count-2/")
    elsewhere.get_bytes("runs/count-2/spend.json")
    assert _diff(store.requests.counts(), before) == (6, 4, 1)


def test_the_count_in_store_json_survives_an_agent_restart(
        bucket: Bucket, wire: Wire) -> None:
    run = bucket.run("restart-1", proxy=wire.url)
    write_fake_checkpoint(run / "checkpoints", 1)
    (run / "log").write_text("step 1\n")
    Uploader.for_run(run).tick(time.time())  # the first agent
    first = json.loads((run / STATE_FILE).read_text())["requests"]
    t1, t2, free = wire.tiers()
    assert (first["tier1"], first["tier2"]) == (t1, t2) and t1 >= 3 and t2 >= 2
    assert first["since"].endswith("Z")
    # the machine reboots: a new agent process, the same run folder; the run then ends
    write_fake_checkpoint(run / "checkpoints", 2)
    (run / "outputs").mkdir()
    (run / "outputs" / "model.pt").write_bytes(b"w" * 5000)
    (run / "exit_status").write_text("0")
    done = subprocess.run([sys.executable, "-m", "gpudesk.agent", "upload", "--run", str(run),
                           "--every", "0.05"], cwd=REPO, env=agent_env(), timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    state = json.loads((run / STATE_FILE).read_text())
    assert state["finished"]
    t1b, t2b, freeb = wire.tiers()
    assert t1b > t1 and t2b > t2  # the second agent sent requests of both classes
    # what the first agent counted plus what the second one counted: every request the
    # wire saw, by class
    assert state["requests"] == {"tier1": t1b, "tier2": t2b, "since": first["since"]}
    assert freeb >= free  # deletes (pruning) are never in the billed counts


# --------------------------------------------------------------------------- the desktop


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_samples_become_the_months_increase_and_a_sourced_cost(
        price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    assert s3_price_list.refresh("us-east-1") is not None
    rec = usage.record_agent_requests
    rec("run-a", "aws", "us-east-1", 100, 1000, "2026-10-29T08:00:00Z", at=OCT30)
    rec("run-a", "aws", "us-east-1", 400, 3000, "2026-10-29T08:00:00Z", at=NOV10)
    assert not rec("run-a", "aws", "us-east-1", 400, 3000, "2026-10-29T08:00:00Z", at=NOV20)
    # the machine was replaced: a new state file, counting from 0 (a new "since")
    rec("run-a", "aws", "us-east-1", 50, 60, "2026-11-25T00:00:00Z", at=NOV25)
    # the same name, a lower count: the state file was made anew, another reset
    rec("run-a", "aws", "us-east-1", 10, 20, "2026-11-25T00:00:00Z", at=NOV26)
    rec("run-a", "aws", "us-east-1", 15, 25, "2026-11-25T00:00:00Z", at=DEC2)  # December's
    october = usage.month_storage("2026-10", now=DEC2, tz=UTC)
    november = usage.month_storage("2026-11", now=DEC2, tz=UTC)
    (oct_row,) = october.runs
    assert (oct_row.requests.tier1, oct_row.requests.tier2) == (100, 1000)
    (row,) = november.runs
    assert row.gib_months == 0.0  # a run that only sent requests still has its line
    assert (row.requests.tier1, row.requests.tier2) == (300 + 50 + 10, 2000 + 60 + 20)
    assert row.requests_cost == pytest.approx(360 * TIER1_PRICE + 2080 * TIER2_PRICE)
    assert november.totals() == {"USD": pytest.approx(360 * TIER1_PRICE + 2080 * TIER2_PRICE)}
    data = usage.month_json(november)
    assert data["requests"] == {"tier1": 360, "tier2": 2080}
    url = f"{price_list.url}{price_list.path('us-east-1')}"
    assert data["runs"][0]["requests"] == {
        "tier1": 360, "tier2": 2080, "cost": round(360 * TIER1_PRICE + 2080 * TIER2_PRICE, 6),
        "currency": "USD", "tier1_price": TIER1_PRICE, "tier2_price": TIER2_PRICE,
        "source": f"AWS Price List {url} (read {date.today().isoformat()})",
        "as_of": "2026-11-20", "unknown_because": None}
    assert data["complete"] is True


def test_cos_requests_are_counted_but_their_cost_is_unknown_with_the_reason() -> None:
    usage.record_agent_requests("run-c", "tencent", "ap-guangzhou", 700, 900, "s", at=NOV10)
    month = usage.month_storage("2026-11", now=DEC1, tz=UTC)
    (row,) = month.runs
    assert (row.requests.tier1, row.requests.tier2) == (700, 900)
    assert row.requests_cost is None and month.unknown == (row,) and month.totals() == {}
    got = usage.month_json(month)["runs"][0]["requests"]
    assert (got["cost"], got["currency"], got["source"], got["as_of"]) == (None, "CNY", None,
                                                                          None)
    assert got["unknown_because"] == (
        "No PUT, COPY, POST or LIST request price for tencent in ap-guangzhou: this cloud "
        "publishes no price list that can be read without an account, so gpudesk shows no "
        "figure rather than a guess.")


def test_aws_requests_before_the_price_list_is_read_are_unknown_not_zero() -> None:
    usage.record_agent_requests("run-u", "aws", "us-east-1", 0, 40, "s", at=NOV10)
    (row,) = usage.month_storage("2026-11", now=DEC1, tz=UTC).runs
    assert row.requests_cost is None
    assert "GET request price for aws in us-east-1 yet" in row.requests_reason


def test_the_watch_page_turns_store_json_into_a_request_sample() -> None:
    record = RunRecord(id="run-w", project="/p", remote_project="/r", script="train.py",
                       args=[], nproc=1, nodes=[NodeRun("m-1", None, "/runs/run-w")],
                       store_uri="s3://b/runs/run-w/", store_region="us-east-1")
    answers = [{"run": "run-w", "requests": {"tier1": 12, "tier2": 30, "since": "A"}},
               {"run": "run-w", "requests": {"tier1": True, "tier2": 3}},  # not a count
               {"run": "run-w", "requests": {"tier1": 20, "tier2": 31, "since": "A"}}]

    class Conn:
        def exec(self, command: str, **_: Any) -> Any:
            assert "/runs/run-w/store.json" in command
            return type("Answer", (), {"ok": True,
                                       "stdout": json.dumps(answers.pop(0)).encode()})()

    states = [store_state.read_state(Conn(), record) for _ in range(3)]
    assert states[0].requests is not None and states[0].requests.tier2 == 30
    assert states[1].requests is None
    seen = usage.load()["run-w"]
    assert [(r.tier1, r.tier2, r.since) for r in seen.request_samples] == [
        (12, 30, "A"), (20, 31, "A")]
    assert seen.cloud == "aws"
    now = time.time()
    start = spend.month_window(spend.month_key(now)).start
    assert start is not None
    got = usage.month_requests(seen, start, now + 1, now + 1)
    assert (got.tier1, got.tier2) == (20, 31)


@pytest.mark.parametrize("store_env", ["tencent"], indirect=True)
def test_the_desktops_own_listing_and_downloads_are_counted_like_the_bill(
        store_env: StoreEnv, tmp_path: Path) -> None:
    from test_storage_outputs import seed_run

    client = store_env.client()
    store = buckets.ensure_bucket(client, store_env.target(), store_env.memory).store
    seed_run(client, store, "run-d")
    assert store_env.standin is not None
    bill = store_env.standin.bill(store_env.account_id).requests
    before = Counter(bill)
    listing = outputs.list_run(client, store, "run-d")
    outputs.download_outputs(client, store, listing, tmp_path / "out")
    assert outputs.delete_run(client, store, "run-d") == 8
    sent = Counter(bill)
    sent.subtract(before)
    # one listing page and the manifest; three outputs; two listings around the delete
    assert +sent == Counter({"ListObjectsV2": 3, "GetObject": 4, "DeleteObjects": 1})
    counted = usage.load()["run-d"].own_requests
    assert (sum(r.tier1 for r in counted), sum(r.tier2 for r in counted)) == (
        sent["ListObjectsV2"], sent["GetObject"])  # DeleteObjects is a DELETE: free


# --------------------------------------------------------------------------- where it shows


def _spend(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="gpudesk")
    cli_spend.add_parsers(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(argv)
    assert args.func(args) == 0


def _this_month() -> tuple[float, float]:
    now = time.time()
    start = spend.month_window(spend.month_key(now)).start
    assert start is not None
    return max(start, now - 120), max(start, now - 60)


def test_gpudesk_spend_shows_the_requests_with_source_and_date(
        price_list: PriceList, capsys: pytest.CaptureFixture[str]) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    first, second = _this_month()
    usage.record_agent_requests("run-s", "aws", "us-east-1", 2400, 10000, "A", at=first)
    usage.record_agent_requests("run-s", "aws", "us-east-1", 2400, 12000, "A", at=second)
    usage.record_agent_requests("run-t", "tencent", "ap-guangzhou", 5, 6, "B", at=second)
    _spend(["spend", "--json"])
    data = json.loads(capsys.readouterr().out)
    s, t = data["storage"]["runs"]
    cost = 2400 * TIER1_PRICE + 12000 * TIER2_PRICE  # 0.012 + 0.0048
    assert s["requests"]["tier1"] == 2400 and s["requests"]["tier2"] == 12000
    assert s["requests"]["cost"] == pytest.approx(cost)
    assert (s["requests"]["currency"], s["requests"]["as_of"]) == ("USD", "2026-11-20")
    assert s["requests"]["source"].startswith(f"AWS Price List {price_list.url}")
    assert "storage_cost" in s and "gib_months" in s  # the existing keys stay
    assert t["requests"]["cost"] is None and "tencent" in t["requests"]["unknown_because"]
    assert data["storage"]["requests"] == {"tier1": 2405, "tier2": 12006}
    assert data["totals_with_storage"] == {"USD": pytest.approx(cost)}
    assert data["storage"]["complete"] is False
    _spend(["spend"])
    text = capsys.readouterr().out
    assert "Storage: 0.000 GB-month and 14,411 requests in the buckets, 0.02 USD" in text
    assert ("requests 14,400 (2,400 PUT/COPY/POST/LIST, 12,000 GET and other)  0.0168 USD at "
            "0.005 USD per 1,000 PUT/COPY/POST/LIST and 0.0004 USD per 1,000 GET and other "
            f"(AWS Price List {price_list.url}") in text
    assert "requests 11 (5 PUT/COPY/POST/LIST, 6 GET and other)  cost unknown: No PUT" in text


def test_the_instances_storage_line_shows_the_requests(
        qtbot: Any, price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    assert s3_price_list.refresh("us-east-1") is not None
    first, second = _this_month()
    usage.record_agent_requests("run-i", "aws", "us-east-1", 2400, 10000, "A", at=second)
    with Ledger() as ledger:
        page = InstancesPage(ledger)
        qtbot.addWidget(page)
        page.show()
        label = page.findChild(QLabel, "monthStorage")
        assert label is not None
        text = label.text()
    line = next(x for x in text.splitlines() if x.startswith("Run run-i"))
    url = f"{price_list.url}{price_list.path('us-east-1')}"
    assert line.endswith(
        "Requests: 12,400 (2,400 PUT/COPY/POST/LIST, 10,000 GET and other) ≈ 0.0160 USD "
        f"(AWS Price List {url} (read {date.today().isoformat()}), 2026-11-20).")
    assert text.startswith("Storage this month: 0.000 GB-month in your buckets, 0.0160 USD.")


def test_store_json_holds_counts_and_a_date_only(bucket: Bucket) -> None:
    run = bucket.run("quiet-1")
    Uploader.for_run(run).tick(1000.0)
    entry = json.loads((run / STATE_FILE).read_text())["requests"]
    assert sorted(entry) == ["since", "tier1", "tier2"]
    assert entry["since"] == "1970-01-01T00:16:40Z"  # the uploader's clock
