"""Datasets: a folder pushed once to a bucket, then fetched by every machine from there (issue 32).

Layout in the store (docs/storage.md, "Datasets"): each file's bytes once, named by their
SHA-256, at ``<prefix>data/blobs/<sha256>`` (a file already there is never sent again,
whichever dataset or push it came from), and one manifest per dataset at
``<prefix>data/sets/<name>/manifest.json`` listing every file's path, size and hash. The
manifest is written LAST: a push cut short, cancelled or refused leaves blobs that the
next push reuses, but no manifest, so no incomplete dataset is ever listed. A run names a
dataset by the SHA-256 of its manifest's bytes (the version it used).

This computer keeps which store each dataset name lives in (``datasets.json``) and a
cache of file hashes keyed by path, size and mtime, so a push of an unchanged folder reads
no file again. Blocking (boto3): call it from a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.files import read_json_object
from gpudesk.services.core.files import write_json_object
from gpudesk.services.storage.dataset_registry import forget
from gpudesk.services.storage.dataset_registry import known
from gpudesk.services.storage.dataset_registry import known_bytes
from gpudesk.services.storage.dataset_registry import remember
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.errors import from_client_error
from gpudesk.services.storage.uri import StoreUri

DATA = "data/"
BLOBS = DATA + "blobs/"
SETS = DATA + "sets/"
MANIFEST = "manifest.json"
FORMAT = 1
MULTIPART_THRESHOLD = 64 * 1024 * 1024  # boto3's transfer manager above this
PART_SIZE = 16 * 1024 * 1024
WORKERS = 16
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

MSG_NO_FOLDER = QT_TRANSLATE_NOOP(
    "Storage", "{path} is not a folder: give the folder to push.")
MSG_EMPTY = QT_TRANSLATE_NOOP(
    "Storage", "{path} holds no file to push.")
MSG_BAD_NAME = QT_TRANSLATE_NOOP(
    "Storage", "'{name}' is not a dataset name (letters, digits, '.', '_' and '-', at most "
    "64, starting with a letter or digit).")
MSG_NAME_TAKEN = QT_TRANSLATE_NOOP(
    "Storage", "The name {name} is taken by another dataset in {store} (pushed from "
    "{source}). Choose another name, or remove it first: gpudesk data rm {name}.")
MSG_NO_DATASET = QT_TRANSLATE_NOOP(
    "Storage", "No complete dataset named {name} is in {store}.")
MSG_UNKNOWN = QT_TRANSLATE_NOOP(
    "Storage", "No dataset named {name} is known here: push it first (gpudesk data push "
    "DIR {name}) or give its bucket with --store.")
MSG_NO_STORE = QT_TRANSLATE_NOOP(
    "Storage", "No bucket to push to: give one with --store s3://bucket/prefix "
    "(cos://, oss:// with --region).")
MSG_CANCELLED = QT_TRANSLATE_NOOP(
    "Storage", "The push of {name} was cancelled; nothing is listed as a dataset (the next "
    "push reuses what was sent).")
MSG_CHANGED = QT_TRANSLATE_NOOP(
    "Storage", "{path} changed while it was pushed; push again.")


@dataclass(frozen=True)
class DataFile:
    path: str  # relative, "/"-separated
    size: int
    sha256: str


@dataclass(frozen=True)
class Dataset:
    """One complete dataset: its manifest, where it is and the manifest's hash."""

    name: str
    store: StoreUri
    region: str
    files: tuple[DataFile, ...]
    source: str
    created: str
    manifest_sha256: str

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def manifest_key(self) -> str:
        return manifest_key(self.store, self.name)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "uri": f"{self.store}{SETS}{self.name}/",
                "region": self.region, "bytes": self.bytes, "files": len(self.files),
                "source": self.source, "created": self.created,
                "manifest_sha256": self.manifest_sha256}


@dataclass
class Progress:
    """What a push has done: bytes of the files to send, speed and time left."""

    total: int = 0
    done: int = 0
    skipped: int = 0  # bytes already in the bucket
    files_sent: int = 0
    files_skipped: int = 0
    started: float = field(default_factory=time.monotonic)

    def speed(self, now: float | None = None) -> float:
        elapsed = (now if now is not None else time.monotonic()) - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def left_s(self, now: float | None = None) -> float | None:
        speed = self.speed(now)
        return (self.total - self.done) / speed if speed > 0 else None


