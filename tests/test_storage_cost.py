"""What the user's buckets cost in the month: GB-months from samples over time, data out
to this computer, and an honest "unknown" where no price was read."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from fixtures_agent_store import Bucket  # noqa: F401
from fixtures_agent_store import bucket  # noqa: F401
from fixtures_agent_store import write_fake_checkpoint  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401

from gpudesk.cli import spend as cli_spend
from gpudesk.services.money import spend
from gpudesk.services.storage import buckets
from gpudesk.services.storage import outputs
from gpudesk.services.storage import pricing
from gpudesk.services.storage import usage
from gpudesk.services.storage.pricing import Price
from gpudesk.services.storage.pricing import PriceLookup

UTC = ZoneInfo("UTC")
GIB = 1 << 30
NOV1 = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
NOV16 = datetime(2026, 11, 16, tzinfo=UTC).timestamp()
DEC1 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
OCT20 = datetime(2026, 10, 20, tzinfo=UTC).timestamp()
NOV10 = datetime(2026, 11, 10, tzinfo=UTC).timestamp()
REPO = Path(__file__).resolve().parent.parent

# a price for the arithmetic only (no sourced S3 price is bundled; see pricing.py)
TEST_PRICE = Price(0.5, "USD", "a test's own price", date(2026, 12, 5))


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _priced(cloud: str, region: str) -> PriceLookup:
    return PriceLookup(TEST_PRICE)


# ------------------------------------------------------------------------ the integral


def test_two_gib_for_half_a_month_then_four_is_three_gib_months() -> None:
    usage.record_sample("run-a", "aws", "us-east-1", 2 * GIB, at=NOV1)
    usage.record_sample("run-a", "aws", "us-east-1", 4 * GIB, at=NOV16)
    month = usage.month_storage("2026-11", now=DEC1 + 86400, tz=UTC, storage_price=_priced)
    (row,) = month.runs
    assert row.gib_months == pytest.approx(3.0)
    assert row.storage_cost == pytest.approx(1.5)  # 3 GB-month × 0.5
    assert month.totals() == {"USD": pytest.approx(1.5)}
    assert not month.unknown


def test_the_month_boundary_cuts_a_sample_in_two() -> None:
    # 2 GiB from 20 October until 10 November, then the folder was deleted
    usage.record_sample("run-b", "aws", "us-east-1", 2 * GIB, at=OCT20)
    usage.record_sample("run-b", "aws", "us-east-1", 0, at=NOV10, source=usage.SOURCE_DELETED)
    october = usage.month_storage("2026-10", now=DEC1, tz=UTC, storage_price=_priced)
    november = usage.month_storage("2026-11", now=DEC1, tz=UTC, storage_price=_priced)
    december = usage.month_storage("2026-12", now=DEC1 + 86400, tz=UTC,
                                   storage_price=_priced)
    assert october.runs[0].gib_months == pytest.approx(2 * 12 / 31)  # 20 Oct → 1 Nov
    assert november.runs[0].gib_months == pytest.approx(2 * 9 / 30)  # 1 → 10 Nov
    assert december.runs == ()  # nothing held, nothing downloaded: no line


def test_the_last_sample_holds_until_now_not_to_the_month_end() -> None:
    usage.record_sample("run-c", "aws", "us-east-1", GIB, at=NOV1)
    month = usage.month_storage("2026-11", now=NOV16, tz=UTC)
    assert month.runs[0].gib_months == pytest.approx(0.5)


def test_a_repeated_size_adds_no_sample() -> None:
    assert usage.record_sample("r", "aws", "us-east-1", 5, at=NOV1)
    assert not usage.record_sample("r", "aws", "us-east-1", 5, at=NOV10)
    assert usage.record_sample("r", "aws", "us-east-1", 6, at=NOV16)
    assert [(s.at, s.bytes) for s in usage.load()["r"].samples] == [(NOV1, 5), (NOV16, 6)]


def test_the_integral_needs_a_bounded_window() -> None:
    with pytest.raises(ValueError):
        spend.stored_gib_months([(NOV1, GIB)], spend.Window(NOV1, None), DEC1)


# ------------------------------------------------------------------------ restarts, damage


def test_samples_survive_a_restart() -> None:
    usage.record_sample("run-d", "tencent", "ap-guangzhou", 2 * GIB, at=NOV1)
    usage.record_sample("run-d", "tencent", "ap-guangzhou", 4 * GIB, at=NOV16)
    assert usage.usage_file().is_file()
    code = ("from datetime import UTC; from gpudesk.services.storage import usage; "
            f"m = usage.month_storage('2026-11', now={DEC1}, tz=UTC); "
            "print(m.runs[0].run, round(m.runs[0].gib_months, 9), m.runs[0].currency)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env=dict(os.environ), timeout=60, check=True).stdout
    assert out.split() == ["run-d", "3.0", "CNY"]


def test_a_damaged_file_is_read_as_far_as_it_goes() -> None:
    usage.usage_file().write_text(json.dumps({"version": 1, "runs": {
        "ok": {"cloud": "aws", "region": "us-east-1", "samples": [[NOV1, GIB], ["x"]]},
        "bad": "not a run"}}))
    runs = usage.load()
    assert list(runs) == ["ok"] and [(s.at, s.bytes) for s in runs["ok"].samples] == [
        (NOV1, GIB)]
    usage.usage_file().write_text("{not json")
    assert usage.load() == {}
    assert usage.record_sample("new", "aws", "us-east-1", 1, at=NOV1)  # starts anew


# ------------------------------------------------------------------------ unknown prices


def test_an_unknown_price_says_why_and_is_never_zero() -> None:
    usage.record_sample("run-e", "aliyun", "cn-hangzhou", 3 * GIB, at=NOV1)
    month = usage.month_storage("2026-11", now=DEC1, tz=UTC)
    (row,) = month.runs
    assert row.gib_months == pytest.approx(3.0)
    assert row.storage_cost is None and row.storage_price is None
    assert row.currency == "CNY"
    assert "No storage (GB-month) price for aliyun in cn-hangzhou" in row.storage_reason
    assert month.totals() == {} and month.unknown == (row,)
    data = usage.month_json(month)
    assert data["complete"] is False
    assert data["runs"][0]["storage_cost"] is None
    assert "cn-hangzhou" in data["runs"][0]["storage_unknown_because"]


def test_no_storage_price_is_kept_without_a_source() -> None:
    for table in (pricing.STORAGE_PRICES, pricing.DATA_OUT_PRICES):
        for (cloud, _region), p in table.items():
            assert p.source and p.as_of and p.currency == pricing.CURRENCY[cloud]


def test_downloads_are_data_out_at_the_sourced_aws_price() -> None:
    usage.record_download("run-f", "aws", "us-east-1", 2 * GIB, at=NOV10)
    usage.record_download("run-f", "aws", "us-east-1", GIB, at=DEC1 + 10)  # December's
    month = usage.month_storage("2026-11", now=DEC1 + 60, tz=UTC)
    (row,) = month.runs
    assert row.gib_months == 0.0 and row.data_out_bytes == 2 * GIB
    assert row.data_out_cost == pytest.approx(0.18)  # 2 GB × $0.09 (AWS Price List)
    assert row.data_out_price is not None and row.data_out_price.as_of == date(2025, 6, 1)
    assert month.totals() == {"USD": pytest.approx(0.18)}


def test_currencies_are_never_added_together() -> None:
    usage.record_download("run-usd", "aws", "us-east-1", GIB, at=NOV10)
    usage.record_sample("run-cny", "tencent", "ap-guangzhou", GIB, at=NOV1)

    def cny(cloud: str, region: str) -> PriceLookup:
        return PriceLookup(Price(0.1, "CNY", "a test's own price", date(2026, 12, 5))
                           if cloud == "tencent" else None, "none")

    month = usage.month_storage("2026-11", now=DEC1, tz=UTC, storage_price=cny)
    assert month.totals() == {"CNY": pytest.approx(0.1), "USD": pytest.approx(0.09)}


# ------------------------------------------------------------------------ where samples come from


def test_listing_downloading_and_deleting_a_real_bucket_leave_samples(
        store_env: StoreEnv, tmp_path: Path) -> None:
    client = store_env.client()
    store = buckets.ensure_bucket(client, store_env.target(), store_env.memory).store
    paths = store.run("run-g")
    client.put_object(Bucket=store.bucket, Key=paths.checkpoint("ckpt-000000001.pt"),
                      Body=b"c" * 3000)
    client.put_object(Bucket=store.bucket, Key=paths.output("model.pt"), Body=b"m" * 5000)
    listing = outputs.list_run(client, store, "run-g")
    outputs.download_outputs(client, store, listing, tmp_path / "out")
    seen = usage.load()["run-g"]
    assert (seen.cloud, seen.region, seen.uri) == (store_env.cloud, store_env.region,
                                                   listing.uri)
    assert [s.bytes for s in seen.samples] == [8000]
    assert [d.bytes for d in seen.downloads] == [5000]
    assert outputs.delete_run(client, store, "run-g") == 2
    after = usage.load()["run-g"].samples
    assert [(s.bytes, s.source) for s in after] == [(8000, usage.SOURCE_LISTING),
                                                    (0, usage.SOURCE_DELETED)]


def test_a_cancelled_download_still_counts_the_bytes_that_left(
        store_env: StoreEnv, tmp_path: Path) -> None:
    client = store_env.client()
    store = buckets.ensure_bucket(client, store_env.target(), store_env.memory).store
    paths = store.run("run-h")
    client.put_object(Bucket=store.bucket, Key=paths.output("a.bin"), Body=b"a" * 4000)
    client.put_object(Bucket=store.bucket, Key=paths.output("b.bin"), Body=b"b" * 4000)
    listing = outputs.list_run(client, store, "run-h")

    def stop_after_first(done: int, total: int) -> bool:
        return done <= 4000

    with pytest.raises(outputs.Cancelled):
        outputs.download_outputs(client, store, listing, tmp_path / "out", stop_after_first)
    sent = usage.load()["run-h"].downloads
    assert len(sent) == 1 and 4000 < sent[0].bytes <= 8000


def test_the_agents_store_json_gives_a_sample() -> None:
    from gpudesk.services.runs.detached import NodeRun
    from gpudesk.services.runs.detached import RunRecord
    from gpudesk.ui.watch import store_state

    record = RunRecord(id="run-i", project="/p", remote_project="/r", script="train.py",
                       args=[], nproc=1,
                       nodes=[NodeRun(target="m-1", identity=None, run_dir="/runs/run-i")],
                       store_uri="cos://b-1250000000/", store_region="ap-guangzhou")

    class Answer:
        ok = True
        stdout = json.dumps({"run": "run-i", "bucket_bytes": 7 * GIB}).encode()

    class Conn:
        def exec(self, command: str, **_: Any) -> Answer:
            assert "/runs/run-i/store.json" in command
            return Answer()

    state = store_state.read_state(Conn(), record)
    assert state.bucket_bytes == 7 * GIB
    (sample,) = usage.load()["run-i"].samples
    assert (sample.bytes, sample.source) == (7 * GIB, usage.SOURCE_AGENT)
    assert usage.load()["run-i"].cloud == "tencent"
    assert usage.agent_bytes({"bucket_bytes": True}) is None
    assert usage.agent_bytes({"bucket_bytes": -1}) is None
    assert usage.agent_bytes({}) is None


def test_the_agent_reports_what_the_folder_holds(bucket: Bucket) -> None:
    from gpudesk.agent.uploader import STATE_FILE
    from gpudesk.agent.uploader import Uploader

    run = bucket.run("r1", keep=2)
    up = Uploader.for_run(run)
    (run / "log").write_bytes(b"step 1\n" * 100)
    for step in (1, 2, 3):
        write_fake_checkpoint(run / "checkpoints", step)
        up.tick(1000.0 + 100 * step)
    (run / "outputs").mkdir()
    (run / "outputs" / "model.pt").write_bytes(b"w" * 9000)
    (run / "exit_status").write_text("0")
    up.tick(2000.0)
    state = json.loads((run / STATE_FILE).read_text(encoding="utf-8"))
    held = {o["Key"]: int(o["Size"]) for o in bucket.s3.list_objects_v2(
        Bucket=bucket.name, Prefix="runs/r1/")["Contents"]}
    assert "runs/r1/checkpoints/ckpt-000000001.pt" not in held  # keep=2 pruned it
    # everything but the small manifest.json and the run's end state (state.json),
    # counted from the agent's own bookkeeping
    assert state["bucket_bytes"] == sum(v for k, v in held.items()
                                        if not k.endswith(("manifest.json", "state.json")))
    assert state["bucket_bytes"] == 2 * 4096 + 700 + 9000


# ------------------------------------------------------------------------ the CLI


def _spend(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gpudesk")
    cli_spend.add_parsers(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_gpudesk_spend_has_a_storage_line(capsys: pytest.CaptureFixture[str]) -> None:
    usage.record_sample("run-j", "tencent", "ap-guangzhou", 2 * GIB, at=NOV1)
    usage.record_sample("run-j", "tencent", "ap-guangzhou", 4 * GIB, at=NOV16)
    usage.record_download("run-k", "aws", "us-east-1", 2 * GIB, at=NOV10)
    assert _spend(["spend", "--json", "--month", "2026-11"]) == 0
    data = json.loads(capsys.readouterr().out)
    storage = data["storage"]
    assert storage["month"] == "2026-11" and storage["complete"] is False
    j, k = storage["runs"]
    assert (j["run"], j["gib_months"], j["storage_cost"], j["currency"]) == (
        "run-j", 3.0, None, "CNY")
    assert (k["run"], k["data_out_cost"], k["data_out_price"]["as_of"]) == (
        "run-k", 0.18, "2025-06-01")
    assert data["totals_with_storage"] == {"USD": 0.18}
    assert _spend(["spend", "--month", "2026-11"]) == 0
    text = capsys.readouterr().out
    assert "Storage: 3.000 GB-month in the buckets, 0.18 USD, part of it unknown" in text
    assert "cost unknown: No storage (GB-month) price for tencent in ap-guangzhou" in text
    assert "data out to this computer 2.0 GiB" in text
    assert "Total: 0.18 USD (without the bucket costs gpudesk has no price for)" in text
