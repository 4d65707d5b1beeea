"""A run's bucket, as its machine sees it: the agent's ``store-config.json`` and keys.

At run start the desktop writes ``<run folder>/store-config.json`` (the fields of the
agent's ``StoreConfig`` and uploader ``Settings``, see ``gpudesk/agent/uploader.py``):
cloud, region, bucket, the run's prefix ``<prefix>runs/<id>/``, ``keep`` (Preferences'
checkpoints kept) and either the machine's ``role`` or the path of a short-lived STS
credentials file. No secret is in the config: the STS keys go to
``<root>/store-credentials/<run-id>.json``, mode 600, outside the run folder (``pull``
copies the run folder to the laptop) and through the SSH channel's stdin, never argv.
The credentials file is written first, so the agent never sees a config naming a
missing file. The agent (deployed under the run's root, whose ``runs/`` it watches)
then uploads; a resume on a machine without the run's checkpoints runs the training
under the agent's ``fetch-resume``, which downloads the bucket's latest complete
checkpoint and sets ``GPUDESK_RESUME_FROM``.

Environment overrides for the machine's side (tests point them at 127.0.0.1; a
mirror or a private endpoint may too), per cloud ``AWS``, ``TENCENT``, ``ALIYUN``:
``GPUDESK_STORE_ENDPOINT_<CLOUD>`` (``http://127.0.0.1:PORT``),
``GPUDESK_STORE_PROXY_<CLOUD>``, ``GPUDESK_STORE_ADDRESSING_<CLOUD>`` (``path`` or
``virtual``) and ``GPUDESK_STORE_METADATA_<CLOUD>`` (the metadata service's base URL);
``GPUDESK_STORE_EVERY_S`` sets how often the agent looks for new checkpoints and log
bytes (default 60 s).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.services.core.settings import load_settings
from gpudesk.services.remote import agent_deploy
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.access import TempCredentials
from gpudesk.services.storage.uri import parse_uri

CONFIG_FILE = "store-config.json"  # the agent's uploader.CONFIG_FILE
CREDENTIALS_DIR = "store-credentials"
ENV_PREFIX = "GPUDESK_STORE_"
EVERY_ENV = "GPUDESK_STORE_EVERY_S"
_OVERRIDES = ("endpoint", "proxy", "addressing", "metadata")

# Reads {"files": [{"path", "text", "mode"}]} on stdin; each file goes to a temporary
# name created with its mode (never wider for a moment), then renamed into place.
_WRITER = (
    "import json,os,sys\n"
    "for f in json.load(sys.stdin)['files']:\n"
    "    p=f['path']; m=int(f['mode'])\n"
    "    os.makedirs(os.path.dirname(p),mode=0o700 if m==0o600 else 0o755,exist_ok=True)\n"
    "    t='%s.tmp-%d'%(p,os.getpid())\n"
    "    fd=os.open(t,os.O_WRONLY|os.O_CREAT|os.O_TRUNC,m)\n"
    "    os.fchmod(fd,m)\n"
    "    with os.fdopen(fd,'w') as h:\n"
    "        h.write(f['text']); h.flush(); os.fsync(h.fileno())\n"
    "    os.replace(t,p)\n"
)


class RunStoreError(RuntimeError):
    """Writing the store config on the machine failed (the message holds no secret)."""


@dataclass(frozen=True)
class MachineStore:
    """What was written for one run on one machine (no secret)."""

    uri: str  # the run's folder: s3://bucket/<prefix>runs/<id>/
    config_path: str
    credentials: str  # "role" or "sts"
    credentials_path: str = ""
    expires: datetime | None = None  # "sts": when the keys end


def overrides(cloud: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``GPUDESK_STORE_<FIELD>_<CLOUD>`` overrides that are set."""
    env = os.environ if environ is None else environ
    found = {field: env.get(f"{ENV_PREFIX}{field.upper()}_{cloud.upper()}", "").strip()
             for field in _OVERRIDES}
    return {k: v for k, v in found.items() if v}


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def expiry_text(when: datetime) -> str:
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def credentials_path(run_dir: str, run_id: str) -> str:
    root = run_dir.rsplit("/runs/", 1)[0]
    return f"{root}/{CREDENTIALS_DIR}/{run_id}.json"


