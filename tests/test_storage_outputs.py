"""A run's folder in the bucket from the laptop: list, download, delete (S3, COS, OSS)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401

from gpudesk.services.storage import buckets
from gpudesk.services.storage import outputs
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import StoreUri

MIB = 1024 * 1024


def seed_run(client: Any, store: StoreUri, run: str) -> dict[str, bytes]:
    """What the agent leaves: two complete checkpoints, one cut off, logs, outputs, and
    the manifest last."""
    paths = store.run(run)
    ckpt = {"step-100.pt": b"a" * 1000, "step-200.pt": b"b" * 2000, "step-300.pt": b"c" * 300}
    outs = {"model.pt": bytes(range(256)) * 12 * 1024, "eval/metrics.json": b'{"loss": 0.5}',
            "samples/a b.txt": b"hello"}
    for name, data in ckpt.items():
        client.put_object(Bucket=store.bucket, Key=paths.checkpoint(name), Body=data)
    for name, data in outs.items():
        client.put_object(Bucket=store.bucket, Key=paths.output(name), Body=data)
    client.put_object(Bucket=store.bucket, Key=paths.log("train.log"), Body=b"step 1\n")
    manifest = {"run": run, "latest": "step-200.pt", "updated": "2026-12-04T18:00:00Z",
                "checkpoints": [{"name": n, "bytes": len(ckpt[n]), "complete": True,
                                 "sha256": hashlib.sha256(ckpt[n]).hexdigest()}
                                for n in ("step-100.pt", "step-200.pt")]}
    client.put_object(Bucket=store.bucket, Key=paths.manifest,
                      Body=json.dumps(manifest).encode())
    return outs


def _bucket(env: StoreEnv) -> tuple[Any, StoreUri]:
    client = env.client()
    return client, buckets.ensure_bucket(client, env.target(), env.memory).store


def test_listing_has_sizes_and_complete_flags_from_the_manifest(store_env: StoreEnv) -> None:  # noqa: F811
    client, store = _bucket(store_env)
    outs = seed_run(client, store, "run-1")
    seed_run(client, store, "run-10")  # a neighbour whose id starts the same
    listing = outputs.list_run(client, store, "run-1")
    assert listing.uri == f"{store.scheme}://{store.bucket}/runs/run-1/"
    assert [(c.name, c.bytes, c.complete, c.latest) for c in listing.checkpoints] == [
        ("step-100.pt", 1000, True, False), ("step-200.pt", 2000, True, True),
        ("step-300.pt", 300, False, False)]
    assert sorted((o.path, o.bytes) for o in listing.outputs) == sorted(
        (k, len(v)) for k, v in outs.items())
    assert [(f.path, f.bytes) for f in listing.logs] == [("train.log", 7)]
    assert listing.outputs_bytes == sum(len(v) for v in outs.values())


def test_listing_without_a_manifest_counts_nothing_complete(store_env: StoreEnv) -> None:  # noqa: F811
    client, store = _bucket(store_env)
    client.put_object(Bucket=store.bucket, Key=store.run("r").checkpoint("x.pt"), Body=b"1")
    listing = outputs.list_run(client, store, "r")
    assert [(c.name, c.complete) for c in listing.checkpoints] == [("x.pt", False)]


def test_download_reports_progress_to_the_total_and_leaves_whole_files(
        store_env: StoreEnv, tmp_path: Path) -> None:  # noqa: F811
    client, store = _bucket(store_env)
    outs = seed_run(client, store, "run-1")
    listing = outputs.list_run(client, store, "run-1")
    seen: list[tuple[int, int]] = []
    written = outputs.download_outputs(client, store, listing, tmp_path / "out",
                                       lambda d, t: seen.append((d, t)))
    total = sum(len(v) for v in outs.values())
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))
    assert len(written) == 3
    for name, data in outs.items():
        assert (tmp_path / "out" / name).read_bytes() == data
    assert list((tmp_path / "out").rglob("*.part")) == []


def test_cancel_midway_leaves_no_file(store_env: StoreEnv, tmp_path: Path) -> None:  # noqa: F811
    client, store = _bucket(store_env)
    big = b"z" * (3 * MIB)
    client.put_object(Bucket=store.bucket, Key=store.run("r").output("big.bin"), Body=big)
    listing = outputs.list_run(client, store, "r")

    def progress(done: int, total: int) -> bool:
        return done < MIB  # cancel once a first MiB has arrived

    with pytest.raises(outputs.Cancelled):
        outputs.download_outputs(client, store, listing, tmp_path / "out", progress)
    assert list((tmp_path / "out").rglob("*")) == []


@pytest.mark.parametrize("store_env", ["tencent", "aliyun"], indirect=True)
def test_a_cut_connection_leaves_no_half_file(store_env: StoreEnv, tmp_path: Path) -> None:  # noqa: F811
    client, store = _bucket(store_env)
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    data = b"y" * (2 * MIB + 17)
    client.put_object(Bucket=store.bucket, Key=store.run("r").output("w.bin"), Body=data)
    (tmp_path / "w.bin").write_bytes(b"old")  # a previous whole download stays untouched
    listing = outputs.list_run(client, store, "r")
    assert store_env.standin is not None
    store_env.standin.cut_next_get = MIB + 5
    with pytest.raises(StorageError) as caught:
        outputs.download_outputs(client, store, listing, tmp_path)
    assert "w.bin" in caught.value.message()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.bin"]
    assert (tmp_path / "w.bin").read_bytes() == b"old"
    assert store_env.standin.bill(store_env.account_id).bytes_out == MIB + 5
    outputs.download_outputs(client, store, listing, tmp_path)  # and a retry completes
    assert (tmp_path / "w.bin").read_bytes() == data


def test_delete_removes_the_run_folder_only_across_pages(store_env: StoreEnv) -> None:  # noqa: F811
    client, store = _bucket(store_env)
    seed_run(client, store, "keep")
    paths = store.run("gone")
    for i in range(1003):  # more than one ListObjectsV2 page and one DeleteObjects batch
        client.put_object(Bucket=store.bucket, Key=paths.log(f"{i:04d}.txt"), Body=b"x")
    assert len(outputs.list_run(client, store, "gone").logs) == 1003
    assert outputs.delete_run(client, store, "gone") == 1003
    keys = store_env.object_keys(store.bucket)
    assert keys and all(k.startswith("runs/keep/") for k in keys)
    assert outputs.list_run(client, store, "gone").total_bytes == 0