def check_name(name: str) -> None:
    if not _NAME.match(name) or ".." in name:
        raise StorageError(MSG_BAD_NAME, name=name)


def manifest_key(store: StoreUri, name: str) -> str:
    return f"{store.prefix}{SETS}{name}/{MANIFEST}"


def blob_key(store: StoreUri, sha256: str) -> str:
    return f"{store.prefix}{BLOBS}{sha256}"


# ------------------------------------------------------------------ this computer's memory
# (which datasets and where: dataset_registry; the hashes of files pushed: here)

def _hash_cache_path() -> Path:
    from gpudesk.services.core import paths

    return paths.data_dir() / "dataset-hashes.json"


def size_of(name: str) -> int:
    """The bytes of dataset ``name``: kept here since its push, else read from its
    manifest with the account's keys (blocking: a worker thread) and kept. Raises
    StorageError for an unknown name or a bucket without it."""
    size = known_bytes().get(name)
    if size is not None:
        return size
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.store_check import check_store

    store, region = find(name)
    region = region or check_store(store, region)
    dataset = load(account_client(store.cloud, region), store, region, name)
    remember(name, store, region, dataset.bytes)
    return dataset.bytes


# ------------------------------------------------------------------ the folder

def _sha_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()  # read in chunks, not whole


def scan(folder: Path) -> list[tuple[DataFile, Path]]:
    """Every regular file under ``folder`` with its hash (reused from the hash cache while
    the file's size and mtime are unchanged). Raises StorageError for a missing folder."""
    if not folder.is_dir():
        raise StorageError(MSG_NO_FOLDER, path=str(folder))
    cache = read_json_object(_hash_cache_path())
    found: list[tuple[str, Path, os.stat_result]] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            st = path.stat()
            if not path.is_file():
                continue
            found.append((path.relative_to(folder).as_posix(), path, st))
    if not found:
        raise StorageError(MSG_EMPTY, path=str(folder))

    def one(item: tuple[str, Path, os.stat_result]) -> tuple[DataFile, Path]:
        rel, path, st = item
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
        entry = cache.get(str(path))
        if isinstance(entry, dict) and entry.get("stamp") == stamp:
            sha = str(entry.get("sha256", ""))
        else:
            sha = _sha_file(path)
        return DataFile(rel, st.st_size, sha), path

    with ThreadPoolExecutor(max_workers=4) as pool:  # hashlib lets go of the GIL
        files = list(pool.map(one, found))
    for (df, path), (_, _, st) in zip(files, found, strict=True):
        cache[str(path)] = {"stamp": f"{st.st_size}:{st.st_mtime_ns}", "sha256": df.sha256}
    write_json_object(_hash_cache_path(), cache)
    return files


def source_of(folder: Path) -> str:
    return f"{socket.gethostname()}:{folder.resolve()}"


# ------------------------------------------------------------------ the bucket

def _get_manifest(client: Any, store: StoreUri, name: str) -> bytes | None:
    from botocore.exceptions import ClientError

    try:
        return bytes(client.get_object(Bucket=store.bucket,
                                       Key=manifest_key(store, name))["Body"].read())
    except ClientError as err:
        code = str((err.response or {}).get("Error", {}).get("Code", ""))
        if code in ("NoSuchKey", "404", "NotFound"):
            return None
        raise from_client_error(err, store.cloud, store.bucket) from None


def parse_manifest(raw: bytes, store: StoreUri, region: str) -> Dataset:
    """``region``, where ``store`` is (checked or remembered), wins over the manifest's: a
    copy in another region keeps the manifest byte for byte (``dataset_copy``)."""
    data = json.loads(raw)
    files = tuple(DataFile(str(f["path"]), int(f["size"]), str(f["sha256"]))
                  for f in data.get("files") or [])
    return Dataset(str(data["name"]), store, str(region or data.get("region") or ""), files,
                   str(data.get("source", "")), str(data.get("created", "")),
                   hashlib.sha256(raw).hexdigest())


