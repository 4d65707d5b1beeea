"""The account's gpudesk bucket per region: named, created, tagged and given its rules once.

The name is derived from the account and region, so every laptop of one user finds
the same bucket. A name taken by another account gets a short random suffix; the
new name is remembered (``store_buckets.json``) so the next run uses it again.

Expiry is a per-run lifecycle rule set when the run ends: prefix ``runs/<id>/``
with an Expiration *Date* N days later. A bucket-wide ``Days`` rule would count from
each object's upload and could delete a long run's early checkpoints while it still
trains (docs/storage.md).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.files import write_json_object
from gpudesk.services.core.said import Said
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.errors import from_client_error
from gpudesk.services.storage.uri import COS_DOMAIN_MAX
from gpudesk.services.storage.uri import RUNS
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import check_bucket

TAG_KEY, TAG_VALUE = "gpudesk", "1"
MEMORY_FILE = "store_buckets.json"
ABORT_RULE_ID = "gpudesk-abort-incomplete-uploads"
RUN_RULE_PREFIX = "gpudesk-run-"
ABORT_AFTER_DAYS = 7
MAX_RENAMES = 3

MSG_TAKEN = QT_TRANSLATE_NOOP(
    "Storage", "The bucket name {name} is already taken (by another account, or in another "
    "region), so gpudesk uses {new_name} in {region} instead and remembers it.")
MSG_STILL_TAKEN = QT_TRANSLATE_NOOP(
    "Storage", "No free bucket name was found after {tries} tries (last: {name}).")
MSG_NO_APPID = QT_TRANSLATE_NOOP(
    "Storage", "A COS bucket name needs the account's APPID; none is known for this account.")


@dataclass(frozen=True)
class BucketTarget:
    """Whose bucket, where: the account id, and for COS the APPID the name must end with."""

    cloud: str  # aws | tencent | aliyun
    region: str
    account_id: str
    appid: str = ""

    @property
    def key(self) -> str:
        return f"{self.cloud}/{self.account_id}/{self.region}"


@dataclass(frozen=True)
class BucketInfo:
    store: StoreUri
    region: str
    created: bool
    note: str = ""  # a Said when the name had to change (translated where shown)


class BucketMemory:
    """Bucket names chosen per account and region, in a JSON file (no secrets)."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from gpudesk.services.core.paths import data_dir

            path = data_dir() / MEMORY_FILE
        self.path = path

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def put(self, key: str, name: str) -> None:
        data = self._load()
        data[key] = name
        write_json_object(self.path, data)


def default_name(target: BucketTarget, suffix: str = "") -> str:
    """``gpudesk-<hash of account+region>[-suffix]`` (COS: ``…-<APPID>``), within the
    cloud's length rules. The account id is hashed: a bucket name is public."""
    digest = hashlib.sha256(f"{target.account_id}/{target.region}".encode()).hexdigest()
    tail = f"-{suffix}" if suffix else ""
    if target.cloud == "tencent":
        if not target.appid:
            raise StorageError(MSG_NO_APPID)
        room = COS_DOMAIN_MAX - len(f".cos.{target.region}.myqcloud.com")
        for width in (8, 6, 4):
            name = f"gpudesk-{digest[:width]}{tail}-{target.appid}"
            if len(name) <= room:
                return name
        return f"gd{digest[:4]}{tail}-{target.appid}"
    return f"gpudesk-{digest[:10]}-{target.region}{tail}"[:63].rstrip("-")


def _code(err: Exception) -> str:
    return str((getattr(err, "response", {}) or {}).get("Error", {}).get("Code", ""))


def _status(err: Exception) -> int:
    meta = (getattr(err, "response", {}) or {}).get("ResponseMetadata", {})
    return int(meta.get("HTTPStatusCode", 0) or 0)


def ensure_bucket(client: Any, target: BucketTarget, memory: BucketMemory) -> BucketInfo:
    """The account's bucket in ``target.region``, created, tagged and ruled on first use.

    Blocking (boto3); run it in a worker thread."""
    from botocore.exceptions import ClientError

    remembered = memory.get(target.key)
    name = remembered or default_name(target)
    note = ""
    for _ in range(MAX_RENAMES + 1):
        check_bucket(target.cloud, name, region=target.region if target.cloud == "tencent"
                     else "")
        try:
            client.head_bucket(Bucket=name)
        except ClientError as err:
            if _status(err) not in (403, 404) and _code(err) not in ("404", "NoSuchBucket",
                                                                      "403", "AccessDenied"):
                raise from_client_error(err, target.cloud, name) from None
        else:
            if name == remembered:  # ours: finish what a cut first use left undone
                if not _tagged(client, name):
                    _dress(client, target, name)
                return BucketInfo(StoreUri(target.cloud, name), target.region, False, note)
            if _tagged(client, name):  # ours, found again (another laptop, lost memory)
                memory.put(target.key, name)
                return BucketInfo(StoreUri(target.cloud, name), target.region, False, note)
            name, note = _renamed(target, name, memory)
            continue
        try:
            _create(client, target, name, memory)
        except ClientError as err:
            if _code(err) == "BucketAlreadyOwnedByYou" and _reachable(client, name):
                memory.put(target.key, name)
                _dress(client, target, name)
                return BucketInfo(StoreUri(target.cloud, name), target.region, False, note)
            if _code(err) not in ("BucketAlreadyExists", "BucketAlreadyOwnedByYou"):
                raise from_client_error(err, target.cloud, name) from None
            name, note = _renamed(target, name, memory)
            continue
        return BucketInfo(StoreUri(target.cloud, name), target.region, True, note)
    raise StorageError(MSG_STILL_TAKEN, tries=MAX_RENAMES + 1, name=name)


