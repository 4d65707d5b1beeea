"""The agent's uploader against the COS and OSS stand-ins (tests/s3compat_standin.py), which
verify every SigV4 signature, the payload hash and the region, and take virtual-hosted
names through their proxy address."""
# ruff: noqa: F811 - pytest fixtures arrive as parameters

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cos_standin import cos_standin
from fixtures_agent_store import STS_KEY_ID
from fixtures_agent_store import STS_SECRET
from fixtures_agent_store import write_fake_checkpoint
from fixtures_agent_store import write_sts_file
from oss_standin import oss_standin
from s3compat_standin import Bucket as StandinBucket
from s3compat_standin import S3CompatStandin

from gpudesk.agent.resume_fetch import fetch_latest
from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreConfig
from gpudesk.agent.store import StoreError
from gpudesk.agent.uploader import STATE_FILE
from gpudesk.agent.uploader import Uploader

CASES = {"tencent": ("ap-guangzhou", "gpudesk-runs-1250000000"),
         "aliyun": ("cn-hangzhou", "gpudesk-runs-test")}


@pytest.fixture(params=sorted(CASES))
def cloud(request: pytest.FixtureRequest) -> Iterator[tuple[str, S3CompatStandin]]:
    server = (cos_standin() if request.param == "tencent" else oss_standin()).start()
    try:
        region, name = CASES[request.param]
        server.add_account(STS_KEY_ID, STS_SECRET, "acct-1", appid="1250000000")
        server.buckets[name] = StandinBucket(name, "acct-1", region)
        yield request.param, server
    finally:
        server.stop()


def _run(tmp_path: Path, cloud: str, server: S3CompatStandin, name: str = "r1",
         **extra: object) -> Path:
    region, bucket = CASES[cloud]
    folder = tmp_path / "runs" / name
    (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
    creds = write_sts_file(tmp_path / f"sts-{name}.json")
    config = {"cloud": cloud, "region": region, "bucket": bucket, "run_id": "r1",
              "endpoint": f"http://{server.service_host(region)}", "proxy": server.proxy,
              "credentials_file": str(creds), "keep": 2, "interval_s": 0.2, **extra}
    (folder / "store-config.json").write_text(json.dumps(config))
    return folder


def test_checkpoints_manifest_and_log_reach_cos_and_oss(
        cloud: tuple[str, S3CompatStandin], tmp_path: Path) -> None:
    name, server = cloud
    run = _run(tmp_path, name, server)
    for step in (1, 2, 3):
        write_fake_checkpoint(run / "checkpoints", step)
    (run / "log").write_text("step 3\n")
    Uploader.for_run(run).tick(1000.0)
    objects = server.buckets[CASES[name][1]].objects
    assert sorted(objects) == ["runs/r1/checkpoints/ckpt-000000002.pt",
                               "runs/r1/checkpoints/ckpt-000000003.pt",
                               "runs/r1/logs/log.000001", "runs/r1/manifest.json"]
    manifest = json.loads(objects["runs/r1/manifest.json"].data)
    assert manifest["latest"] == "ckpt-000000003.pt"
    assert objects["runs/r1/checkpoints/ckpt-000000003.pt"].data == \
        (run / "checkpoints" / "ckpt-000000003.pt").read_bytes()
    assert json.loads((run / STATE_FILE).read_text())["error"] is None
    # no manifest yet, and the stand-ins have no multipart listing; nothing else refused
    assert server.refused == ["NoSuchKey", "NotImplemented"]
    other = _run(tmp_path, name, server, "machine-b")
    got = fetch_latest(other)
    assert got is not None and got.read_bytes() == \
        (run / "checkpoints" / "ckpt-000000003.pt").read_bytes()


def test_the_stand_ins_refuse_a_wrong_signature_and_name_a_denied_action(
        cloud: tuple[str, S3CompatStandin], tmp_path: Path) -> None:
    name, server = cloud
    region, bucket = CASES[name]
    wrong = write_sts_file(tmp_path / "wrong.json", secret=STS_SECRET[:-1] + "x")
    base = {"cloud": name, "region": region, "bucket": bucket,
            "endpoint": f"http://{server.service_host(region)}", "proxy": server.proxy}
    with pytest.raises(StoreError) as exc:
        Store(StoreConfig.from_dict({**base, "credentials_file": str(wrong)})).put_bytes(
            "runs/r1/manifest.json", b"{}")
    assert exc.value.code == "SignatureDoesNotMatch" and STS_SECRET not in str(exc.value)
    good = str(write_sts_file(tmp_path / "good.json"))
    action = {"tencent": "cos:PutObject", "aliyun": "oss:PutObject"}[name]
    server.accounts[STS_KEY_ID].denied.add(action)
    with pytest.raises(StoreError, match=f"s3:PutObject on {bucket}/runs/r1/x was denied: "
                                         f"AccessDenied .*{action}"):
        Store(StoreConfig.from_dict({**base, "credentials_file": good})).put_bytes(
            "runs/r1/x", b"")
    if name == "aliyun":  # OSS takes virtual-hosted names only
        with pytest.raises(StoreError, match="SecondLevelDomainForbidden"):
            Store(StoreConfig.from_dict({**base, "credentials_file": good,
                                         "addressing": "path"})).get_bytes("runs/r1/x")
    assert not os.environ.get("GPUDESK_STORE_HOOK")
