"""What a keep-alive group's fresh machine needs to start the run, written to the bucket.

At a keep-alive launch (``gpudesk launch … --spot --keep-alive``) the desktop
writes into the run's folder ``<prefix>runs/<run-id>/``:

* ``code/project.tar.gz``: the project as a push sends it (``sync_scan``: the
  ``.gitignore`` files honoured, ``.git`` left out), files only;
* ``boot/agent.tar.gz``: ``gpudesk/agent`` (the full agent and
  ``replacement.py``), ``gpudesk/training`` (the run's library) and the run
  launcher script, all stdlib: the machine needs only Python and torch. The
  first-boot script's fetch step checks it against the SHA-256 in the user data
  (``first_boot.KeepAlive``);
* ``run.json`` last (it names the code by key, SHA-256 and size), in the shared
  format: run, project folder name, script, args, nproc, amp, checkpoint_every
  (minutes), python, code, group and budget.

From then on no desktop is needed: each machine the group starts resumes the run
from these and the bucket's latest checkpoint (``gpudesk/agent/replacement.py``).
Blocking (boto3): the window calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import io
import json
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from typing import Any

from gpudesk.agent.bucket_spend import RunBudget
from gpudesk.agent.group_end import GroupRef
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.remote import sync_scan
from gpudesk.services.remote.agent_deploy import UNIT
from gpudesk.services.remote.agent_deploy import unit_template
from gpudesk.services.remote.first_boot import KEEP_ALIVE_AGENT
from gpudesk.services.remote.first_boot import KeepAlive
from gpudesk.services.runs.detached import DEFAULT_PYTHON
from gpudesk.services.runs.detached import RunRequest
from gpudesk.services.runs.detached import project_folder_name
from gpudesk.services.runs.detached import script_in_project
from gpudesk.services.runs.shipped_source import launcher_source
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.clients import make_client

CODE_KEY = "code/project.tar.gz"
RUN_JSON = "run.json"
_LIB_INIT = '"""gpudesk.training and the agent, shipped by gpudesk to run on this machine."""\n'
LAUNCHER = "run_launcher_script.py"  # beside gpudesk/ in the agent bundle (replacement.py)


@dataclass(frozen=True)
class Blob:
    """One object written: its key, SHA-256 and size."""

    key: str
    sha256: str
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "sha256": self.sha256, "bytes": self.bytes}


@dataclass(frozen=True)
class RunPackage:
    """What was written for one run (no secret)."""

    access: StoreAccess
    code: Blob
    agent: Blob
    run_json: dict[str, Any]

    @property
    def prefix(self) -> str:
        return self.access.store.run(self.access.run_id).root

    def keep_alive(self, role: str = "") -> KeepAlive:
        """The first-boot step of the group's machines: this bundle, read with ``role``."""
        return KeepAlive(self.access.store.cloud, self.access.region, self.access.store.bucket,
                         self.prefix, role or self.access.role, self.agent.sha256)


# --------------------------------------------------------------------------- archives

def _tar_gz(out: IO[bytes]) -> tarfile.TarFile:
    # gzip's header time fixed: the same files give the same bytes (and SHA-256)
    zipped = gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6)
    return tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def write_project_archive(project: Path, out: IO[bytes]) -> int:
    """The project as a push sends it, as tar.gz into ``out``; returns the file count."""
    plan = sync_scan.scan(Path(project))
    zipped = gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6)
    with zipped, tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in plan.files:
            with open(Path(project) / entry.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                info = tarfile.TarInfo(entry.path)
                info.size, info.mode = st.st_size, entry.mode & 0o777 or 0o644
                info.mtime = int(st.st_mtime)
                tar.addfile(info, fh)
    return len(plan.files)


def agent_archive() -> bytes:
    """``gpudesk/{agent,training}`` (``.py``), the unit's template and the run launcher, as
    a deterministic tar.gz (unpacked by the fetch step into ``<root>/agent/boot``)."""
    raw = io.BytesIO()
    zipped = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9)
    with zipped, tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, "gpudesk/__init__.py", _LIB_INIT.encode())
        for package in ("agent", "training"):
            files = importlib.resources.files(f"gpudesk.{package}")
            for item in sorted(files.iterdir(), key=lambda i: i.name):
                if item.name.endswith(".py"):
                    _add_bytes(tar, f"gpudesk/{package}/{item.name}", item.read_bytes())
        _add_bytes(tar, f"gpudesk/agent/{UNIT}.in", unit_template().encode())
        _add_bytes(tar, LAUNCHER, launcher_source().encode("utf-8"))
    return raw.getvalue()


def _digest(fh: IO[bytes]) -> tuple[str, int]:
    fh.seek(0)
    digest, size = hashlib.sha256(), 0
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        digest.update(chunk)
        size += len(chunk)
    fh.seek(0)
    return digest.hexdigest(), size


# --------------------------------------------------------------------------- the package

def run_document(request: RunRequest, run_id: str, code: Blob, *, agent: Blob,
                 group: GroupRef | None, budget: RunBudget | None,
                 keep: int) -> dict[str, Any]:
    """``run.json`` (the shared format; ``agent`` and ``keep`` added for the machine)."""
    project = Path(request.project)
    every = request.checkpoint_every_min
    return {
        "run": run_id, "project": project_folder_name(project),
        "script": script_in_project(project, request.script), "args": list(request.args),
        "nproc": request.nproc, "amp": request.amp,
        "checkpoint_every": (int(every) if every is not None and float(every).is_integer()
                             else every),
        "python": request.python or DEFAULT_PYTHON, "code": code.to_json(),
        "agent": agent.to_json(), "keep": max(1, int(keep)),
        "group": None if group is None else group.to_dict(),
        "budget": None if budget is None else budget.to_dict(),
        # the dataset a replacement fetches before the run starts (issue 32)
        **({"data": dict(request.data)} if request.data else {})}


def write_package(access: StoreAccess, request: RunRequest, *, client: Any = None,
                  credentials: Credentials | None = None, group: GroupRef | None = None,
                  budget: RunBudget | None = None, keep: int = 3) -> RunPackage:
    """Write code, agent bundle and (last) run.json into ``access``'s run folder.

    ``client``: a boto3 S3 client (``storage.clients.make_client``); made here from
    ``credentials`` when not given. The run id is ``access.run_id``.
    """
    if client is None:
        if credentials is None:
            raise ValueError("write_package needs a client or credentials")
        client = make_client(access.store.cloud, access.region, credentials)
    paths = access.store.run(access.run_id)
    bucket = access.store.bucket
    with tempfile.TemporaryFile() as fh:
        write_project_archive(Path(request.project), fh)
        sha, size = _digest(fh)
        code = Blob(paths.root + CODE_KEY, sha, size)
        client.put_object(Bucket=bucket, Key=code.key, Body=fh, ContentLength=size,
                          ContentType="application/gzip", Metadata={"sha256": sha})
    data = agent_archive()
    agent = Blob(paths.root + KEEP_ALIVE_AGENT, hashlib.sha256(data).hexdigest(), len(data))
    client.put_object(Bucket=bucket, Key=agent.key, Body=data, ContentType="application/gzip",
                      Metadata={"sha256": agent.sha256})
    document = run_document(request, access.run_id, code, agent=agent, group=group,
                            budget=budget, keep=keep)
    client.put_object(Bucket=bucket, Key=paths.root + RUN_JSON,
                      Body=(json.dumps(document, indent=1) + "\n").encode(),
                      ContentType="application/json")
    return RunPackage(access, code, agent, document)
