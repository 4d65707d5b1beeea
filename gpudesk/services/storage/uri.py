"""Store URIs (``s3://``, ``cos://``, ``oss://``) and the run layout inside a bucket.

The layout is the contract with the agent's uploader (docs/storage.md):
``runs/<id>/manifest.json`` (written last), ``checkpoints/``, ``logs/``, ``outputs/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.storage.errors import StorageError

SCHEMES: dict[str, str] = {"s3": "aws", "cos": "tencent", "oss": "aliyun"}
CLOUD_SCHEMES: dict[str, str] = {cloud: scheme for scheme, cloud in SCHEMES.items()}
RUNS = "runs"

MSG_NOT_URI = QT_TRANSLATE_NOOP(
    "Storage", "'{text}' is not a store address: write s3://bucket/prefix, "
    "cos://bucket-appid/prefix or oss://bucket/prefix.")
MSG_BAD_BUCKET = QT_TRANSLATE_NOOP(
    "Storage", "'{bucket}' is not a valid {cloud} bucket name: {why}")
WHY_LENGTH = QT_TRANSLATE_NOOP(
    "Storage", "it must be {low} to {high} characters long.")
WHY_CHARS = QT_TRANSLATE_NOOP(
    "Storage", "only lowercase letters, digits and hyphens are allowed, and it must start "
    "and end with a letter or digit.")
WHY_APPID = QT_TRANSLATE_NOOP(
    "Storage", "a COS bucket is named <name>-<APPID>, ending in the account's numeric APPID.")
WHY_COS_DOMAIN = QT_TRANSLATE_NOOP(
    "Storage", "with the region its domain name {host} is longer than COS's 60 characters.")
MSG_BAD_RUN = QT_TRANSLATE_NOOP(
    "Storage", "'{run}' is not a run id (letters, digits, '-', '_' and '.' only).")
MSG_BAD_PATH = QT_TRANSLATE_NOOP(
    "Storage", "'{path}' is not a relative path inside the run.")

_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_RUN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
COS_DOMAIN_MAX = 60


@dataclass(frozen=True)
class StoreUri:
    """A bucket and a key prefix on one cloud; ``str()`` gives the URI back."""

    cloud: str  # aws | tencent | aliyun
    bucket: str
    prefix: str = ""  # "" or ends with "/"

    @property
    def scheme(self) -> str:
        return CLOUD_SCHEMES[self.cloud]

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.prefix}"

    def run(self, run_id: str) -> RunPaths:
        check_run_id(run_id)
        return RunPaths(self, f"{self.prefix}{RUNS}/{run_id}/")


@dataclass(frozen=True)
class RunPaths:
    """The keys of one run's folder."""

    store: StoreUri
    root: str  # <prefix>runs/<id>/

    @property
    def manifest(self) -> str:
        return self.root + "manifest.json"

    @property
    def checkpoints(self) -> str:
        return self.root + "checkpoints/"

    @property
    def logs(self) -> str:
        return self.root + "logs/"

    @property
    def outputs(self) -> str:
        return self.root + "outputs/"

    def checkpoint(self, name: str) -> str:
        return self.checkpoints + _relative(name)

    def log(self, name: str) -> str:
        return self.logs + _relative(name)

    def output(self, path: str) -> str:
        return self.outputs + _relative(path)

    @property
    def uri(self) -> str:
        return f"{self.store.scheme}://{self.store.bucket}/{self.root}"


def _relative(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise StorageError(MSG_BAD_PATH, path=path)
    return "/".join(parts)


def check_run_id(run_id: str) -> None:
    if not _RUN.match(run_id) or ".." in run_id:
        raise StorageError(MSG_BAD_RUN, run=run_id)


def parse_uri(text: str) -> StoreUri:
    """``s3://bucket/some/prefix`` → StoreUri; the bucket name is checked per cloud."""
    scheme, sep, rest = text.strip().partition("://")
    cloud = SCHEMES.get(scheme.lower())
    bucket, _, prefix = rest.partition("/")
    if not sep or cloud is None or not bucket:
        raise StorageError(MSG_NOT_URI, text=text)
    check_bucket(cloud, bucket)
    prefix = prefix.strip("/")
    if prefix:
        _relative(prefix)
        prefix += "/"
    return StoreUri(cloud, bucket, prefix)


def check_bucket(cloud: str, bucket: str, *, region: str = "") -> None:
    """The bucket naming rules each cloud documents (URLs in docs/storage.md)."""
    def bad(why: str, **values: object) -> StorageError:
        return StorageError(MSG_BAD_BUCKET, bucket=bucket, cloud=CLOUD_SCHEMES[cloud].upper(),
                            why=why.format(**values))

    if not 3 <= len(bucket) <= 63:
        raise bad(WHY_LENGTH, low=3, high=63)
    if not _NAME.match(bucket):
        raise bad(WHY_CHARS)
    if cloud == "tencent":
        name, _, appid = bucket.rpartition("-")
        if not name or not appid.isdigit():
            raise bad(WHY_APPID)
        if region:
            host = f"{bucket}.cos.{region}.myqcloud.com"
            if len(host) > COS_DOMAIN_MAX:
                raise bad(WHY_COS_DOMAIN, host=host)


def cos_appid(bucket: str) -> str:
    """The APPID a COS bucket name ends with."""
    return bucket.rpartition("-")[2]
