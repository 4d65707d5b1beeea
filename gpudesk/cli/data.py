"""CLI verb ``data``: datasets pushed once to a bucket, fetched by every machine (issue 32).

``gpudesk data push DIR NAME [--store URI] [--region R]`` uploads a folder (files already
in the bucket, by content hash, are not sent again; the manifest last; Ctrl-C cancels and
lists nothing); ``gpudesk data ls [--store URI] [--json]`` lists complete datasets with
size, files, region, source and storage a month (copies made here too); ``gpudesk
data rm NAME [--yes]`` asks first; ``gpudesk data copy NAME --to URI [--yes]`` copies
one into another region, its cost said first. A run reads one with ``gpudesk run --data
NAME[:/path]`` (``services.runs.run_data``).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gpudesk.services.core.sizes import size_text

VERBS = frozenset({"data"})
SHOW_EVERY_S = 0.5


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _client_for(a: argparse.Namespace, name: str = "") -> tuple[Any, Any, str]:
    """(client, store, region): --store, else where ``name`` was pushed from here."""
    from gpudesk.services.storage import dataset_registry
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.store_check import check_store
    from gpudesk.services.storage.uri import parse_uri

    if a.store:
        store, region = parse_uri(a.store), a.region
    elif name:
        store, region = datasets.find(name)
    else:
        stores = {s for s, _ in dataset_registry.known().values()}
        if len(stores) != 1:
            from gpudesk.services.storage.errors import StorageError

            raise StorageError(datasets.MSG_NO_STORE)
        store, region = parse_uri(stores.pop()), ""
        region = next(r for s, r in dataset_registry.known().values() if s == str(store))
    # a missing bucket, or one that refuses the keys: said before anything is sent
    region = check_store(store, region)
    return account_client(store.cloud, region), store, region


def _progress_printer() -> Any:
    last = [0.0]

    def show(p: Any) -> None:
        now = time.monotonic()
        if now - last[0] < SHOW_EVERY_S and p.done < p.total:
            return
        last[0] = now
        left = p.left_s(now)
        left_text = f", {left:.0f} s left" if left is not None and p.done < p.total else ""
        _say(f"  {size_text(p.done)} of {size_text(p.total)} sent "
             f"({p.files_sent} files, {size_text(int(p.speed(now)))}/s{left_text}); "
             f"{p.files_skipped} files already in the bucket")
    return show


def _cmd_push(a: argparse.Namespace) -> int:
    from gpudesk.services.storage import dataset_registry
    from gpudesk.services.storage import datasets

    folder = Path(a.dir)
    datasets.check_name(a.name)
    if not folder.is_dir():  # said before any bucket is asked
        from gpudesk.services.storage.errors import StorageError

        raise StorageError(datasets.MSG_NO_FOLDER, path=str(folder))
    client, store, region = _client_for(a, a.name if a.name in dataset_registry.known() else "")
    cancel = threading.Event()
    try:
        dataset = datasets.push(client, store, region, folder, a.name,
                                progress=_progress_printer(), cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        _say(f"gpudesk: the push of {a.name} was cancelled; nothing is listed as a dataset")
        return 130
    if a.json:
        print(json.dumps(dataset.as_json(), indent=2))
    else:
        print(f"{dataset.name}: {len(dataset.files)} files, {size_text(dataset.bytes)} in "
              f"{store}data/sets/{dataset.name}/ ({region}), version "
              f"{dataset.manifest_sha256[:12]}")
    return 0


def _cmd_ls(a: argparse.Namespace) -> int:
    from gpudesk.services.storage import data_costs
    from gpudesk.services.storage import dataset_registry
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.uri import parse_uri

    found: list[Any] = []
    if a.store:
        client, store, region = _client_for(a)
        found = datasets.list_store(client, store, region)
    else:
        seen: set[str] = set()
        from gpudesk.services.storage.dataset_copy import copy_stores

        for uri, region in sorted(set(dataset_registry.known().values())) + copy_stores():
            if uri in seen:
                continue
            seen.add(uri)
            store = parse_uri(uri)
            found += datasets.list_store(account_client(store.cloud, region), store, region)
    # what keeping each costs a month, from the cached price list (as the Data page)
    months = [data_costs.storage_per_month(d) for d in found]
    if a.json:
        print(json.dumps([{**d.as_json(), "storage_per_month": m.as_json()}
                          for d, m in zip(found, months, strict=True)], indent=2))
        return 0
    if not found:
        print("no datasets")
        return 0
    print(f"{'NAME':<24} {'SIZE':>10} {'FILES':>13}  {'REGION':<14} {'STORAGE A MONTH':>16}  "
          "SOURCE")
    for d, m in zip(found, months, strict=True):
        print(f"{d.name:<24} {size_text(d.bytes):>10} {len(d.files):>7} files  "
              f"{d.region:<14} {m.cell():>16}  {d.source}")
    print("Storage a month:")
    for d, m in zip(found, months, strict=True):
        print(f"  {d.name}: {m.words}")
    return 0


def _cmd_rm(a: argparse.Namespace) -> int:
    from gpudesk.services.storage import datasets

    client, store, region = _client_for(a, a.name)
    dataset = datasets.load(client, store, region, a.name)
    if not a.yes:
        answer = input(f"Remove dataset {a.name} ({len(dataset.files)} files, "
                       f"{size_text(dataset.bytes)}) from {store}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            _say("nothing removed")
            return 1
    gone = datasets.remove(client, dataset)
    print(f"removed {a.name} ({gone} stored files no dataset uses any more)")
    return 0


def _cmd_copy(a: argparse.Namespace) -> int:
    """Copy a dataset bucket-to-bucket into another region: the bytes and their data-out
    price said first, then asked (``--yes`` answers), the manifest last."""
    from gpudesk.services.core.said import Said
    from gpudesk.services.storage import dataset_copy
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage.clients import account_client

    client, store, region = _client_for(a, a.name)
    dataset = datasets.load(client, store, region, a.name)
    # shared with the Data page: route, target bucket, price, plan
    plan, target_client = dataset_copy.prepare(dataset, a.to, a.to_region, account_client)
    print(plan.words())
    if plan.missing and not a.yes:
        answer = input(f"{plan.question()} [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            _say(Said("Storage", dataset_copy.MSG_NOT_CONFIRMED, name=a.name))
            return 1

    def show(done: int, total: int) -> None:
        if total:
            _say(f"  {size_text(done)} of {size_text(total)} copied")

    copied = dataset_copy.copy(client, target_client, plan, confirmed=True, progress=show)
    print(dataset_copy.copied_words(copied, plan.target, plan.target_region))
    return 0


def _cmd_hf_token(a: argparse.Namespace) -> int:
    """``gpudesk data hf-token``: the token from stdin (hidden at a terminal) to the
    keyring; ``--forget`` removes it. ``gpudesk run --data hf:ORG/NAME`` uses it."""
    from gpudesk.services.cloud import credentials

    if a.forget:
        credentials.delete_hf_token()
        print("the Hugging Face token was removed from the keyring")
        return 0
    if sys.stdin.isatty():
        import getpass

        token = getpass.getpass("Hugging Face token (hidden): ")
    else:
        token = sys.stdin.readline()
    credentials.save_hf_token(token)
    print("the Hugging Face token is in the keyring; runs reading a Hub dataset pass it to "
          "the machine as a short-lived file")
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("data", help="datasets: push a folder once, every machine fetches it")
    verbs = p.add_subparsers(dest="data_verb", required=True)
    push = verbs.add_parser("push", help="upload a folder as a named dataset")
    push.add_argument("dir", metavar="DIR")
    push.add_argument("name", metavar="NAME")
    ls = verbs.add_parser("ls", help="list datasets with size, files, region and source")
    rm = verbs.add_parser("rm", help="remove a dataset (asks first)")
    rm.add_argument("name", metavar="NAME")
    rm.add_argument("--yes", action="store_true", help="do not ask")
    cp = verbs.add_parser("copy", help="copy a dataset bucket-to-bucket into another "
                          "region (says the data-out cost first, then asks)")
    cp.add_argument("name", metavar="NAME")
    cp.add_argument("--to", required=True, metavar="URI",
                    help="the bucket/prefix in the other region (s3://bucket/prefix)")
    cp.add_argument("--to-region", default="", metavar="REGION",
                    help="that bucket's region (COS, OSS; AWS's answer says it)")
    cp.add_argument("--yes", action="store_true", help="do not ask")
    for q in (push, ls, rm, cp):
        q.add_argument("--store", default="", metavar="URI",
                       help="s3://, cos:// or oss:// bucket/prefix (default: where the "
                       "dataset was pushed from here)")
        q.add_argument("--region", default="", help="the bucket's region (COS, OSS)")
    for q in (push, ls):
        q.add_argument("--json", action="store_true")
    hf = verbs.add_parser("hf-token", help="keep a Hugging Face token in the keyring for "
                          "gated datasets (read from stdin; a run passes it to the machine "
                          "as a short-lived file, never on a command line)")
    hf.add_argument("--forget", action="store_true", help="remove the saved token")
    hf.set_defaults(func=_cmd_hf_token)
    push.set_defaults(func=_cmd_push)
    ls.set_defaults(func=_cmd_ls)
    rm.set_defaults(func=_cmd_rm)
    cp.set_defaults(func=_cmd_copy)


def handle_error(err: BaseException) -> int | None:
    """Storage errors are printed by the ``outputs`` verb's handler."""
    del err
    return None
