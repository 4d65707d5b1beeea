"""A run's dataset (issue 32): chosen on this computer, fetched by the machine itself.

``gpudesk run --data NAME[:/path/on/machine]`` names a dataset pushed with ``gpudesk data
push``. At run start the desktop reads its manifest with the account's keys and keeps the
manifest's SHA-256 in the run's record (the version the run used); the run's bucket is
the dataset's, so the run's short-lived keys, whose policy also lets them read
``<prefix>data/`` (``storage.sts``), reach it. The first node's script then runs under
the agent's ``fetch-data`` (``agent/data_fetch.py``), which fetches the files from the
bucket in parallel into the machine's cache and sets ``GPUDESK_DATA_DIR``; a recovery
on another machine does the same there, from the bucket alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.said import Said
from gpudesk.services.runs import run_data_public
from gpudesk.services.storage.errors import StorageError

if TYPE_CHECKING:
    from gpudesk.services.remote.agent_deploy import AgentSite
    from gpudesk.services.remote.ssh import SshConnection
    from gpudesk.services.storage.access import StoreAccess

MSG_DATA_NO_KEYS = QT_TRANSLATE_NOOP(
    "Storage", "Run {run} reads the dataset {name} from {uri}, but gets no keys to that "
    "bucket ({why}); it was not started.")
MSG_OTHER_BUCKET = QT_TRANSLATE_NOOP(
    "Storage", "The dataset {name} is in {data}, not in the run's bucket {store}: give "
    "--store {data} (or none) to read it.")
MSG_DATA_FROM_BUCKET = QT_TRANSLATE_NOOP(
    "Runs", "the dataset {name} (version {version}) appears at {path} before the script "
    "starts: {target} fetches it from {uri} unless it has it already")
MSG_NO_QUEUE = QT_TRANSLATE_NOOP(
    "Storage", "A queued run cannot read a dataset yet: start it now, or clear the Data "
    "field.")
CACHE_WORDS = "GPUDESK_DATA_DIR"


def parse_spec(text: str) -> tuple[str, str]:
    """``NAME[:/path/on/machine]`` -> (name, path); a public source's own ``:`` is kept."""
    if run_data_public.is_public(text):
        return run_data_public.split_path(text)
    name, _, path = text.partition(":")
    return name.strip(), path.strip()


def resolve(spec: str, store_text: str = "", region: str = "", *,
            machine: Any = None) -> tuple[dict[str, str], str, str]:
    """The record's ``data`` for ``spec``, the bucket the run must use and its region.
    ``machine`` (a ledger row: ``provider``, ``region``) in another region than the
    dataset reads its copy there, or is refused with the copy's cost
    (``dataset_copy.for_machine``). Reads the manifest with the account's keys
    (blocking); raises StorageError."""
    from gpudesk.services.storage import dataset_registry
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.store_check import check_store
    from gpudesk.services.storage.uri import parse_uri

    if run_data_public.is_public(spec):  # fetched by the machine from its source
        return run_data_public.resolve(spec, region), store_text, region
    name, path = parse_spec(spec)
    datasets.check_name(name)
    if name in dataset_registry.known() or not store_text:
        store, known_region = datasets.find(name)
    else:  # pushed from another computer: the bucket given for the run holds it
        store, known_region = datasets.find(name, store_text, region)
    if machine is not None:  # a dataset in another region: its copy there (issue 32)
        from gpudesk.services.storage import dataset_copy

        home, src = region or known_region or check_store(store, known_region), store
        store, known_region = dataset_copy.for_machine(
            name, src, home, str(getattr(machine, "provider", "")),
            str(getattr(machine, "region", "") or ""),
            lambda: datasets.load(account_client(src.cloud, home), src, home, name))
        region = ""  # the bucket's region is the copy's, or the dataset's own
    if store_text:
        run_store = parse_uri(store_text)
        if (run_store.cloud, run_store.bucket, run_store.prefix) != (
                store.cloud, store.bucket, store.prefix):
            raise StorageError(MSG_OTHER_BUCKET, name=name, data=str(store),
                               store=str(run_store))
    where = region or known_region or check_store(store, known_region)
    dataset = datasets.load(account_client(store.cloud, where), store, where, name)
    data = {"name": name, "manifest_sha256": dataset.manifest_sha256,
            "key": dataset.manifest_key, "path": path, "uri": str(store)}
    return data, str(store), where


class _Target(Protocol):
    target: str


class _Record(Protocol):
    """What of a run record this module reads (``detached.RunRecord``, which imports this
    module: a protocol, not an import, keeps the two apart)."""

    id: str
    data: dict[str, Any]
    store_uri: str

    @property
    def main(self) -> _Target: ...


def fetch_argv(site: AgentSite, run_dir: str, record: _Record,
               report: Callable[[str], None], conn: SshConnection | None = None,
               python: str = "python3") -> list[str]:
    """The words that run the script under the agent's ``fetch-data``; [] without one.
    ``conn``: where a public source's Hub token file is written (``run_data_public``)."""
    data = record.data
    if not data:
        return []
    if run_data_public.is_public_data(data):
        report(Said("Runs", run_data_public.MSG_PUBLIC_FROM, name=data["name"],
                    version=data["manifest_sha256"][:12],
                    path=data.get("path") or CACHE_WORDS, target=record.main.target,
                    source=data.get("source", "")))
        return run_data_public.fetch_argv(conn, site, run_dir, data, python)
    report(Said("Runs", MSG_DATA_FROM_BUCKET, name=data["name"],
                version=data["manifest_sha256"][:12], path=data.get("path") or CACHE_WORDS,
                target=record.main.target, uri=data.get("uri", record.store_uri)))
    words = [site.python, site.entry, "fetch-data", "--run", run_dir, "--key", data["key"],
             "--sha", data["manifest_sha256"], "--name", data["name"]]
    if data.get("path"):
        words += ["--path", data["path"]]
    return [*words, "--"]


def no_keys(record: _Record, store: StoreAccess | None) -> StorageError:
    why = (store.why_none if store is not None else "") or "-"
    return StorageError(MSG_DATA_NO_KEYS, run=record.id, name=record.data.get("name", ""),
                        uri=record.data.get("uri", ""), why=why)


MSG_RUN_DATASET = QT_TRANSLATE_NOOP(
    "Runs", "Data: the dataset {name}, version {version}, from {uri}")


def dataset_line(data: dict[str, Any]) -> Said | None:
    """Which dataset at which version a run used (its record's ``data``), in the same words
    for ``gpudesk outputs RUN`` and the Run page; None for a run without one."""
    if not data or not data.get("name"):
        return None
    where = (str(data.get("source", "")) if run_data_public.is_public_data(data)  # its URL
             else f"{data.get('uri', '')}data/sets/{data['name']}/")
    return Said("Runs", MSG_RUN_DATASET, name=str(data["name"]),
                version=str(data.get("manifest_sha256", ""))[:12], uri=where)
