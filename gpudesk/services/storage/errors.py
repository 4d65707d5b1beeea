"""Storage errors: an English template plus values, translated where shown (context Storage)."""

from __future__ import annotations

from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError

MSG_DENIED = QT_TRANSLATE_NOOP(
    "Storage", "The cloud refused the request: {action} was denied for this account on "
    "{target}. Allow {action} in the account's policy and try again.")
MSG_CLOUD = QT_TRANSLATE_NOOP(
    "Storage", "The storage service answered {code}: {detail}")
MSG_UNREACHABLE = QT_TRANSLATE_NOOP(
    "Storage", "The storage service at {endpoint} could not be reached ({reason}).")


class StorageError(TemplatedError):
    """Bad input or a cloud refusal, with a translatable template (context Storage)."""

    translation_context = "Storage"


class AccessDenied(StorageError):
    """A missing permission; ``action`` names it as the cloud's policy language does."""

    def __init__(self, template: str, **values: Any) -> None:
        super().__init__(template, **values)
        self.action = str(values.get("action", ""))


# The permission each S3 operation needs, in each cloud's policy language: a denied
# request then names what to allow (AWS IAM, Tencent CAM, Aliyun RAM action names).
# One row an operation, one column a cloud, in the order of CLOUDS; each cloud's
# prefix (s3:, cos:, oss:) is added by action_for.
CLOUDS = ("aws", "tencent", "aliyun")
PREFIXES = ("s3", "cos", "oss")
ACTIONS: dict[str, tuple[str, str, str]] = {
    "HeadBucket": ("ListBucket", "HeadBucket", "GetBucketInfo"),
    "ListObjectsV2": ("ListBucket", "GetBucket", "ListObjects"),
    "CreateBucket": ("CreateBucket", "PutBucket", "PutBucket"),
    "PutBucketTagging": ("PutBucketTagging", "PutBucketTagging", "PutBucketTagging"),
    "PutBucketLifecycleConfiguration": (
        "PutLifecycleConfiguration", "PutBucketLifecycle", "PutBucketLifecycle"),
    "GetBucketLifecycleConfiguration": (
        "GetLifecycleConfiguration", "GetBucketLifecycle", "GetBucketLifecycle"),
    "PutObject": ("PutObject", "PutObject", "PutObject"),
    "GetObject": ("GetObject", "GetObject", "GetObject"),
    "HeadObject": ("GetObject", "HeadObject", "GetObject"),
    "DeleteObject": ("DeleteObject", "DeleteObject", "DeleteObject"),
    "DeleteObjects": ("DeleteObject", "DeleteMultipleObjects", "DeleteObject"),
}
DENIED_CODES = frozenset({"AccessDenied", "Forbidden", "403", "AllAccessDisabled"})


def action_for(cloud: str, operation: str) -> str:
    """The policy action ``operation`` needs on ``cloud`` (an unknown cloud reads as AWS)."""
    column = CLOUDS.index(cloud) if cloud in CLOUDS else 0
    row = ACTIONS.get(operation)
    return f"{PREFIXES[column]}:{row[column] if row else operation}"


def from_client_error(err: Exception, cloud: str, target: str) -> StorageError:
    """A botocore error as a StorageError; AccessDenied names the denied action."""
    response: dict[str, Any] = getattr(err, "response", {}) or {}
    error = response.get("Error", {})
    code = str(error.get("Code", "")) or type(err).__name__
    operation = str(getattr(err, "operation_name", ""))
    if code in DENIED_CODES:
        return AccessDenied(MSG_DENIED, action=action_for(cloud, operation), target=target)
    detail = str(error.get("Message", "")) or operation
    return StorageError(MSG_CLOUD, code=code, detail=detail)
