"""Datasets (issue 32): ``gpudesk data push`` and the machine's fetch, against plain boto3.

A folder of 500 MB in 1,000 files (990 of ~300 KB, 10 of ~20 MB; random bytes) is sent to
moto's S3 server, run as its own process on loopback (``moto_server``), so that it does not
share this process's interpreter lock:

* first push: ``datasets.push`` (hashing included, an empty hash cache) against an
  ``aws s3 sync``-equivalent boto3 upload of the same folder (s3transfer's
  TransferManager, 10 concurrent requests as the AWS CLI's default), each into its own
  empty bucket, alternating which goes first. Goal: ratio ≤ 1.0.
* no-change push: ``datasets.push`` of the same folder again. Goal: ≤ 0.1 of the first.
* fetch: the agent's ``data_fetch.fetch`` (16 parallel ranged GETs of 8 MiB) against
  a single-stream download of every file with the same stdlib client (``Store.get_file``,
  one file after the other). Goal: ≥ 3× faster.

The goals are the issue's; the numbers are printed, never asserted (moto on a shared box
is no cloud: what it says is how gpudesk compares with the plain way on the same server).

    python -m benchmarks.bench_data [repetitions]
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCALE = float(os.environ.get("BENCH_DATA_SCALE", "1"))  # < 1: a quick try of the bench
SMALL, SMALL_BYTES = 990, int(300 * 1000 * SCALE)
BIG, BIG_BYTES = 10, int(20 * 1000 * 1000 * SCALE)
GOALS = {"first": 1.0, "unchanged": 0.1, "fetch_speedup": 3.0}
REPS = 1
KEY_ID, SECRET = "AKIABENCHDATA0000001", "bench-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    exe = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
            return proc, url
        except OSError:
            time.sleep(0.05)  # waiting for the server to listen, not a timing assumption
    proc.kill()
    raise RuntimeError("moto_server did not start")


def make_folder(root: Path) -> Path:
    for i in range(SMALL):
        path = root / f"part-{i // 100:02d}" / f"sample-{i:04d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(SMALL_BYTES))
    for i in range(BIG):
        (root / f"shard-{i:02d}.bin").write_bytes(os.urandom(BIG_BYTES))
    return root


def _client(endpoint: str) -> Any:
    from gpudesk.services.cloud.providers.base import Credentials
    from gpudesk.services.storage.clients import make_client

    os.environ["AWS_ENDPOINT_URL"] = endpoint
    return make_client("aws", "us-east-1", Credentials("aws", KEY_ID, SECRET))


def plain_upload(client: Any, bucket: str, folder: Path) -> float:
    """What ``aws s3 sync DIR s3://bucket`` does for an empty bucket."""
    from s3transfer.manager import TransferConfig, TransferManager

    started = time.perf_counter()
    with TransferManager(client, TransferConfig(max_request_concurrency=10)) as manager:
        futures = [manager.upload(str(p), bucket, p.relative_to(folder).as_posix())
                   for p in sorted(folder.rglob("*")) if p.is_file()]
        for f in futures:
            f.result()
    return time.perf_counter() - started


def gpudesk_push(client: Any, bucket: str, folder: Path, name: str = "bench") -> float:
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage.uri import StoreUri

    started = time.perf_counter()
    datasets.push(client, StoreUri("aws", bucket), "us-east-1", folder, name)
    return time.perf_counter() - started


def machine_store(endpoint: str, bucket: str, work: Path) -> Any:
    from gpudesk.agent.store import Store, StoreConfig

    creds = work / "sts.json"
    creds.write_text(json.dumps({"key_id": KEY_ID, "secret": SECRET, "token": "t",
                                 "expiration": "2099-01-01T00:00:00Z"}))
    os.chmod(creds, 0o600)
    return Store(StoreConfig(cloud="aws", region="us-east-1", bucket=bucket,
                             endpoint=endpoint, addressing="path",
                             credentials_file=str(creds)))


def single_stream(store: Any, manifest: dict[str, Any], dest: Path) -> float:
    from gpudesk.agent.data_fetch import blob_key

    started = time.perf_counter()
    for f in manifest["files"]:
        store.get_file(blob_key("data/sets/bench/manifest.json", f["sha256"]),
                       dest / f["path"], sha256=f["sha256"], size=int(f["size"]))
    return time.perf_counter() - started


def parallel_fetch(store: Any, key: str, sha: str, cache: Path) -> float:
    from gpudesk.agent.data_fetch import fetch

    started = time.perf_counter()
    fetch(store, key, sha, cache)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    reps = int(args[0]) if args else REPS
    work = Path(tempfile.mkdtemp(prefix="bench-data-"))
    os.environ["GPUDESK_HOME"] = str(work / "home")
    proc, endpoint = start_moto()
    rows: dict[str, list[float]] = {k: [] for k in (
        "plain", "push", "unchanged", "single", "parallel")}
    try:
        folder = make_folder(work / "dataset")
        total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        print(f"dataset: {SMALL + BIG} files, {total / 1e6:.0f} MB; moto_server at "
              f"{endpoint}; {os.cpu_count()} CPUs")
        client = _client(endpoint)
        for rep in range(reps):
            pair = [f"plain-{rep}", f"gpudesk-{rep}"]
            for b in pair:
                client.create_bucket(Bucket=b)
            shutil.rmtree(work / "home", ignore_errors=True)  # an empty hash cache
            order = ["plain", "push"] if rep % 2 == 0 else ["push", "plain"]
            for which in order:
                os.sync()
                if which == "plain":
                    rows["plain"].append(plain_upload(client, pair[0], folder))
                else:
                    rows["push"].append(gpudesk_push(client, pair[1], folder))
            rows["unchanged"].append(gpudesk_push(client, pair[1], folder))
            raw = client.get_object(Bucket=pair[1], Key="data/sets/bench/manifest.json")
            body = raw["Body"].read()
            manifest = json.loads(body)
            import hashlib

            sha = hashlib.sha256(body).hexdigest()
            store = machine_store(endpoint, pair[1], work)
            for which in ("single", "parallel") if rep % 2 == 0 else ("parallel", "single"):
                out = work / f"{which}-{rep}"
                os.sync()
                if which == "single":
                    rows["single"].append(single_stream(store, manifest, out))
                else:
                    rows["parallel"].append(parallel_fetch(
                        store, "data/sets/bench/manifest.json", sha, out))
                shutil.rmtree(out)
            for b in pair:  # moto holds them in memory
                for page in client.get_paginator("list_objects_v2").paginate(Bucket=b):
                    for o in page.get("Contents") or []:
                        client.delete_object(Bucket=b, Key=o["Key"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"first push:   gpudesk {med['push']:.2f} s, plain boto3 (aws s3 sync) "
          f"{med['plain']:.2f} s: ratio {med['push'] / med['plain']:.2f} "
          f"(goal <= {GOALS['first']})")
    print(f"no-change push: {med['unchanged']:.2f} s: {med['unchanged'] / med['push']:.3f} "
          f"of the first (goal <= {GOALS['unchanged']})")
    print(f"fetch: parallel ranged {med['parallel']:.2f} s, single stream "
          f"{med['single']:.2f} s: {med['single'] / med['parallel']:.2f}x faster "
          f"(goal >= {GOALS['fetch_speedup']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
