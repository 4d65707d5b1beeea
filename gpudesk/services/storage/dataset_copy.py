"""A dataset copied bucket-to-bucket into a machine's region, its cost said first (issue 32).

A machine fetches its dataset from a bucket in its own region, where that traffic is free
(``data_costs``). A dataset pushed to a bucket in another region is first copied, by the
cloud itself (S3 ``CopyObject``; ``UploadPartCopy`` parts above 5 GB, CopyObject's limit),
into the same layout in a bucket in the machine's region: blobs the target lacks, then the
manifest, last and byte for byte (the version a run names stays the same). Before anything
moves, :func:`plan` says the bytes to copy and their data-out price with its source and
date, or that the price is not known and why; :func:`copy` then needs that confirmed.

Which bucket: the one the user names (``gpudesk data copy NAME --to URI``, or the Data
page), never one gpudesk picks. A run whose machine is in another region than its
dataset reads the copy this computer remembers there, or is refused with the cost and
the command (:func:`for_machine`).

Only AWS S3 is copied server-side here: COS can copy across regions but was not tested
through its S3-compatible API, and OSS's CopyObject works only within one region (its
cross-region replication is a bucket rule, not a one-time copy); both are refused with
that said. Blocking (boto3): call it from a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.files import read_json_object
from gpudesk.services.core.files import write_json_object
from gpudesk.services.core.said import Said
from gpudesk.services.core.sizes import size_text
from gpudesk.services.storage import data_costs
from gpudesk.services.storage import datasets
from gpudesk.services.storage.datasets import BLOBS
from gpudesk.services.storage.datasets import DataFile
from gpudesk.services.storage.datasets import Dataset
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.errors import from_client_error
from gpudesk.services.storage.pricing import GB
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import parse_uri

ONE_COPY_MAX = 5 * 1024**3  # S3 CopyObject copies at most 5 GB in one request
PART = 512 * 1024**2  # UploadPartCopy part above that (at most 10,000 parts: 5 TB)
COPIES_FILE = "dataset-copies.json"

MSG_PLAN = QT_TRANSLATE_NOOP(
    "Storage", "Copying dataset {name} from {source} ({from_region}) to {target} "
    "({to_region}) sends {size} in {files} files between regions, billed as data out of "
    "{from_region}: {cost}.")
MSG_PLAN_COST = QT_TRANSLATE_NOOP(
    "Storage", "{gb} GB × {price} {currency}/GB = {amount} {currency} ({source}, {date})")
MSG_PLAN_UNKNOWN = QT_TRANSLATE_NOOP(
    "Storage", "the price is not known ({why}); copy only if you accept a charge gpudesk "
    "cannot say")
MSG_PLAN_NOTHING = QT_TRANSLATE_NOOP(
    "Storage", "Dataset {name} has every file in {target} ({to_region}) already: nothing is "
    "copied and nothing is billed for data out; only its manifest is written.")
MSG_ASK = QT_TRANSLATE_NOOP("Storage", "Copy dataset {name} to {target}?")
MSG_SAME_REGION = QT_TRANSLATE_NOOP(
    "Storage", "{target} is in {region}, the region dataset {name} is in already: a machine "
    "there reads it from {source}.")
MSG_OTHER_CLOUD = QT_TRANSLATE_NOOP(
    "Storage", "Dataset {name} is on {cloud}; {target} is not. gpudesk copies a dataset only "
    "between buckets of one cloud.")
MSG_NOT_S3 = QT_TRANSLATE_NOOP(
    "Storage", "gpudesk copies datasets between regions on AWS S3 only: {cloud}'s copy "
    "between regions was not tested here. Push the folder to a bucket in {region} "
    "instead: gpudesk data push DIR {name} --store URI --region {region}.")
MSG_NOT_CONFIRMED = QT_TRANSLATE_NOOP(
    "Storage", "The copy of dataset {name} was not confirmed; nothing was copied.")
MSG_CANCELLED = QT_TRANSLATE_NOOP(
    "Storage", "The copy of dataset {name} was cancelled; nothing is listed in {target} "
    "(the next copy reuses what was copied).")
MSG_COPIED = QT_TRANSLATE_NOOP(
    "Storage", "{name}: {files} files, {size} in {where} ({region}), version {version}; a "
    "machine in {region} reads this copy")
MSG_NEEDS_COPY = QT_TRANSLATE_NOOP(
    "Storage", "Dataset {name} is in {source} ({from_region}); the machine is in "
    "{to_region}. Copy it to a bucket of yours in {to_region} first, then start the run "
    "again: gpudesk data copy {name} --to {cloud_scheme}://BUCKET/PREFIX "
    "--to-region {to_region}. Copying its {size}: {cost}.")


ClientFor = Callable[[str, str], Any]  # (cloud, region) -> an S3-compatible client


@dataclass(frozen=True)
class CopyPlan:
    """What a copy would move and what that costs, said before anything moves."""

    dataset: Dataset
    target: StoreUri
    target_region: str
    missing: tuple[DataFile, ...]  # one per blob the target lacks
    charge: data_costs.Charge

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.missing)

    @property
    def cost(self) -> float | None:
        return self.charge.cost(self.bytes)

    @property
    def price_known(self) -> bool:
        return self.charge.per_gb is not None

    def words(self) -> Said:
        """The sentence the CLI prints and the window's confirmation shows."""
        d = self.dataset
        if not self.missing:
            return Said("Storage", MSG_PLAN_NOTHING, name=d.name, target=str(self.target),
                        to_region=self.target_region)
        return Said("Storage", MSG_PLAN, name=d.name, source=str(d.store),
                    from_region=d.region, target=str(self.target),
                    to_region=self.target_region, size=size_text(self.bytes),
                    files=len(self.missing), cost=cost_words(self.charge, self.bytes))

    def question(self) -> Said:
        return Said("Storage", MSG_ASK, name=self.dataset.name, target=str(self.target))


