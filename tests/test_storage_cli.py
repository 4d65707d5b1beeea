"""``gpudesk outputs RUN [--download DIR] [--json]`` against S3 (moto), COS and OSS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import MemoryKeyring  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401
from test_storage_outputs import seed_run

from gpudesk.cli.entry import main
from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.storage import buckets


def _record(run: str, uri: str, region: str) -> None:
    RunRecord(id=run, project="/tmp/p", remote_project="~/p", script="train.py", args=[],
              nproc=1, nodes=[NodeRun("ssh://u@h", None, "~/gpudesk/runs/" + run)],
              store_uri=uri, store_region=region).save()


def test_outputs_json_has_the_documented_shape(
        store_env: StoreEnv, memory_keyring: MemoryKeyring,  # noqa: F811
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    env = store_env
    client = env.client()
    store = buckets.ensure_bucket(client, env.target(), env.memory).store
    outs = seed_run(client, store, "cli-run")
    save_credentials(env.creds)
    _record("cli-run", str(store), env.region)
    assert main(["outputs", "cli-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"run", "uri", "checkpoints", "outputs", "monthly_cost", "currency"}
    assert data["run"] == "cli-run"
    assert data["uri"] == f"{store.scheme}://{store.bucket}/runs/cli-run/"
    assert data["checkpoints"] == [
        {"name": "step-100.pt", "bytes": 1000, "complete": True},
        {"name": "step-200.pt", "bytes": 2000, "complete": True},
        {"name": "step-300.pt", "bytes": 300, "complete": False}]
    assert sorted(data["outputs"], key=lambda o: str(o["path"])) == sorted(
        ({"path": k, "bytes": len(v)} for k, v in outs.items()), key=lambda o: str(o["path"]))
    # no storage price was read from a price page: no figure rather than a guess
    assert data["monthly_cost"] is None and data["currency"] is None

    assert main(["outputs", "cli-run", "--download", str(tmp_path / "dl")]) == 0
    captured = capsys.readouterr()
    assert "100%" in captured.err and "3 file(s)" in captured.out
    for name, blob in outs.items():
        assert (tmp_path / "dl" / name).read_bytes() == blob


def test_outputs_of_a_run_without_a_bucket_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    _record("no-store", "", "")
    with pytest.raises(SystemExit) as caught:
        main(["outputs", "no-store", "--json"])
    assert "has no bucket" in str(caught.value)


def test_a_bad_store_uri_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["outputs", "r", "--store", "gs://b/x", "--region", "x"]) == 1
    assert "is not a store address" in capsys.readouterr().err
