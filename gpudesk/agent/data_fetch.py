"""Before the training starts: the run's dataset, from the bucket onto this machine's disk.

``python3 -m gpudesk.agent fetch-data --run FOLDER --key MANIFEST_KEY --sha SHA256
[--path /where] [-- COMMAND ...]`` reads the run's ``store-config.json`` (its bucket and
short-lived keys, see ``uploader.py``), downloads the dataset's manifest and checks it
against ``SHA256`` (the version the run's record names), then fetches every file with
parallel ranged GETs into ``<root>/data-cache/<SHA256>.part/``, checks each file's size
and SHA-256, and renames the folder to ``<root>/data-cache/<SHA256>/``: a dataset is
only ever seen whole, and a second run on this machine (or a fetch cut short and
started again) fetches nothing it already has. ``--path`` makes a link there to the
cached folder. It prints ``GPUDESK_DATA_DIR=<path>`` and, given a command, runs it with
that variable set (``exec``). A fetch that fails ends with status 3 and the command is
not run: the script would start without its data.

Layout of the bucket (services/storage/datasets.py): ``<prefix>data/blobs/<sha256>``.

A public source instead (``--source-kind url|bucket|hf --source URL [--prefix P]
[--repo ORG/NAME --revision COMMIT] [--token-file F]``, ``public_data.py``) needs no
bucket: its listing is read again here and its version checked against ``SHA256``, the
files come from the source itself into the same cache. ``--token-file`` (a Hub token,
mode 0600) is read and deleted before the first request; the token is never an argument.

Each fetch from the run's bucket is noted in ``<run>/data-fetch.json`` (its id, the
dataset, its version, the bytes fetched this time: 0 when the cache had it), which the
desktop reads with the run's status to put the download in the month's spend (issue 32).
A public source is not the user's bucket, so it is not noted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

from . import public_data
from .file_parts import At
from .file_parts import sha256_file
from .store import Store
from .store import StoreError
from .uploader import load_config
from .wrap_command import exec_command
from .wrap_command import split_command

DATA_ENV = "GPUDESK_DATA_DIR"  # what the training script reads
CACHE = "data-cache"
RANGE = 8 * 1024 * 1024  # bytes per ranged GET
WORKERS = 16
CHUNK = 1024 * 1024
FAILED = 3
FETCH_NOTE = "data-fetch.json"  # what this run fetched from its bucket (the desktop reads it)


def blob_key(manifest_key: str, sha: str) -> str:
    """``<prefix>data/sets/<name>/manifest.json`` -> ``<prefix>data/blobs/<sha>``."""
    base = manifest_key.rsplit("data/sets/", 1)[0]
    return f"{base}data/blobs/{sha}"


def cache_root(run_dir: Path) -> Path:
    text = str(run_dir.resolve())
    root = text.rsplit("/runs/", 1)[0] if "/runs/" in text else str(run_dir.parent)
    return Path(root) / CACHE


def fetch(store: Store, manifest_key: str, sha: str, cache: Path, *,
          workers: int = WORKERS, range_size: int = RANGE) -> Tuple[Path, int, int]:
    """(the dataset's folder, files fetched, bytes fetched); nothing fetched when the
    cache already holds the version ``sha``. Raises StoreError."""
    done = cache / sha
    if (done / ".gpudesk-manifest.json").is_file():
        return done, 0, 0
    raw = store.get_bytes(manifest_key)
    if raw is None:
        raise StoreError(f"the dataset's manifest {manifest_key} is not in the bucket")
    if hashlib.sha256(raw).hexdigest() != sha:
        raise StoreError(f"{manifest_key} is another version than the run names "
                         f"({sha[:12]}); push it again or start the run again")
    manifest = json.loads(raw)
    files: List[Dict[str, Any]] = list(manifest.get("files") or [])
    part = cache / (sha + ".part")
    part.mkdir(parents=True, exist_ok=True)
    tasks: List[Tuple[Dict[str, Any], Path, int, int]] = []
    wanted: List[Tuple[Dict[str, Any], Path]] = []
    for f in files:
        rel = str(f["path"])
        if rel.startswith("/") or ".." in rel.split("/"):
            raise StoreError(f"the manifest names a path outside the dataset: {rel}")
        dest = part / rel
        size = int(f["size"])
        if dest.is_file() and dest.stat().st_size == size and \
                sha256_file(dest) == f["sha256"]:
            continue  # a fetch cut short already brought it
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as fh:
            fh.truncate(size)
        wanted.append((f, dest))
        for start in range(0, max(size, 1), range_size):
            tasks.append((f, dest, start, min(size, start + range_size) - 1))
    need = sum(int(f["size"]) for f, _ in wanted)
    free = shutil.disk_usage(str(part)).free
    if need > free:  # refused before a byte is fetched: the script would fail half-way
        raise StoreError(f"the dataset needs {need} bytes more on this machine's disk, but "
                         f"{part.parent} has {free} bytes free; give the machine a larger "
                         "disk or free space there")
    fetched = [0]
    lock = threading.Lock()

    def get(task: Tuple[Dict[str, Any], Path, int, int]) -> None:
        f, dest, first, last = task
        if last < first:
            return  # an empty file
        key = blob_key(manifest_key, str(f["sha256"]))
        fd = os.open(str(dest), os.O_WRONLY)
        try:
            out = At(fd, first)
            store.request("GET", key, headers={"range": f"bytes={first}-{last}"},
                          out=out)  # type: ignore[arg-type]  # only .write() is used
            if out.written != last - first + 1:
                raise StoreError(f"{key} bytes {first}-{last} came with {out.written} bytes")
        finally:
            os.close(fd)
        with lock:
            fetched[0] += out.written

    def check(item: Tuple[Dict[str, Any], Path]) -> None:
        f, dest = item
        if dest.stat().st_size != int(f["size"]) or sha256_file(dest) != f["sha256"]:
            raise StoreError(f"{f['path']} differs from its SHA-256 in the manifest")

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(get, tasks))
        list(pool.map(check, wanted))  # hashlib lets go of the GIL: checked in parallel
    (part / ".gpudesk-manifest.json").write_bytes(raw)
    if done.exists():
        shutil.rmtree(done)
    os.replace(part, done)
    return done, len(wanted), fetched[0]


def note_fetch(run_dir: Path, dataset: str, sha: str, n_bytes: int, files: int) -> None:
    """Add this fetch to the run's ``data-fetch.json`` (written whole, then renamed): the
    desktop counts each id once. A note that cannot be written never stops the run."""
    path = Path(run_dir) / FETCH_NOTE
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get("fetches") or []
    except (OSError, ValueError, AttributeError):
        rows = []
    rows.append({"id": uuid.uuid4().hex, "dataset": dataset, "sha": sha,
                 "bytes": int(n_bytes), "files": int(files), "at": time.time()})
    tmp = path.with_name(f".{FETCH_NOTE}.tmp-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"version": 1, "fetches": rows}) + "\n", encoding="utf-8")
        os.replace(str(tmp), str(path))
    except OSError as exc:
        print(f"gpudesk-agent fetch-data: cannot note the fetch in {path}: {exc}",
              file=sys.stderr, flush=True)


def link(target: Path, where: Path) -> Path:
    """``where`` made a link to ``target`` (a link already there is replaced)."""
    if where.is_symlink() or not where.exists():
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_name(f".{where.name}.link-{os.getpid()}")
        os.symlink(str(target), str(tmp))
        os.replace(str(tmp), str(where))
        return where
    raise StoreError(f"{where} exists and is not a link gpudesk made; give another path")


def _fetch_public(args: argparse.Namespace, token: str) -> Tuple[Path, int, int]:
    """A public source: listed again here, its version checked against the one the run
    names (``--sha``), then fetched (``public_data``). A machine whose cache holds that
    version asks the source nothing: the version is the cache's key."""
    cached = cache_root(args.run) / args.sha
    if (cached / public_data.MARKER).is_file():
        return cached, 0, 0
    found = public_data.listing(args.source_kind, args.source, prefix=args.prefix,
                                repo=args.repo, revision=args.revision, token=token)
    now = public_data.version(found)
    if now != args.sha:
        raise public_data.SourceError(
            f"{args.source} changed since the run started: it is version {now[:12]} now, "
            f"the run names {args.sha[:12]}; start the run again to use what is there now")
    return public_data.fetch(found, cache_root(args.run), token=token)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_in, command = split_command(argv)
    p = argparse.ArgumentParser(prog="gpudesk-agent fetch-data")
    p.add_argument("--run", type=Path, required=True, help="the run folder")
    p.add_argument("--key", default="", help="the dataset manifest's key in the bucket")
    p.add_argument("--sha", required=True, help="the manifest's SHA-256 the run names "
                   "(for a public source: its listing's version)")
    p.add_argument("--path", default="", help="where the dataset appears (a link)")
    p.add_argument("--name", default="", help="the dataset's name, for the log")
    # a public source (public_data.py), fetched without the run's bucket
    p.add_argument("--source-kind", default="", choices=("", *public_data.KINDS))
    p.add_argument("--source", default="", help="the file's, bucket's or Hub's URL")
    p.add_argument("--prefix", default="", help="the bucket's key prefix")
    p.add_argument("--repo", default="", help="the Hub's ORG/NAME")
    p.add_argument("--revision", default="", help="the Hub commit the run names")
    p.add_argument("--token-file", default="", help="a short-lived file holding the Hub "
                   "token, deleted once read")
    args = p.parse_args(args_in)
    name = args.name or args.key or args.source
    started = time.monotonic()
    token = public_data.read_token(args.token_file)  # gone from the disk before any request
    try:
        if args.source_kind:
            folder, count, size = _fetch_public(args, token)
        elif not args.key:
            raise ValueError("give --key (a pushed dataset) or --source-kind (a public one)")
        else:
            config, _ = load_config(args.run)
            folder, count, size = fetch(Store(config), args.key, args.sha,
                                        cache_root(args.run))
            note_fetch(args.run, args.name or args.key, args.sha, size, count)
        where = link(folder, Path(args.path)) if args.path else folder
    except (StoreError, public_data.SourceError, OSError, ValueError) as exc:
        print(f"gpudesk-agent fetch-data: dataset {name} could not be fetched: {exc}",
              file=sys.stderr, flush=True)
        return FAILED
    seconds = time.monotonic() - started
    if count:
        frm = "its source" if args.source_kind else "the bucket"
        print(f"gpudesk-agent fetch-data: dataset {name} fetched from {frm}: {count} "
              f"files, {size} bytes in {seconds:.1f} s", file=sys.stderr, flush=True)
    else:
        print(f"gpudesk-agent fetch-data: dataset {name} is already on this machine; "
              "nothing fetched", file=sys.stderr, flush=True)
    env = dict(os.environ)
    env[DATA_ENV] = str(where)
    print(f"{DATA_ENV}={where}", flush=True)
    exec_command(command, env)
    return 0