def cost_words(charge: data_costs.Charge, n_bytes: int) -> Said:
    if charge.per_gb is None:
        return Said("Storage", MSG_PLAN_UNKNOWN, why=charge.reason)
    return Said("Storage", MSG_PLAN_COST, gb=data_costs.figure(n_bytes / GB, 3),
                price=f"{charge.per_gb:g}", currency=charge.currency,
                amount=data_costs.figure(charge.cost(n_bytes) or 0.0), source=charge.source,
                date=charge.as_of.isoformat() if charge.as_of else "-")


def _check_route(dataset: Dataset, target: StoreUri, target_region: str) -> None:
    src = dataset.store
    if target.cloud != src.cloud:
        raise StorageError(MSG_OTHER_CLOUD, name=dataset.name, cloud=src.cloud,
                           target=str(target))
    if target_region == dataset.region:
        raise StorageError(MSG_SAME_REGION, target=str(target), region=target_region,
                           name=dataset.name, source=str(src))
    if src.cloud != "aws":
        raise StorageError(MSG_NOT_S3, cloud=src.cloud, region=target_region,
                           name=dataset.name)


def _present(client: Any, store: StoreUri) -> dict[str, int]:
    """sha256 -> size of the blobs already in ``store``."""
    return {str(item["Key"]).rsplit("/", 1)[-1]: int(item.get("Size") or 0)
            for item in datasets._list(client, store, store.prefix + BLOBS)}


def plan(target_client: Any, dataset: Dataset, target: StoreUri,
         target_region: str) -> CopyPlan:
    """What copying ``dataset`` into ``target`` (in ``target_region``) would move: the
    blobs ``target`` lacks, and their price. Lists ``target`` only; raises StorageError
    for a route gpudesk does not copy."""
    _check_route(dataset, target, target_region)
    present = _present(target_client, target)
    missing: dict[str, DataFile] = {}
    for f in dataset.files:
        if f.sha256 not in present and f.sha256 not in missing:
            missing[f.sha256] = f
    charge = data_costs.copy_charge(dataset.store.cloud, dataset.region, target_region)
    return CopyPlan(dataset, target, target_region, tuple(missing.values()), charge)


