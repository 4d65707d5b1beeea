"""A run's folder in the bucket, seen from the laptop: list, download, delete, price.

Checkpoints are "complete" only when ``manifest.json`` (written last by the agent)
says so: an object without a manifest entry is an upload that was cut off.

The requests sent here are counted into the run's usage by S3's billing classes, like
the agent's (``usage.record_requests``): each ListObjectsV2 page is tier1, each
GetObject tier2, DeleteObjects free (a DELETE); one answered with an error counts too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.said import Said
from gpudesk.services.storage.errors import MSG_CLOUD
from gpudesk.services.storage.errors import MSG_UNREACHABLE
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.errors import from_client_error
from gpudesk.services.storage.uri import RunPaths
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.usage import SOURCE_DELETED
from gpudesk.services.storage.usage import record_download
from gpudesk.services.storage.usage import record_requests
from gpudesk.services.storage.usage import record_sample

GB = 1024**3  # the clouds bill storage and traffic in GiB ("GB" on their pages)
LIST_PAGE = 1000
DELETE_BATCH = 1000  # DeleteObjects takes at most 1000 keys
CHUNK = 1024 * 1024
PART_SUFFIX = ".part"

MSG_CANCELLED = QT_TRANSLATE_NOOP(
    "Storage",
    "The download was cancelled: whole files stay, the file being fetched was removed.")
MSG_CUT = QT_TRANSLATE_NOOP(
    "Storage", "The download of {path} stopped after {done} of {total} bytes ({reason}); "
    "nothing was kept under its name.")
MSG_BAD_MANIFEST = QT_TRANSLATE_NOOP(
    "Storage", "The run's manifest.json cannot be read ({reason}); no checkpoint is "
    "counted as complete.")

Progress = Callable[[int, int], bool | None]  # (bytes done, total) → False cancels


class Cancelled(StorageError):
    pass


@dataclass(frozen=True)
class Checkpoint:
    name: str
    bytes: int
    complete: bool
    latest: bool = False


@dataclass(frozen=True)
class OutputFile:
    path: str  # relative to outputs/
    bytes: int


@dataclass
class RunListing:
    run: str
    uri: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    outputs: list[OutputFile] = field(default_factory=list)
    logs: list[OutputFile] = field(default_factory=list)
    total_bytes: int = 0  # everything under runs/<id>/, manifest included
    warning: str = ""  # a Said (translated where shown) when there is one

    @property
    def outputs_bytes(self) -> int:
        return sum(o.bytes for o in self.outputs)


@dataclass
class Sent:
    """Requests this computer sent to a run's folder, by S3 billing class."""

    tier1: int = 0  # PUT, COPY, POST, LIST
    tier2: int = 0  # GET and all other requests

    def call(self, tier: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
        """``fn(**kwargs)``, counted when the bucket answered (an error answer too)."""
        from botocore.exceptions import ClientError

        try:
            result = fn(**kwargs)
        except ClientError:
            self._add(tier)
            raise
        self._add(tier)
        return result

    def _add(self, tier: str) -> None:
        setattr(self, tier, getattr(self, tier) + 1)

    def note(self, client: Any, store: StoreUri, run_id: str) -> None:
        record_requests(run_id, store.cloud, _region(client), self.tier1, self.tier2,
                        uri=store.run(run_id).uri)


@contextmanager
def _run_folder_calls(client: Any, store: StoreUri, run_id: str, sent: Sent) -> Iterator[None]:
    """botocore's errors in the block as StorageError naming the run's folder; the requests
    ``sent`` noted either way (the bucket bills an error answer too)."""
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    try:
        yield
    except ClientError as err:
        raise from_client_error(err, store.cloud, store.run(run_id).uri) from None
    except BotoCoreError as err:
        raise unreachable(client, err) from None
    finally:
        sent.note(client, store, run_id)


def _objects(client: Any, bucket: str, prefix: str,
             sent: Sent | None = None) -> Iterator[dict[str, Any]]:
    token: str | None = None
    sent = sent or Sent()
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": LIST_PAGE}
        if token:
            kwargs["ContinuationToken"] = token
        page = sent.call("tier1", client.list_objects_v2, **kwargs)
        yield from page.get("Contents", [])
        if not page.get("IsTruncated"):
            return
        token = page["NextContinuationToken"]


def read_manifest(client: Any, paths: RunPaths,
                  sent: Sent | None = None) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        body = (sent or Sent()).call("tier2", client.get_object, Bucket=paths.store.bucket,
                                     Key=paths.manifest)["Body"].read()
    except ClientError as err:
        code = str(err.response.get("Error", {}).get("Code", ""))
        if code in ("NoSuchKey", "404"):
            return None
        raise
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def list_run(client: Any, store: StoreUri, run_id: str) -> RunListing:
    """Checkpoints (complete flags from the manifest), outputs and logs with sizes."""
    paths = store.run(run_id)
    listing = RunListing(run=run_id, uri=paths.uri)
    sent = Sent()
    with _run_folder_calls(client, store, run_id, sent):
        objects = list(_objects(client, store.bucket, paths.root, sent))
        try:
            manifest = read_manifest(client, paths, sent) or {}
        except ValueError as err:
            manifest, listing.warning = {}, Said("Storage", MSG_BAD_MANIFEST, reason=str(err))
    done = {str(c.get("name")) for c in manifest.get("checkpoints", []) or []
            if isinstance(c, dict) and c.get("complete") is True}
    latest = manifest.get("latest")
    for obj in objects:
        key, size = str(obj["Key"]), int(obj.get("Size", 0))
        listing.total_bytes += size
        if key.startswith(paths.checkpoints):
            name = key[len(paths.checkpoints):]
            listing.checkpoints.append(Checkpoint(name, size, name in done, name == latest))
        elif key.startswith(paths.outputs):
            listing.outputs.append(OutputFile(key[len(paths.outputs):], size))
        elif key.startswith(paths.logs):
            listing.logs.append(OutputFile(key[len(paths.logs):], size))
    # a sample of what the folder holds, for the month's storage spend (usage.py)
    record_sample(run_id, store.cloud, _region(client), listing.total_bytes, uri=paths.uri)
    return listing


def _region(client: Any) -> str:
    return str(getattr(getattr(client, "meta", None), "region_name", "") or "")


def download_outputs(client: Any, store: StoreUri, listing: RunListing, dest: Path,
                     progress: Progress | None = None) -> list[Path]:
    """Every output into ``dest`` (sub-folders kept). Each file is written as
    ``<name>.part`` and renamed when whole, so a cut never leaves a half file under
    the final name. ``progress`` gets (done, total) bytes; returning False cancels."""
    paths = store.run(listing.run)
    total = listing.outputs_bytes
    done = 0
    sent = [0]  # bytes that left the bucket, a cut file's too: data out is billed
    requests = Sent()
    written: list[Path] = []
    if progress is not None:
        progress(0, total)
    try:
        for out in listing.outputs:
            target = dest / Path(*out.path.split("/"))
            base = done

            def step(n: int, _base: int = base) -> None:
                sent[0] = _base + n
                if progress is not None and progress(_base + n, total) is False:
                    raise Cancelled(MSG_CANCELLED)

            _download_one(client, store, paths.output(out.path), out, target, step, requests)
            done += out.bytes
            written.append(target)
    finally:
        record_download(listing.run, store.cloud, _region(client), max(sent[0], done))
        requests.note(client, store, listing.run)
    return written


def _download_one(client: Any, store: StoreUri, key: str, out: OutputFile, target: Path,
                  step: Callable[[int], None], requests: Sent) -> None:
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + PART_SUFFIX)
    got = 0
    body: Any = None
    try:
        body = requests.call("tier2", client.get_object, Bucket=store.bucket, Key=key)["Body"]
        with part.open("wb") as handle:
            for chunk in body.iter_chunks(CHUNK):
                handle.write(chunk)
                got += len(chunk)
                step(got)
            handle.flush()
            os.fsync(handle.fileno())
        if got != out.bytes:
            raise StorageError(MSG_CUT, path=out.path, done=got, total=out.bytes,
                               reason="size changed")
        os.replace(part, target)
    except ClientError as err:
        part.unlink(missing_ok=True)
        raise from_client_error(err, store.cloud, key) from None
    except (BotoCoreError, OSError) as err:
        part.unlink(missing_ok=True)
        raise StorageError(MSG_CUT, path=out.path, done=got, total=out.bytes,
                           reason=type(err).__name__) from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    finally:
        if body is not None:
            body.close()  # a cancel or a cut leaves no open connection behind