def agent_config(access: StoreAccess, run_id: str, *, keep: int, credentials_file: str = "",
                 environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The agent's ``store-config.json`` for ``run_id``: no secret, only where and how."""
    env = os.environ if environ is None else environ
    paths = access.store.run(run_id)
    data: dict[str, Any] = {"cloud": access.store.cloud, "region": access.region,
                            "bucket": access.store.bucket, "prefix": paths.root,
                            "run_id": run_id, "keep": max(1, int(keep))}
    if access.role:
        data["role"] = access.role
    else:
        data["credentials_file"] = credentials_file
    data.update(overrides(access.store.cloud, env))
    every = env.get(EVERY_ENV, "").strip()
    if every:
        data["interval_s"] = data["log_every_s"] = float(every)
    return data


def write_config(conn: SshConnection, run_dir: str, run_id: str, access: StoreAccess, *,
                 python: str = agent_deploy.DEFAULT_PYTHON, keep: int | None = None,
                 timeout: float = 60.0) -> MachineStore:
    """Write the run's store config (and, for STS, its mode-600 keys) on the machine."""
    if access.kind == "none":
        raise ValueError("a StoreAccess of kind 'none' gives the machine no way in")
    keep = load_settings().store_keep_checkpoints if keep is None else keep
    files: list[dict[str, Any]] = []
    creds_path = ""
    if access.kind == "sts":
        assert access.sts is not None
        creds_path = credentials_path(run_dir, run_id)
        files.append({"path": creds_path, "mode": 0o600, "text": _keys_text(access.sts)})
    config = agent_config(access, run_id, keep=keep, credentials_file=creds_path)
    config_path = f"{run_dir}/{CONFIG_FILE}"
    files.append({"path": config_path, "mode": 0o644,
                  "text": json.dumps(config, indent=1) + "\n"})
    _write(conn, files, timeout, python, config_path)
    return MachineStore(access.store.run(run_id).uri, config_path, access.kind, creds_path,
                        access.sts.expires if access.sts is not None else None)


def write_credentials(conn: SshConnection, run_dir: str, run_id: str, keys: TempCredentials, *,
                      python: str = agent_deploy.DEFAULT_PYTHON, timeout: float = 60.0) -> str:
    """Replace the run's short-lived keys on the machine (mode 600, through stdin); the
    agent re-reads the file when it changes, without restarting the upload."""
    path = credentials_path(run_dir, run_id)
    _write(conn, [{"path": path, "mode": 0o600, "text": _keys_text(keys)}], timeout,
           python, path)
    return path


def _keys_text(keys: TempCredentials) -> str:
    return json.dumps({"key_id": keys.key_id, "secret": keys.secret, "token": keys.token,
                       "expiration": expiry_text(keys.expires)})


def write_secret(conn: SshConnection, path: str, text: str, python: str, *,
                 timeout: float = 60.0) -> None:
    """One mode-600 file (a Hub token for ``fetch-data``), sent on stdin, never in argv."""
    _write(conn, [{"path": path, "mode": 0o600, "text": text}], timeout, python, path)


def _write(conn: SshConnection, files: list[dict[str, Any]], timeout: float, python: str,
           what_path: str) -> None:
    command = f"exec {shlex.quote(python)} -I -S -c {shlex.quote(_WRITER)}"
    result = conn.exec(command, input=json.dumps({"files": files}).encode(), timeout=timeout,
                       what="writing the run's store config")
    if not result.ok:
        detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()[-300:]
        raise RunStoreError(f"could not write {what_path} on {conn.target}: "
                            f"{detail or f'exit status {result.exit_status}'}")


def ensure_agent(conn: SshConnection, root: str, python: str) -> agent_deploy.AgentSite:
    """The agent running under ``root`` (it watches ``<root>/runs``); its rules are kept."""
    return agent_deploy.deploy(conn, None, root=root, python=python)


def fetch_resume_argv(site: agent_deploy.AgentSite, run_dir: str, argv: list[str]
                      ) -> list[str]:
    """``argv`` run under the agent's ``fetch-resume`` (same pid: it ``exec``s)."""
    return [site.python, site.entry, "fetch-resume", "--run", run_dir, "--", *argv]


def reuse_access(store_uri: str, region: str, run_id: str, role: str) -> StoreAccess | None:
    """The access a run had, when it needs no new secret: the same role (a machine
    gpudesk launches carries it). Short-lived keys cannot be reused; None then."""
    if not store_uri or not role:
        return None
    return StoreAccess(store=parse_uri(store_uri), region=region, run_id=run_id, role=role)