def _reachable(client: Any, name: str) -> bool:
    """Ours *in this region*: a bucket of ours elsewhere does not answer this endpoint."""
    from botocore.exceptions import ClientError

    try:
        client.head_bucket(Bucket=name)
    except ClientError:
        return False
    return True


def _renamed(target: BucketTarget, name: str, memory: BucketMemory) -> tuple[str, str]:
    """A new name with a short random suffix, remembered, and the note that says why."""
    new_name = default_name(target, secrets.token_hex(2))
    memory.put(target.key, new_name)
    return new_name, Said("Storage", MSG_TAKEN, name=name, new_name=new_name,
                          region=target.region)


def _tagged(client: Any, name: str) -> bool:
    """Whether ``name`` carries gpudesk's tag; another account's bucket refuses to say."""
    from botocore.exceptions import ClientError

    try:
        tags = client.get_bucket_tagging(Bucket=name).get("TagSet", [])
    except ClientError:
        return False
    return any(t.get("Key") == TAG_KEY and t.get("Value") == TAG_VALUE for t in tags)


def _create(client: Any, target: BucketTarget, name: str, memory: BucketMemory) -> None:
    kwargs: dict[str, Any] = {"Bucket": name}
    if not (target.cloud == "aws" and target.region == "us-east-1"):
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": target.region}
    client.create_bucket(**kwargs)
    memory.put(target.key, name)  # before the tag: a retry finds it and finishes the job
    _dress(client, target, name)


def _dress(client: Any, target: BucketTarget, name: str) -> None:
    """gpudesk's tag and the bucket-wide rule (abort uploads left incomplete)."""
    from botocore.exceptions import ClientError

    try:
        client.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [
            {"Key": TAG_KEY, "Value": TAG_VALUE}]})
        _put_rules(client, name, [_abort_rule()])
    except ClientError as err:
        raise from_client_error(err, target.cloud, name) from None


def _abort_rule() -> dict[str, Any]:
    return {"ID": ABORT_RULE_ID, "Status": "Enabled", "Filter": {"Prefix": f"{RUNS}/"},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": ABORT_AFTER_DAYS}}


def _put_rules(client: Any, bucket: str, rules: list[dict[str, Any]]) -> None:
    client.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration={"Rules": rules})


def get_rules(client: Any, bucket: str) -> list[dict[str, Any]]:
    from botocore.exceptions import ClientError

    try:
        answer = client.get_bucket_lifecycle_configuration(Bucket=bucket)
    except ClientError as err:
        if _code(err) == "NoSuchLifecycleConfiguration":
            return []
        raise
    return list(answer.get("Rules", []))


def expiry_date(ended: datetime, keep_days: int) -> datetime:
    """Midnight UTC on or after ``ended + keep_days`` (S3 takes whole-day dates only)."""
    end = ended.astimezone(UTC) + timedelta(days=keep_days)
    midnight = end.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight if midnight == end else midnight + timedelta(days=1)


def expire_run(client: Any, store: StoreUri, run_id: str, ended: datetime,
               keep_days: int, *, cloud: str = "") -> datetime | None:
    """Schedule the deletion of the run's folder ``keep_days`` after it ended; 0 keeps it
    (and removes a rule set earlier). Rules whose date passed are dropped. Returns the
    date set, or None."""
    from botocore.exceptions import ClientError

    root = store.run(run_id).root
    rule_id = RUN_RULE_PREFIX + run_id
    now = datetime.now(UTC)
    try:
        rules = [r for r in get_rules(client, store.bucket) if r.get("ID") != rule_id
                 and not (str(r.get("ID", "")).startswith(RUN_RULE_PREFIX)
                          and _date_of(r) is not None and _date_of(r) < now)]  # type: ignore
        if not any(r.get("ID") == ABORT_RULE_ID for r in rules):
            rules.append(_abort_rule())
        when = expiry_date(ended, keep_days) if keep_days > 0 else None
        if when is not None:
            rules.append({"ID": rule_id, "Status": "Enabled", "Filter": {"Prefix": root},
                          "Expiration": {"Date": when}})
        _put_rules(client, store.bucket, rules)
    except ClientError as err:
        raise from_client_error(err, cloud or store.cloud, store.bucket) from None
    return when


def _date_of(rule: dict[str, Any]) -> datetime | None:
    value = rule.get("Expiration", {}).get("Date")
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return None
