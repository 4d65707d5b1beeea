"""UserData as each cloud is sent it, and back to the text cloud-init reads.

The first-boot user data carries the guard and the role's cloud stop (``first_boot``);
uncompressed it is close to the 16 KB EC2 and CVM take. cloud-init reads gzip user data
as the text inside ("User data formats": content found to be gzip-compressed is
uncompressed first; this is what the ~16 KB limits are for), on every datasource, so:

* AWS: EC2 counts 16 KB of raw user data (before the base64 boto3 or a launch template
  adds): sent gzip;
* Tencent Cloud: CVM and AS count 16 KB of the base64 text: sent as base64 of the gzip;
* Alibaba Cloud: ECS and ESS count 32 KB of raw data: ample, sent as the text itself
  (the console shows it as it is).

The gzip header holds no time or name (mtime 0), so the same text is always the same
bytes: a launch configuration read back compares equal to what was sent.
"""

from __future__ import annotations

import base64
import gzip

GZIP_CLOUDS = frozenset({"aws", "tencent"})
GZIP_MAGIC = b"\x1f\x8b"


def encode(cloud: str, text: str) -> bytes:
    """The user data's bytes for ``cloud``, before any base64 the API asks for."""
    raw = text.encode()
    if cloud in GZIP_CLOUDS and raw:
        return gzip.compress(raw, compresslevel=9, mtime=0)
    return raw


def encode_base64(cloud: str, text: str) -> str:
    """``encode`` as the base64 text an API field takes (CVM, AS, ECS, EC2 templates)."""
    return base64.b64encode(encode(cloud, text)).decode("ascii")


def decode(data: bytes) -> str:
    """The text cloud-init reads from user data ``data`` (gzip or not)."""
    if data[:2] == GZIP_MAGIC:
        data = gzip.decompress(data)
    return data.decode()


def decode_base64(encoded: str | bytes) -> str:
    """:func:`decode` of a base64 UserData field as a cloud answers or holds it."""
    return decode(base64.b64decode(encoded))