def load(client: Any, store: StoreUri, region: str, name: str) -> Dataset:
    """The complete dataset ``name`` in ``store``; raises StorageError when there is none."""
    check_name(name)
    raw = _get_manifest(client, store, name)
    if raw is None:
        raise StorageError(MSG_NO_DATASET, name=name, store=str(store))
    return parse_manifest(raw, store, region)


def _list(client: Any, store: StoreUri, prefix: str) -> list[dict[str, Any]]:
    from botocore.exceptions import ClientError

    out: list[dict[str, Any]] = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=store.bucket, Prefix=prefix):
            out.extend(page.get("Contents") or [])
    except ClientError as err:
        raise from_client_error(err, store.cloud, store.bucket) from None
    return out


def list_store(client: Any, store: StoreUri, region: str) -> list[Dataset]:
    """Every complete dataset in ``store`` (those with a manifest), by name."""
    found = []
    for item in _list(client, store, store.prefix + SETS):
        key = str(item["Key"])
        if not key.endswith("/" + MANIFEST):
            continue
        name = key[len(store.prefix + SETS):-len("/" + MANIFEST)]
        raw = _get_manifest(client, store, name)
        if raw is not None:
            found.append(parse_manifest(raw, store, region))
    return sorted(found, key=lambda d: d.name)


def usage_key(store: StoreUri) -> str:
    """The entry of a store's datasets in the month's bucket spend (``storage.usage``)."""
    return f"data:{store}"


def _note_usage(store: StoreUri, region: str, stored: int | None, tier1: int,
                tier2: int) -> None:
    """The data area's size now and the requests sent, for the month's spend: storage
    GB-months and requests priced like a run's folder (``storage.usage``)."""
    from gpudesk.services.storage import usage

    key = usage_key(store)
    if stored is not None:
        usage.record_sample(key, store.cloud, region, stored, uri=f"{store}{DATA}")
    usage.record_requests(key, store.cloud, region, tier1, tier2, uri=f"{store}{DATA}")


def push(client: Any, store: StoreUri, region: str, folder: Path, name: str, *,
         progress: Callable[[Progress], None] = lambda _p: None,
         cancel: threading.Event | None = None, workers: int = WORKERS) -> Dataset:
    """Upload ``folder`` as dataset ``name``: files not yet in the bucket (by hash) in
    parallel, multipart above 64 MiB, then the manifest. Raises StorageError for a name
    taken by another source, a refusal, or a cancel (no manifest is written then)."""
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    check_name(name)
    cancel = cancel or threading.Event()
    source = source_of(folder) if folder.is_dir() else str(folder)
    files = scan(folder)
    old = _get_manifest(client, store, name)
    if old is not None:
        was = parse_manifest(old, store, region).source
        if was != source:
            raise StorageError(MSG_NAME_TAKEN, name=name, store=str(store), source=was)
    listed = _list(client, store, store.prefix + BLOBS)
    present = {str(item["Key"]).rsplit("/", 1)[-1] for item in listed}
    stored_before = sum(int(item.get("Size") or 0) for item in listed)
    todo: dict[str, tuple[DataFile, Path]] = {}
    state = Progress()
    for df, path in files:
        if df.sha256 in present:
            state.skipped += df.size
            state.files_skipped += 1
        elif df.sha256 not in todo:
            todo[df.sha256] = (df, path)
            state.total += df.size
    lock = threading.Lock()
    config = TransferConfig(multipart_threshold=MULTIPART_THRESHOLD,
                            multipart_chunksize=PART_SIZE, max_concurrency=4,
                            use_threads=True)

    class Cancelled(Exception):
        pass

    def sent(count: int) -> None:
        with lock:
            state.done += count
        if cancel.is_set():
            raise Cancelled

    def send(df: DataFile, path: Path) -> None:
        if cancel.is_set():
            raise Cancelled
        if path.stat().st_size != df.size:
            raise StorageError(MSG_CHANGED, path=str(path))
        extra = {"Metadata": {"sha256": df.sha256}}
        if df.size > MULTIPART_THRESHOLD:
            client.upload_file(str(path), store.bucket, blob_key(store, df.sha256),
                               ExtraArgs=extra, Config=config, Callback=sent)
        else:
            with open(path, "rb") as fh:
                body = fh.read()
            if hashlib.sha256(body).hexdigest() != df.sha256:
                raise StorageError(MSG_CHANGED, path=str(path))
            client.put_object(Bucket=store.bucket, Key=blob_key(store, df.sha256),
                              Body=body, **extra)
            sent(df.size)
        with lock:
            state.files_sent += 1

    progress(state)
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(send, df, path) for df, path in todo.values()]
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.25)
            progress(state)
            failed = [f for f in futures if f.done() and f.exception() is not None]
            if failed or cancel.is_set():
                cancel.set()
                break
        for f in futures:
            f.cancel()
        wait(futures)
        for f in futures:
            exc = None if f.cancelled() else f.exception()
            if exc is not None and not isinstance(exc, Cancelled):
                raise exc
        if cancel.is_set():
            raise StorageError(MSG_CANCELLED, name=name)
    except KeyboardInterrupt:
        cancel.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    except ClientError as err:
        raise from_client_error(err, store.cloud, store.bucket) from None
    except BotoCoreError as err:
        from gpudesk.services.storage.errors import MSG_UNREACHABLE

        raise StorageError(MSG_UNREACHABLE, endpoint=store.bucket,
                           reason=type(err).__name__) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    manifest = {"format": FORMAT, "name": name, "source": source, "region": region,
                "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "files": [{"path": df.path, "size": df.size, "sha256": df.sha256}
                          for df, _ in sorted(files, key=lambda f: f[0].path)]}
    raw = (json.dumps(manifest, indent=1) + "\n").encode()
    try:
        client.put_object(Bucket=store.bucket, Key=manifest_key(store, name), Body=raw,
                          ContentType="application/json")
    except ClientError as err:
        raise from_client_error(err, store.cloud, store.bucket) from None
    remember(name, store, region, sum(df.size for df, _ in files))
    # lists, the old manifest's GET, the blobs' PUTs (multipart counted as one) and the
    # manifest's PUT: the one-time upload's requests (data in is free on all three clouds)
    _note_usage(store, region, stored_before + state.total + len(raw),
                2 + state.files_sent + 1, 1)
    from gpudesk.services.storage import data_costs  # the upload's line in the month's spend

    data_costs.record(data_costs.UPLOAD, name, store.cloud, region, state.total + len(raw))
    progress(state)
    return parse_manifest(raw, store, region)


