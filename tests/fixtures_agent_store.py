"""A run folder wired to a bucket in moto's S3 server, for the agent's uploader tests.

``from fixtures_agent_store import bucket, moto_server, aws  # noqa: F401``. The
``bucket`` fixture creates an empty bucket in a freshly reset moto and gives a
:class:`Bucket` that makes run folders (``store-config.json`` pointing at moto,
path-style, with short-lived dummy STS credentials in a mode-600 file) and reads
the bucket back with boto3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures_aws import MotoAws
from fixtures_aws import aws as aws  # noqa: F401 - re-exported fixture
from fixtures_aws import moto_server as moto_server  # noqa: F401 - re-exported fixture

REPO = Path(__file__).resolve().parent.parent
BUCKET = "gpudesk-runs-test"
STS_KEY_ID = "ASIAGPUDESKSTS000001"
STS_SECRET = "sTs/SeCrEt+ForTheMachine0123456789abcdEF"
STS_TOKEN = "FwoGZXIvYXdzEJr//////////session-token-of-the-machine"
WAIT_S = 60.0


def wait_for(cond: Callable[[], Any], timeout: float = WAIT_S, what: str = "condition") -> Any:
    """Poll until ``cond()`` is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def write_sts_file(path: Path, *, secret: str = STS_SECRET, expires_in: float = 3600.0,
                   key_id: str = STS_KEY_ID, token: str = STS_TOKEN) -> Path:
    expiry = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + expires_in))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({"key_id": key_id, "secret": secret, "token": token,
                   "expiration": expiry}, fh)
    return path


@dataclass
class Bucket:
    moto: MotoAws
    name: str
    root: Path

    @property
    def s3(self) -> Any:
        return self.moto.client("s3")

    def run(self, name: str = "r1", **config: Any) -> Path:
        """A run folder ``<root>/runs/<name>`` with its store config (run id: the name,
        unless ``run_id`` is given: another machine's folder for the same run)."""
        folder = self.root / "runs" / name
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        creds = write_sts_file(self.root / f"sts-{name}.json")
        data = {"cloud": "aws", "region": "us-east-1", "bucket": self.name,
                "endpoint": self.moto.endpoint, "addressing": "path",
                "credentials_file": str(creds), "keep": 2, "interval_s": 0.2,
                "log_every_s": 0.2, **config}
        (folder / "store-config.json").write_text(json.dumps(data), encoding="utf-8")
        return folder

    def keys(self, prefix: str = "runs/") -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.name,
                                                                   Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def read(self, key: str) -> bytes:
        body: bytes = self.s3.get_object(Bucket=self.name, Key=key)["Body"].read()
        return body

    def manifest(self, run_id: str = "r1") -> dict[str, Any] | None:
        if f"runs/{run_id}/manifest.json" not in self.keys(f"runs/{run_id}/manifest"):
            return None
        data: dict[str, Any] = json.loads(self.read(f"runs/{run_id}/manifest.json"))
        return data


@pytest.fixture
def bucket(aws: MotoAws, tmp_path: Path) -> Bucket:  # noqa: F811 - the fixture above
    aws.client("s3").create_bucket(Bucket=BUCKET)
    return Bucket(aws, BUCKET, tmp_path)


def write_fake_checkpoint(folder: Path, step: int, size: int = 4096, *,
                          sidecar: bool = True) -> Path:
    """Bytes laid down the way ``gpudesk.training.checkpoint`` does: a temporary name,
    a rename, then the ``.json`` sidecar with size and SHA-256."""
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    data = os.urandom(size)
    path = folder / f"ckpt-{step:09d}.pt"
    tmp = folder / f".{path.name}.tmp-{os.getpid()}"
    tmp.write_bytes(data)
    os.replace(tmp, path)
    if sidecar:
        (folder / f"ckpt-{step:09d}.json").write_text(json.dumps(
            {"step": step, "file": path.name, "bytes": size,
             "sha256": hashlib.sha256(data).hexdigest()}), encoding="utf-8")
    return path


def agent_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpudesk.agent", *args]


def agent_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    env.update(extra)
    return env


def start_agent(*args: str, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as fh:
        return subprocess.Popen(agent_cmd(*args), cwd=REPO, env=agent_env(**extra),
                                stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
