"""Issue 32, done-when, whole process from the documented CLI: a dataset pushed to moto's S3
once; a run on sshd A with ``--data`` sees it at GPUDESK_DATA_DIR (the machine fetched it
from the bucket); A is SIGKILLed like a spot reclaim, its disk and the laptop copy gone;
``gpudesk recover`` on sshd B fetches the dataset there from the bucket alone and ends with
the same weights; a second run on B fetches nothing."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture
from fixtures_sshd import SshdServer  # noqa: F401 - fixtures
from fixtures_sshd import sshd  # noqa: F401 - fixtures
from fixtures_sshd import sshd_b  # noqa: F401 - fixtures
from test_run_store_resume import STEPS  # noqa: F401
from test_run_store_resume import _latest  # noqa: F401
from test_run_store_resume import _same_weights  # noqa: F401
from test_run_store_resume import machines  # noqa: F401
from test_run_store_resume import reclaim  # noqa: F401
from test_runs import PYTHON
from test_runs import gpudesk
from test_runs import result
from test_runs import run_cmd
from test_runs import training_project
from test_runs import wait_for

from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import spot_recovery

# train.py, after writing down what the dataset at GPUDESK_DATA_DIR held (one file per start)
READS_DATA = '''"""Reads the dataset first, then trains as train.py does."""
import hashlib, json, os, pathlib
from train import parse, train

args = parse()
data = pathlib.Path(os.environ["GPUDESK_DATA_DIR"])
seen = {p.relative_to(data).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data.rglob("*")) if p.is_file() and not p.name.startswith(".")}
args.out.mkdir(parents=True, exist_ok=True)
n = len(list(args.out.glob("data-seen-*.json")))
(args.out / f"data-seen-{n}.json").write_text(json.dumps({"dir": str(data), "files": seen}))
train(args)
'''

DATASET = {"shards/000.bin": bytes(range(256)) * 300, "shards/001.bin": b"\x07" * 70_000,
           "vocab.txt": b"a\nb\nc\n"}


def _seen(out: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("data-seen-*.json"))]


def test_a_run_with_data_resumes_on_another_machine_from_the_bucket_alone(
        sshd: SshdServer, sshd_b: SshdServer, bucket: Bucket, machines: tuple[Path, Path],
        tmp_path: Path, capsys: pytest.CaptureFixture[str], memory_keyring: object) -> None:
    machine_a, machine_b = machines
    save_credentials(bucket.moto.credentials)
    folder = tmp_path / "dataset"
    for rel, body in DATASET.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(body)
    expected = {rel: hashlib.sha256(body).hexdigest() for rel, body in DATASET.items()}
    assert gpudesk("data", "push", str(folder), "tokens", "--store",
                   f"s3://{bucket.name}/lab", "--json") == 0
    version = json.loads(capsys.readouterr().out)["manifest_sha256"]
    shutil.rmtree(folder)  # the laptop's copy is not needed by any machine from here on

    project = training_project(tmp_path / "proj", {"reads_data.py": READS_DATA})
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, tmp_path / "baseline", project, "--accept-new", "--",
                            "train.py", "--out", str(whole), *STEPS)) == 0
    capsys.readouterr()

    at = tmp_path / "mnt" / "tokens"  # the same path on every machine
    assert gpudesk(*run_cmd(sshd, machine_a, project, "--accept-new", "--data",
                            f"tokens:{at}", "--detach", "--", "reads_data.py", "--out",
                            str(broken), *STEPS, "--pause-at", "10")) == 0
    out = capsys.readouterr()
    run_id = out.out.splitlines()[0]
    assert f"the dataset tokens (version {version[:12]}) appears at {at}" in out.err, out.err
    record = runs.RunRecord.load(run_id)
    assert record.data["manifest_sha256"] == version
    assert (record.store_uri, record.store_credentials) == (f"s3://{bucket.name}/lab/", "sts")
    wait_for(lambda: (broken / "paused-10-rank0").exists(), "the pause at step 10")
    (first,) = _seen(broken)
    assert first == {"dir": str(at), "files": expected}
    assert (machine_a / "data-cache" / version / "vocab.txt").read_bytes() == b"a\nb\nc\n"
    wait_for(lambda: _latest(bucket, run_id, "lab/") == "ckpt-000000008.pt",
             "the step-8 checkpoint in the bucket")

    reclaim(machine_a, run_id)
    shutil.rmtree(spot_recovery.mirror_dir(record), ignore_errors=True)  # no laptop copy
    (broken / "go-10").touch()
    assert gpudesk("recover", run_id, "--on", sshd_b.url, "--identity",
                   str(sshd_b.client_key), "--accept-new", "--remote-root",
                   str(machine_b)) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [run_id]
    assert "fetches the latest one from" in out.err, out.err
    assert gpudesk("logs", run_id, "--follow") == 0
    log_b = capsys.readouterr().out
    assert "dataset tokens fetched from the bucket: 3 files" in log_b, log_b[-3000:]
    assert "GPUDESK_RESUME_FROM=" in log_b
    _same_weights(result(broken), result(whole))
    second = _seen(broken)[1]
    assert second == {"dir": str(at), "files": expected}
    assert at.resolve() == machine_b / "data-cache" / version and not machine_a.exists()
    assert runs.RunRecord.load(run_id).data["manifest_sha256"] == version

    # a second run on B: the dataset is in B's cache, nothing is fetched
    again = tmp_path / "again"
    assert gpudesk(*run_cmd(sshd_b, machine_b, project, "--accept-new", "--data", "tokens",
                            "--", "reads_data.py", "--out", str(again), "--max-steps", "2",
                            "--ckpt-steps", "2")) == 0
    out = capsys.readouterr()
    assert "dataset tokens is already on this machine; nothing fetched" in out.out, out.out
    assert _seen(again) == [{"dir": str(machine_b / "data-cache" / version),
                             "files": expected}]


def test_run_data_needs_a_dataset_that_is_there(
        sshd: SshdServer, bucket: Bucket, machines: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], memory_keyring: object) -> None:
    machine_a, _ = machines
    save_credentials(bucket.moto.credentials)
    project = training_project(tmp_path / "proj")
    assert gpudesk(*run_cmd(sshd, machine_a, project, "--accept-new", "--data", "nothing",
                            "--detach", "--", "train.py", "--out", str(tmp_path / "o"))) == 1
    assert "No dataset named nothing is known here" in capsys.readouterr().err
    assert gpudesk(*run_cmd(sshd, machine_a, project, "--accept-new", "--data", "nothing",
                            "--store", f"s3://{bucket.name}/lab", "--detach", "--",
                            "train.py", "--out", str(tmp_path / "o"))) == 1
    assert "No complete dataset named nothing is in" in capsys.readouterr().err
    assert not (machine_a / "runs").exists()


def test_a_keep_alive_replacement_fetches_the_dataset_at_first_boot(
        bucket: Bucket, machines: tuple[Path, Path], tmp_path: Path,
        memory_keyring: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """The group's next machine, with no desktop: run.json names the dataset's version; the
    replacement fetches it from the bucket before the run starts (GPUDESK_DATA_DIR)."""
    from fixtures_agent_store import write_sts_file

    from gpudesk.agent import replacement
    from gpudesk.agent.store import Store
    from gpudesk.agent.store import StoreConfig
    from gpudesk.services.cloud.providers.base import Credentials
    from gpudesk.services.runs import run_package
    from gpudesk.services.runs.shipped_source import launcher_source
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage.access import StoreAccess
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.clients import make_client
    from gpudesk.services.storage.uri import StoreUri

    _, machine_b = machines
    save_credentials(bucket.moto.credentials)
    folder = tmp_path / "dataset"
    for rel, body in DATASET.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(body)
    store = StoreUri("aws", bucket.name)
    pushed = datasets.push(account_client("aws", "us-east-1"), store, "us-east-1", folder,
                           "tokens")
    project = training_project(tmp_path / "proj", {"reads_data.py": READS_DATA})
    out, run_id = tmp_path / "out", runs.new_run_id("proj")
    data = {"name": "tokens", "manifest_sha256": pushed.manifest_sha256,
            "key": pushed.manifest_key, "path": "", "uri": str(store)}
    request = runs.RunRequest(project, "reads_data.py", ["--out", str(out), "--max-steps",
                                                          "2", "--ckpt-steps", "2"],
                              nproc=1, python=PYTHON, root=str(machine_b), run_id=run_id,
                              data=data)
    access = StoreAccess(store, "us-east-1", run_id, role="gpudesk-run")
    package = run_package.write_package(
        access, request, client=make_client("aws", "us-east-1", Credentials(
            "aws", "AKIADESKTOP000000001", "desktop-secret")), keep=2)
    assert package.run_json["data"] == data
    (machine_b / "agent").mkdir(parents=True)
    (machine_b / "agent" / replacement.KEEP_ALIVE_FILE).write_text(
        json.dumps(package.keep_alive().to_json()))
    keys = write_sts_file(tmp_path / "role-keys.json")
    machine = Store(StoreConfig("aws", "us-east-1", bucket.name, f"runs/{run_id}/",
                                endpoint=bucket.moto.endpoint, addressing="path",
                                credentials_file=str(keys)))
    launcher = tmp_path / run_package.LAUNCHER  # the bundle's: run_folder.py inlined
    launcher.write_text(launcher_source(), encoding="utf-8")
    monkeypatch.setattr(replacement, "launcher_path", lambda: launcher)
    outcome = replacement.resume(machine_b, store=machine, cloud_id="i-0b")
    assert outcome.state == "started", outcome
    wait_for(lambda: (out / "data-seen-0.json").exists(), "the script reading its data")
    assert _seen(out) == [{"dir": str(machine_b / "data-cache" / pushed.manifest_sha256),
                           "files": {rel: hashlib.sha256(body).hexdigest()
                                     for rel, body in DATASET.items()}}]
    # noted in the run folder, as fetch-data notes it: the desktop counts it (data-fetch.json)
    note = json.loads((machine_b / "runs" / run_id / "data-fetch.json").read_text())
    assert [(f["dataset"], f["sha"], f["bytes"], f["files"]) for f in note["fetches"]] == [
        ("tokens", pushed.manifest_sha256, sum(len(b) for b in DATASET.values()), 3)]