def prepare(dataset: Dataset, to: str, to_region: str, client_for: ClientFor
            ) -> tuple[CopyPlan, Any]:
    """What ``gpudesk data copy`` and the Data page do before they ask: a route gpudesk
    does not copy refused before any bucket is asked (another cloud; COS, OSS), the
    target bucket checked with the account's keys (missing, or refusing them: said
    first), AWS's inter-region price read if stale, then :func:`plan`. Returns the plan
    and the target's client. Blocking: a worker thread in the window."""
    from gpudesk.services.storage import s3_price_list
    from gpudesk.services.storage.store_check import check_store

    target = parse_uri(to)
    src = dataset.store
    if target.cloud != src.cloud or (src.cloud != "aws" and to_region):
        _check_route(dataset, target, to_region)  # refused without asking any bucket
    region = check_store(target, to_region)
    if target.cloud == "aws":  # the inter-region price, from the source region's price list
        s3_price_list.ensure_fresh([dataset.region])
    target_client = client_for(target.cloud, region)
    return plan(target_client, dataset, target, region), target_client


def copied_words(copied: Dataset, target: StoreUri, region: str) -> Said:
    """The line said once a copy is done (the CLI's output, the Data page's message)."""
    return Said("Storage", MSG_COPIED, name=copied.name, files=len(copied.files),
                size=size_text(copied.bytes), where=f"{target}{datasets.SETS}{copied.name}/",
                region=region, version=copied.manifest_sha256[:12])


def _copy_blob(client: Any, src: StoreUri, dst: StoreUri, f: DataFile, *,
               one_copy_max: int, part: int) -> None:
    source = {"Bucket": src.bucket, "Key": datasets.blob_key(src, f.sha256)}
    key = datasets.blob_key(dst, f.sha256)
    if f.size <= one_copy_max:
        client.copy_object(Bucket=dst.bucket, Key=key, CopySource=source,
                           MetadataDirective="COPY")
        return
    upload = client.create_multipart_upload(Bucket=dst.bucket, Key=key,
                                            Metadata={"sha256": f.sha256})["UploadId"]
    try:
        parts = []
        for number, first in enumerate(range(0, f.size, part), start=1):
            last = min(first + part, f.size) - 1
            got = client.upload_part_copy(Bucket=dst.bucket, Key=key, UploadId=upload,
                                          PartNumber=number, CopySource=source,
                                          CopySourceRange=f"bytes={first}-{last}")
            parts.append({"PartNumber": number, "ETag": got["CopyPartResult"]["ETag"]})
        client.complete_multipart_upload(Bucket=dst.bucket, Key=key, UploadId=upload,
                                         MultipartUpload={"Parts": parts})
    except BaseException:
        client.abort_multipart_upload(Bucket=dst.bucket, Key=key, UploadId=upload)
        raise


def copy(source_client: Any, target_client: Any, copy_plan: CopyPlan, *,
         confirmed: bool, progress: Callable[[int, int], None] = lambda _d, _t: None,
         cancel: threading.Event | None = None, one_copy_max: int = ONE_COPY_MAX,
         part: int = PART) -> Dataset:
    """Copy the plan's blobs server-side (the target's client sends CopyObject naming the
    source), then the manifest, byte for byte; remember the copy here and note its bytes
    in the month's spend. ``confirmed`` is the user's yes to :meth:`CopyPlan.words`:
    without it nothing moves. ``progress(bytes done, bytes in all)`` after each blob."""
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    dataset, target, region = copy_plan.dataset, copy_plan.target, copy_plan.target_region
    if not confirmed:
        raise StorageError(MSG_NOT_CONFIRMED, name=dataset.name)
    cancel = cancel or threading.Event()
    src = dataset.store
    done = 0
    progress(done, copy_plan.bytes)
    try:
        raw = datasets._get_manifest(source_client, src, dataset.name)
        if raw is None:
            raise StorageError(datasets.MSG_NO_DATASET, name=dataset.name, store=str(src))
        try:
            for f in copy_plan.missing:  # one by one: each is one request the cloud carries
                if cancel.is_set():
                    raise StorageError(MSG_CANCELLED, name=dataset.name, target=str(target))
                _copy_blob(target_client, src, target, f, one_copy_max=one_copy_max,
                           part=part)
                done += f.size
                progress(done, copy_plan.bytes)
        finally:  # what was copied is billed, whether or not the copy ended
            data_costs.record(data_costs.COPY, dataset.name, src.cloud, dataset.region,
                              done, to=region)
        stored = sum(_present(target_client, target).values())
        target_client.put_object(Bucket=target.bucket,
                                 Key=datasets.manifest_key(target, dataset.name), Body=raw,
                                 ContentType="application/json")
    except ClientError as err:
        raise from_client_error(err, target.cloud, target.bucket) from None
    except BotoCoreError as err:
        from gpudesk.services.storage.errors import MSG_UNREACHABLE

        raise StorageError(MSG_UNREACHABLE, endpoint=target.bucket,
                           reason=type(err).__name__) from None
    remember_copy(dataset.name, target, region, datasets.parse_manifest(
        raw, target, region).manifest_sha256)
    # target: a listing before, one after, a COPY per blob (multipart: its parts count
    # as one, like a push), the manifest's PUT; the source: the manifest's GET
    datasets._note_usage(target, region, stored + len(raw), 2 + len(copy_plan.missing) + 1,
                         0)
    datasets._note_usage(src, dataset.region, None, 0, 1)
    return datasets.parse_manifest(raw, target, region)


