"""Issue 32 item 4, downloads: a run's dataset fetched from the bucket onto an own machine
(a real sshd on loopback, moto's S3 server) appears in the month's spend at S3's sourced
internet data-out price; a second run on the same machine fetches nothing and adds nothing;
a run's status read twice counts its download once."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture
from fixtures_sshd import SshdServer  # noqa: F401 - fixtures
from fixtures_sshd import sshd  # noqa: F401 - fixtures
from test_run_data_resume import DATASET
from test_run_store_resume import machines  # noqa: F401 - fixture
from test_runs import connect
from test_runs import gpudesk
from test_runs import run_cmd
from test_runs import training_project
from test_storage_price_list import PriceList  # noqa: F401 - fixture
from test_storage_price_list import price_list  # noqa: F401 - fixture

from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.runs import detached as runs
from gpudesk.services.storage import data_costs

SHOWS_DATA = '''"""Lists the dataset it was given, then ends."""
import os, pathlib
data = pathlib.Path(os.environ["GPUDESK_DATA_DIR"])
print("files:", sum(1 for p in data.rglob("*") if p.is_file() and not p.name.startswith(".")))
'''
GB = 1024**3


def test_a_runs_download_is_in_the_months_spend_once_at_its_sourced_price(
        sshd: SshdServer, bucket: Bucket, machines: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], memory_keyring: object,
        price_list: PriceList) -> None:
    """The price list's stand-in has no S3 offer: the bundled AWS Price List figure."""
    machine_a, _ = machines
    save_credentials(bucket.moto.credentials)
    folder = tmp_path / "dataset"
    for rel, body in DATASET.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(body)
    size = sum(len(body) for body in DATASET.values())
    assert gpudesk("data", "push", str(folder), "tokens", "--store",
                   f"s3://{bucket.name}/lab", "--json") == 0
    capsys.readouterr()
    project = training_project(tmp_path / "proj", {"shows_data.py": SHOWS_DATA})
    assert gpudesk(*run_cmd(sshd, machine_a, project, "--accept-new", "--data", "tokens",
                            "--", "shows_data.py")) == 0
    out = capsys.readouterr()
    assert "files: 3" in out.out, out.out[-2000:]
    run_id = out.out.splitlines()[0]
    record = runs.RunRecord.load(run_id)
    note = json.loads(Path(record.main.run_dir, "data-fetch.json").read_text())
    assert [(f["dataset"], f["bytes"], f["files"]) for f in note["fetches"]] == [
        ("tokens", size, 3)]

    def downloads() -> list[data_costs.Transfer]:
        return [t for t in data_costs.load() if t.kind == data_costs.DOWNLOAD]

    (kept,) = downloads()  # noted once while the run was followed
    assert (kept.kind, kept.dataset, kept.cloud, kept.region, kept.bytes,
            kept.machine_cloud) == ("download", "tokens", "aws", "us-east-1", size, "own")
    assert kept.ref == f"{run_id}:{note['fetches'][0]['id']}"
    for _ in range(2):  # the run's status read again (gpudesk logs): counted once
        assert gpudesk("logs", run_id) == 0
    with connect(sshd) as conn:  # and as every front end reads it
        for _ in range(2):
            now = runs.status(conn, record.main.run_dir, record.python)
            assert [(f.id, f.bytes) for f in now.data_fetches] == [
                (note["fetches"][0]["id"], size)]
    assert downloads() == [kept]
    capsys.readouterr()

    # a second run on the same machine: its cache has the version, nothing is fetched
    assert gpudesk(*run_cmd(sshd, machine_a, project, "--accept-new", "--data", "tokens",
                            "--", "shows_data.py")) == 0
    again = capsys.readouterr().out
    assert "dataset tokens is already on this machine; nothing fetched" in again, again
    second = runs.RunRecord.load(again.splitlines()[0])
    (zero,) = json.loads(Path(second.main.run_dir, "data-fetch.json").read_text())["fetches"]
    assert zero["bytes"] == 0
    assert downloads() == [kept]

    month = datetime.fromtimestamp(kept.at, UTC).strftime("%Y-%m")
    assert gpudesk("spend", "--month", month, "--json") == 0
    (line,) = [d for d in json.loads(capsys.readouterr().out)["data"]["lines"]
               if d["kind"] == "download"]
    # an own machine fetches over the internet: S3's data-out price, with its source
    assert (line["bytes"], line["price_per_gb"], line["currency"], line["as_of"]) == (
        size, 0.09, "USD", "2025-06-01")
    assert line["cost"] == pytest.approx(round(size / GB * 0.09, 6))
    assert line["source"].startswith("AWS Price List")
    assert line["text"].startswith(
        f"Machine download of dataset tokens from aws us-east-1 to {sshd.url}: ")
    assert gpudesk("spend", "--month", month) == 0
    text = capsys.readouterr().out
    assert "Datasets moved:\n" in text and f"\n  {line['text']}\n" in text, text


def test_a_cloud_machines_download_in_the_buckets_region_is_free_and_a_public_one_is_none(
        price_list: PriceList) -> None:
    """The machine's cloud and region come from the ledger: an AWS machine in the bucket's
    region fetches free (AWS's page); a public source is not the user's bucket."""
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.money.ledger import Machine
    from gpudesk.services.runs import run_downloads

    with Ledger() as ledger:
        ledger.add(Machine(id="m-gpu", provider="aws", region="us-east-1", cloud_id="i-1"))
    fetches = run_downloads.parse([
        {"id": "f1", "dataset": "tokens", "sha": "a" * 64, "bytes": 3 * GB, "at": 1.0e9},
        {"id": "f2", "dataset": "tokens", "sha": "a" * 64, "bytes": 0, "at": 1.0e9 + 1},
        {"dataset": "no id"}])  # a damaged row: skipped
    assert [f.id for f in fetches] == ["f1", "f2"]
    data = {"name": "tokens", "manifest_sha256": "a" * 64, "uri": "s3://lab-data/lab/"}
    assert run_downloads.note("run-1", data, "us-east-1", "m-gpu", fetches) == 1
    assert run_downloads.note("run-1", data, "us-east-1", "m-gpu", fetches) == 0  # once
    (t,) = data_costs.load()
    assert (t.cloud, t.region, t.to, t.machine_cloud, t.bytes, t.ref) == (
        "aws", "us-east-1", "us-east-1", "aws", 3 * GB, "run-1:f1")
    (line,) = data_costs.month_lines("2001-09", now=2.0e9, tz=UTC)
    assert (line.cost, line.charge.source) == (0.0, "https://aws.amazon.com/s3/pricing/ "
                                                    "(Data Transfer)")
    public = {**data, "kind": "hf", "source": "https://huggingface.co/datasets/x/y"}
    assert run_downloads.note("run-2", public, "us-east-1", "m-gpu", fetches) == 0
    assert len(data_costs.load()) == 1
