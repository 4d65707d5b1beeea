"""Before the training starts: fetch the bucket's latest complete checkpoint to resume from.

``python3 -m gpudesk.agent fetch-resume --run FOLDER [-- COMMAND ...]`` reads the
run's ``store-config.json`` (see ``uploader.py``), the bucket's ``manifest.json``,
and downloads the checkpoint it names as ``latest`` into the run's checkpoint
folder (to a temporary name, checked against the manifest's size and SHA-256, then
renamed), with a ``.json`` sidecar so ``gpudesk.training`` verifies it again on
load. It prints ``GPUDESK_RESUME_FROM=<path>``; given a command, it runs it with
that variable set (``exec``). A bucket it cannot reach, or one with no checkpoint
yet, is said on stderr and the command still runs: the training then resumes from
its newest local checkpoint, as without a bucket.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any
from typing import Dict
from typing import Optional
from typing import Sequence

from .store import Store
from .store import StoreError
from .uploader import MANIFEST
from .uploader import _step
from .uploader import _write_json
from .uploader import finished_checkpoints
from .uploader import load_config
from .wrap_command import exec_command
from .wrap_command import split_command

log = logging.getLogger("gpudesk.agent")
RESUME_ENV = "GPUDESK_RESUME_FROM"  # what gpudesk.training reads (training/env.py)


def _entry(manifest: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    latest = manifest.get("latest")
    for e in manifest.get("checkpoints") or []:
        if isinstance(e, dict) and e.get("name") == latest and e.get("complete") is True:
            return e
    return None


def fetch_latest(folder: Path, store: Optional[Store] = None) -> Optional[Path]:
    """The local path of the bucket's latest complete checkpoint (downloaded when not
    already here); None when the bucket has none, or when this machine holds a newer
    finished checkpoint of its own. Raises StoreError."""
    config, settings = load_config(folder)
    store = store or Store(config)
    raw = store.get_bytes(config.prefix + MANIFEST)
    if raw is None:
        return None
    try:
        manifest = json.loads(raw)
    except ValueError:
        raise StoreError(f"{config.uri}{MANIFEST} is not JSON") from None
    entry = _entry(manifest) if isinstance(manifest, dict) else None
    if entry is None:
        return None
    name = str(entry["name"])
    if "/" in name or name.startswith("."):
        raise StoreError(f"the manifest names an odd checkpoint: {name!r}")
    size, sha = int(entry.get("bytes", -1)), str(entry.get("sha256") or "")
    newest_here = finished_checkpoints(folder / settings.checkpoints)
    if newest_here and newest_here[-1].step > _step(name):
        # this machine trained past the bucket's latest (an upload not yet made): the
        # training resumes from its own newer checkpoint, never from an older one
        log.info("%s is newer than the bucket's %s; resuming from it",
                 newest_here[-1].name, name)
        return None
    dest = folder / settings.checkpoints / name
    sidecar = dest.with_suffix(".json")
    here: Dict[str, Any] = {}
    if sidecar.exists():
        try:
            here = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            here = {}
    if not (dest.exists() and here.get("sha256") == sha and dest.stat().st_size == size):
        store.get_file(config.prefix + "checkpoints/" + name, dest, sha256=sha, size=size)
        step = int(name[len("ckpt-"):-len(".pt")])
        _write_json(sidecar, {"step": step, "file": name, "bytes": size, "sha256": sha,
                              "time": time.time(), "source": config.uri})
    return dest


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_in, command = split_command(argv)
    p = argparse.ArgumentParser(prog="gpudesk-agent fetch-resume")
    p.add_argument("--run", type=Path, required=True, help="the run folder")
    args = p.parse_args(args_in)
    logging.basicConfig(level="INFO", stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    path: Optional[Path] = None
    code = 0
    try:
        path = fetch_latest(args.run)
    except StoreError as exc:
        print(f"gpudesk-agent fetch-resume: {exc}; resuming from local checkpoints",
              file=sys.stderr, flush=True)
        code = 1
    else:
        if path is None:
            print("gpudesk-agent fetch-resume: the bucket has no complete checkpoint yet",
                  file=sys.stderr, flush=True)
    env = dict(os.environ)
    env.pop(RESUME_ENV, None)
    if path is not None:
        env[RESUME_ENV] = str(path.resolve())
        print(f"{RESUME_ENV}={env[RESUME_ENV]}", flush=True)
    exec_command(command, env)
    return code
