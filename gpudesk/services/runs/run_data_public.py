"""A run's public dataset (issue 32): an https file, a readable bucket prefix, a Hub dataset.

``gpudesk run --data SOURCE[:/path/on/machine]`` with SOURCE one of

- ``https://host/path/file`` - one file (``http://`` only on 127.0.0.1); not unpacked;
- ``s3://bucket/prefix``, ``cos://bucket-appid/prefix``, ``oss://bucket/prefix`` - every
  object under a prefix that allows anonymous reads (``--store-region`` names a COS or
  OSS bucket's region; an S3 bucket's own region is asked of S3, else us-east-1);
- ``hf://datasets/ORG/NAME[@revision]`` or ``hf:ORG/NAME[@revision]`` - a Hugging Face
  dataset (``GPUDESK_HF_ENDPOINT`` or ``HF_ENDPOINT`` names a mirror).

Only the listing is read here (names, sizes, ETags, the Hub's commit: a few KB) to pin the
version the record names (``data["manifest_sha256"]``, the SHA-256 of that listing;
``data["revision"]``, the Hub commit); the bytes go from the source to the machine, whose
agent lists again, refuses a source that changed, and fetches
(``agent/public_data.py``). The user's Hugging Face token (``gpudesk data hf-token``,
kept in the keyring) reaches the machine only as ``<run>/.hf-token``, mode 0600, written
over SSH on stdin just before the start; the agent deletes it before its first request,
and the desktop deletes it when the start fails. It is never in argv, a log or the record.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shlex
import urllib.parse
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.agent import public_data
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.storage.errors import StorageError

if TYPE_CHECKING:
    from gpudesk.services.remote.agent_deploy import AgentSite
    from gpudesk.services.remote.ssh import SshConnection

MSG_SOURCE = QT_TRANSLATE_NOOP(
    "Storage", "The dataset source {source} cannot be read ({why}); the run was not "
    "started.")
MSG_REGION = QT_TRANSLATE_NOOP(
    "Storage", "Give the region of the bucket in {source} with --store-region: a {cloud} "
    "bucket's address names its region.")
MSG_BAD_HF = QT_TRANSLATE_NOOP(
    "Storage", "'{text}' is not a Hugging Face dataset: write hf://datasets/ORG/NAME or "
    "hf:ORG/NAME, optionally with @revision.")
MSG_PUBLIC_FROM = QT_TRANSLATE_NOOP(
    "Runs", "the dataset {name} (version {version}) appears at {path} before the script "
    "starts: {target} fetches it from {source} itself unless it has it already")

PREFIXES = ("https://", "http://", "s3://", "cos://", "oss://", "hf://", "hf:")
HF_ENDPOINT_ENVS = ("GPUDESK_HF_ENDPOINT", "HF_ENDPOINT")
HF_DEFAULT = "https://huggingface.co"
TOKEN_FILE = ".hf-token"
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")  # the Hub's ids


def is_public(spec: str) -> bool:
    """A source the machine fetches itself rather than a pushed dataset's NAME."""
    return spec.strip().lower().startswith(PREFIXES)


def is_public_data(data: dict[str, Any]) -> bool:
    return data.get("kind") in public_data.KINDS


def split_path(spec: str) -> tuple[str, str]:
    """``SOURCE[:/path]`` -> (source, path): the path follows the last ``:/`` that is not
    the scheme's ``://`` (``https://host:8443/f`` has none: a port is no path)."""
    text = spec.strip()
    at = text.rfind(":/")
    if at < 0 or text[at:at + 3] == "://":
        return text, ""
    return text[:at], text[at + 1:]


def _bucket_base(cloud: str, bucket: str, region: str) -> str:
    """The bucket's URL for unsigned requests: virtual-hosted on the cloud's endpoint,
    path-style on an endpoint given by IP or localhost (moto in tests)."""
    from gpudesk.services.storage.clients import endpoint_for

    endpoint = (endpoint_for(cloud, region).url or os.environ.get("AWS_ENDPOINT_URL")
                or f"https://s3.{region}.amazonaws.com")
    parts = urllib.parse.urlsplit(endpoint.rstrip("/"))
    host = parts.hostname or ""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return f"{endpoint.rstrip('/')}/{bucket}/"
    if host == "localhost":
        return f"{endpoint.rstrip('/')}/{bucket}/"
    return f"{parts.scheme}://{bucket}.{parts.netloc}/"


def _aws_region(bucket: str) -> str:
    """An S3 bucket's region, from the ``x-amz-bucket-region`` header S3 sends to an
    anonymous HEAD (a 403 included); us-east-1 where none is said or an endpoint is
    overridden (moto in tests). Not tried against AWS itself in the tests."""
    import urllib.error
    import urllib.request

    from gpudesk.services.storage.clients import ENDPOINT_ENV

    if os.environ.get(ENDPOINT_ENV) or os.environ.get("AWS_ENDPOINT_URL"):
        return "us-east-1"
    req = urllib.request.Request(f"https://{bucket}.s3.amazonaws.com/", method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=20) as reply:  # noqa: S310 - https
            said = reply.headers.get("x-amz-bucket-region")
    except urllib.error.HTTPError as exc:
        said = exc.headers.get("x-amz-bucket-region") if exc.headers else None
    except (OSError, ValueError):
        said = None
    return said or "us-east-1"