# ------------------------------------------------------------------ this computer's memory


@dataclass(frozen=True)
class KnownCopy:
    store: StoreUri
    region: str
    manifest_sha256: str


def _copies_path() -> Path:
    from gpudesk.services.core import paths

    return paths.data_dir() / COPIES_FILE


def remember_copy(name: str, store: StoreUri, region: str, manifest_sha256: str) -> None:
    """Keep dataset ``name``'s copy in ``region`` (``dataset-copies.json``, apart from
    ``datasets.json``, which a push rewrites), with the version copied."""
    path = _copies_path()
    data = read_json_object(path)
    found = data.get(name)
    entry: dict[str, Any] = found if isinstance(found, dict) else {}
    entry[region] = {"store": str(store), "manifest_sha256": manifest_sha256}
    data[name] = entry
    write_json_object(path, data)


def copies_of(name: str) -> dict[str, KnownCopy]:
    """Region -> the copy of dataset ``name`` there that this computer made."""
    raw = read_json_object(_copies_path()).get(name)
    out: dict[str, KnownCopy] = {}
    for region, copy_entry in (raw if isinstance(raw, dict) else {}).items():
        try:
            out[str(region)] = KnownCopy(parse_uri(str(copy_entry["store"])), str(region),
                                         str(copy_entry.get("manifest_sha256", "")))
        except (KeyError, TypeError, ValueError, StorageError):
            continue
    return out


def copy_stores() -> list[tuple[str, str]]:
    """(store URI, region) of every copy this computer made: ``gpudesk data ls`` and the
    Data page list those buckets too."""
    seen: dict[str, str] = {}
    for name in sorted(read_json_object(_copies_path())):
        for known in copies_of(name).values():
            seen.setdefault(str(known.store), known.region)
    return sorted(seen.items())


def for_machine(name: str, store: StoreUri, region: str, machine_cloud: str,
                machine_region: str, dataset: Callable[[], Dataset]) -> tuple[StoreUri, str]:
    """The bucket a machine in ``machine_region`` reads dataset ``name`` from: its own
    (same region, or a machine of another cloud, an own machine), else the copy there that
    this computer made of the version there now (``dataset()`` reads the manifest).
    Without one: refused with the bytes and the price of the copy."""
    if machine_cloud != store.cloud or not machine_region or not region \
            or machine_region == region:
        return store, region
    d = dataset()
    known = copies_of(name).get(machine_region)
    if known is not None and known.manifest_sha256 == d.manifest_sha256:
        return known.store, known.region
    charge = data_costs.copy_charge(store.cloud, region, machine_region)
    raise StorageError(MSG_NEEDS_COPY, name=name, source=str(store), from_region=region,
                       to_region=machine_region, cloud_scheme=store.scheme,
                       size=size_text(d.bytes), cost=cost_words(charge, d.bytes))
