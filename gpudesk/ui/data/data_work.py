"""The Data page's blocking work (boto3), run on a worker thread: which buckets to list,
listing them, pushing a folder and removing a dataset, as ``gpudesk data`` does.

No widget is touched here; the page shows the results back on the GUI thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.services.storage import dataset_registry
from gpudesk.services.storage import datasets

if TYPE_CHECKING:
    from gpudesk.services.money.ledger import Ledger

ClientFor = Callable[[str, str], Any]  # (cloud, region) -> an S3-compatible client


def account_client(cloud: str, region: str) -> Any:
    """The account's own keys from the keyring (the page's default; tests give theirs)."""
    from gpudesk.services.storage.clients import account_client as make

    return make(cloud, region)


def known_stores(ledger: Ledger | None) -> list[tuple[str, str]]:
    """(store URI, region) for the buckets datasets were pushed to, copied to or used from
    here, then those that machine profiles name (a URI, not "auto" or "none"), each once."""
    from gpudesk.services.storage.dataset_copy import copy_stores

    seen: dict[str, str] = {}
    for uri, region in sorted(set(dataset_registry.known().values())) + copy_stores():
        seen.setdefault(uri, region)
    if ledger is not None:
        from gpudesk.services.storage.uri import parse_uri

        for m in ledger.machines(include_ended=False):
            if "://" in m.store:
                try:
                    uri = str(parse_uri(m.store))
                except ValueError:
                    continue
                seen.setdefault(uri, m.store_region)
    return list(seen.items())


def list_stores(stores: list[tuple[str, str]], client_for: ClientFor
                ) -> tuple[list[datasets.Dataset], list[tuple[str, Exception]]]:
    """Every complete dataset in ``stores``, and (store, error) for each store that could
    not be listed (the others are still listed). A store without a region is asked for it
    first (the same check as a push: a bucket that refuses the keys says so)."""
    from gpudesk.services.storage.store_check import check_store
    from gpudesk.services.storage.uri import parse_uri

    found: list[datasets.Dataset] = []
    failed: list[tuple[str, Exception]] = []
    for uri, region in stores:
        try:
            store = parse_uri(uri)
            where = region or check_store(store, region)
            found += datasets.list_store(client_for(store.cloud, where), store, where)
        except Exception as exc:  # noqa: BLE001 - said per bucket, the others still listed
            failed.append((uri, exc))
    return sorted(found, key=lambda d: (d.name, str(d.store))), failed


@dataclass(frozen=True)
class Shown:
    """A push's progress as the page shows it (read on the push's thread)."""

    total: int
    done: int
    files_sent: int
    files_skipped: int
    speed: float  # bytes per second
    left_s: float | None


def shown(p: datasets.Progress) -> Shown:
    now = time.monotonic()
    return Shown(p.total, p.done, p.files_sent, p.files_skipped, p.speed(now), p.left_s(now))


def push(client_for: ClientFor, uri: str, region: str, folder: Path, name: str,
         progress: Callable[[Shown], None], cancel: threading.Event
         ) -> tuple[datasets.Dataset, str]:
    """The bucket checked (one HeadBucket, as ``gpudesk data push``) before anything is
    sent, then the push. Returns the dataset and the bucket's region."""
    from gpudesk.services.storage.store_check import check_store
    from gpudesk.services.storage.uri import parse_uri

    store = parse_uri(uri)
    where = check_store(store, region)
    dataset = datasets.push(client_for(store.cloud, where), store, where, folder, name,
                            progress=lambda p: progress(shown(p)), cancel=cancel)
    return dataset, where


def remove(client_for: ClientFor, dataset: datasets.Dataset) -> int:
    """The number of stored files no dataset uses any more, now removed."""
    return datasets.remove(client_for(dataset.store.cloud, dataset.region), dataset)