def remove(client: Any, dataset: Dataset) -> int:
    """Remove the manifest first (the dataset is no longer listed), then every blob no
    remaining dataset in the store uses (also those of this dataset's earlier versions and
    of pushes cancelled long ago). Returns the number of blobs removed."""
    from botocore.exceptions import ClientError

    store = dataset.store
    try:
        client.delete_object(Bucket=store.bucket, Key=dataset.manifest_key)
        others = list_store(client, store, dataset.region)
        used = {f.sha256 for other in others for f in other.files}
        sizes = {str(item["Key"]).rsplit("/", 1)[-1]: int(item.get("Size") or 0)
                 for item in _list(client, store, store.prefix + BLOBS)}
        gone = sorted(set(sizes) - used)
        for start in range(0, len(gone), 1000):
            client.delete_objects(Bucket=store.bucket, Delete={"Objects": [
                {"Key": blob_key(store, sha)} for sha in gone[start:start + 1000]]})
    except ClientError as err:
        raise from_client_error(err, store.cloud, store.bucket) from None
    remaining = sum(size for sha, size in sizes.items() if sha in used)
    # two listings and a DeleteObjects (POST) per 1,000 keys; one GET per manifest left;
    # DELETE itself is free
    _note_usage(store, dataset.region, remaining, 2 + (len(gone) + 999) // 1000, len(others))
    forget(dataset.name)
    return len(gone)


def find(name: str, store_text: str = "", region: str = "") -> tuple[StoreUri, str]:
    """Where dataset ``name`` is: ``store_text`` when given, else where it was pushed or
    used from here. Raises StorageError when neither says."""
    from gpudesk.services.storage.uri import parse_uri

    check_name(name)
    if store_text:
        return parse_uri(store_text), region
    entry = known().get(name)
    if entry is None:
        raise StorageError(MSG_UNKNOWN, name=name)
    return parse_uri(entry[0]), entry[1]