def delete_run(client: Any, store: StoreUri, run_id: str) -> int:
    """Delete everything under ``runs/<id>/`` (the caller has asked the user). Returns
    the number of objects deleted."""
    paths = store.run(run_id)
    count = 0
    sent = Sent()  # DeleteObjects is a DELETE: free; the listings are not
    with _run_folder_calls(client, store, run_id, sent):
        while True:
            keys = [o["Key"] for o in _objects(client, store.bucket, paths.root, sent)]
            if not keys:
                record_sample(run_id, store.cloud, _region(client), 0, uri=paths.uri,
                              source=SOURCE_DELETED)
                return count
            for i in range(0, len(keys), DELETE_BATCH):
                batch = keys[i:i + DELETE_BATCH]
                answer = client.delete_objects(Bucket=store.bucket, Delete={
                    "Objects": [{"Key": k} for k in batch], "Quiet": True})
                errors = answer.get("Errors", [])
                if errors:
                    first = errors[0]
                    raise StorageError(MSG_CLOUD, code=first.get("Code", ""),
                                       detail=first.get("Key", ""))
                count += len(batch)


def unreachable(client: Any, err: Exception) -> StorageError:
    """A connection that failed before the cloud could answer (no secrets in the text)."""
    return StorageError(MSG_UNREACHABLE, endpoint=str(client.meta.endpoint_url),
                        reason=type(err).__name__)