def _hf_endpoint() -> str:
    for name in HF_ENDPOINT_ENVS:
        value = os.environ.get(name, "").strip().rstrip("/")
        if value:
            return value
    return HF_DEFAULT


def _hf_repo(text: str) -> tuple[str, str]:
    """``hf://datasets/ORG/NAME[@rev]`` or ``hf:ORG/NAME[@rev]`` -> (ORG/NAME, rev)."""
    body = text[5:] if text.lower().startswith("hf://") else text[3:]
    if text.lower().startswith("hf://"):
        kind, _, body = body.partition("/")
        if kind != "datasets":
            raise StorageError(MSG_BAD_HF, text=text)
    repo, _, rev = body.partition("@")
    repo = repo.strip("/")
    if not _REPO_ID.match(repo):
        raise StorageError(MSG_BAD_HF, text=text)
    return repo, rev or "main"


def _token() -> str:
    from gpudesk.services.cloud.credentials import CredentialError
    from gpudesk.services.cloud.credentials import load_hf_token

    try:
        return load_hf_token()
    except CredentialError:
        return ""  # no keyring here: a public dataset needs no token


def resolve(spec: str, region: str = "", *, token: str | None = None) -> dict[str, str]:
    """The record's ``data`` for a public source: its listing read (blocking), the version
    pinned. Raises StorageError (nothing started, nothing written anywhere)."""
    from gpudesk.services.storage.uri import SCHEMES
    from gpudesk.services.storage.uri import parse_uri

    text, path = split_path(spec)
    scheme = text.split(":", 1)[0].lower()
    data: dict[str, str] = {"path": path, "source": text}
    try:
        if scheme in ("https", "http"):
            found = public_data.listing("url", public_data.check_url(text))
            f = found["files"][0]
            data.update(kind="url", name=str(f["path"]), source_url=text,
                        size=str(f["size"]), etag=str(f.get("tag", "")))
        elif scheme in SCHEMES:
            store = parse_uri(text)
            where = region or (_aws_region(store.bucket) if store.cloud == "aws" else "")
            if not where:
                raise StorageError(MSG_REGION, source=text, cloud=scheme.upper())
            base = _bucket_base(store.cloud, store.bucket, where)
            found = public_data.listing("bucket", base, prefix=store.prefix)
            data.update(kind="bucket", name=text, source_url=base, prefix=store.prefix)
        else:
            repo, rev = _hf_repo(text)
            secret = _token() if token is None else token
            found = public_data.listing("hf", _hf_endpoint(), repo=repo, revision=rev,
                                        token=secret)
            data.update(kind="hf", name=repo, source_url=str(found["source"]["url"]),
                        repo=repo, revision=str(found["source"]["revision"]),
                        uses_token="yes" if secret else "")
    except public_data.SourceError as exc:
        raise StorageError(MSG_SOURCE, source=text, why=str(exc)) from None
    data["manifest_sha256"] = public_data.version(found)
    data["files"] = str(len(found["files"]))
    data["bytes"] = str(sum(int(f["size"]) for f in found["files"]))
    data["uri"] = text
    return data


def token_path(run_dir: str) -> str:
    return f"{run_dir}/{TOKEN_FILE}"


def fetch_argv(conn: SshConnection | None, site: AgentSite, run_dir: str, data: dict[str, str],
               python: str) -> list[str]:
    """The words that run the script under the agent's ``fetch-data`` for a public source;
    a run that uses the Hub token gets it written (0600) for the agent to read and delete."""
    words = [site.python, site.entry, "fetch-data", "--run", run_dir,
             "--sha", data["manifest_sha256"], "--name", data.get("name", ""),
             "--source-kind", data["kind"], "--source", data["source_url"]]
    for key in ("prefix", "repo", "revision", "path"):
        if data.get(key):
            words += [f"--{key}", data[key]]
    if data.get("uses_token") and conn is not None:
        secret = _token()
        if secret:
            from gpudesk.services.runs import run_store

            path = token_path(run_dir)
            run_store.write_secret(conn, path, secret, python)
            words += ["--token-file", path]
    return [*words, "--"]


def forget_token(conn: SshConnection, run_dir: str) -> None:
    """The token file removed after a start that failed (the agent never read it)."""
    with contextlib.suppress(Exception):
        conn.exec(f"rm -f {shlex.quote(token_path(run_dir))}", timeout=20,
                  what="removing the Hugging Face token file")
