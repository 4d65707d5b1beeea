"""A small S3-compatible client for the agent: the run's bucket on S3, COS or OSS.

Stdlib only (the agent is uploaded as a bare folder, no boto3 on the machine).
It speaks the S3 REST API that all three clouds accept, signed with AWS
Signature Version 4 (``AWS4-HMAC-SHA256``, written from the AWS SigV4 spec).
Every request signs the SHA-256 of its body (never ``UNSIGNED-PAYLOAD``), so a
body cut short or changed on the way is refused by the store.

Endpoints (virtual-hosted style, ``<bucket>.<endpoint host>``):
AWS ``https://s3.<region>.amazonaws.com``, COS ``https://cos.<region>.myqcloud.com``,
OSS ``https://s3.oss-<region>.aliyuncs.com``. ``endpoint`` and ``proxy`` in the
config point elsewhere (tests: moto on 127.0.0.1, or a stand-in reached through
an HTTP proxy so that a virtual-hosted name still arrives there).

Credentials are never the account's keys: the machine's role from the metadata
service (``cloud_stop.Metadata``, refreshed five minutes before expiry), or a
short-lived STS file the desktop wrote (mode 600, with its expiry). Secrets live
in memory only; no message, log line or exception here carries one.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import hashlib
import hmac
import http.client
import json
import os
import stat
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterator
from typing import List
from typing import Mapping
from typing import Optional
from typing import Tuple

from .cloud_stop import PROVIDERS as CLOUDS
from .cloud_stop import CloudStopError
from .cloud_stop import Creds
from .cloud_stop import Metadata
from .cloud_stop import aws_domain
from .file_parts import sha256_file

MULTIPART_THRESHOLD = 64 * 1024 * 1024
PART_SIZE = 16 * 1024 * 1024
CHUNK = 1024 * 1024
TIMEOUT_S = 60.0
REFRESH_BEFORE_S = 300.0  # fetch new role credentials this long before they expire
HOOK_ENV = "GPUDESK_STORE_HOOK"  # test hook: pause at a named point (see hook())
HOOK_FILE_ENV = "GPUDESK_STORE_HOOK_FILE"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class StoreError(Exception):
    """A store call that failed; the message says what and why, never a secret."""

    def __init__(self, message: str, *, status: int = 0, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def hook(point: str) -> None:
    """Tests kill the uploader at named points: when ``$GPUDESK_STORE_HOOK`` names this
    one, say so in ``$GPUDESK_STORE_HOOK_FILE`` and wait forever for the SIGKILL."""
    if os.environ.get(HOOK_ENV) != point:
        return
    marker = os.environ.get(HOOK_FILE_ENV)
    if marker:
        Path(marker).write_text(point, encoding="utf-8")
    threading.Event().wait()


@dataclass(frozen=True)
class StoreConfig:
    """Where the run's data goes; no secret in here (it is a file the desktop writes)."""

    cloud: str
    region: str
    bucket: str
    prefix: str = ""  # "runs/<run-id>/"
    endpoint: str = ""  # override: "http://127.0.0.1:PORT" (tests), else the cloud's
    proxy: str = ""  # "http://127.0.0.1:PORT": every request goes through it
    addressing: str = "virtual"  # or "path" (moto on 127.0.0.1)
    role: str = ""  # the machine's role name (metadata credentials)
    metadata: str = ""  # metadata service base URL override
    credentials_file: str = ""  # short-lived STS credentials the desktop wrote (mode 600)
    sign_region: str = ""  # SigV4 region when it differs from ``region``

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoreConfig:
        known = {k: str(v) for k, v in data.items() if k in cls.__dataclass_fields__ and v}
        for need in ("cloud", "region", "bucket"):
            if not known.get(need):
                raise StoreError(f"the store config lacks {need!r}")
        if known["cloud"] not in CLOUDS:
            raise StoreError(f"cloud must be one of {', '.join(CLOUDS)}")
        if known.get("addressing", "virtual") not in ("virtual", "path"):
            raise StoreError("addressing must be 'virtual' or 'path'")
        if known.get("prefix") and not known["prefix"].endswith("/"):
            known["prefix"] += "/"
        return cls(**known)

    @property
    def uri(self) -> str:
        scheme = {"aws": "s3", "tencent": "cos", "aliyun": "oss"}[self.cloud]
        return f"{scheme}://{self.bucket}/{self.prefix}"


def default_endpoint(cloud: str, region: str) -> str:
    if cloud == "aws":
        return f"https://s3.{region}.{aws_domain(region)}"
    if cloud == "tencent":
        return f"https://cos.{region}.myqcloud.com"
    return f"https://s3.oss-{region}.aliyuncs.com"


# ------------------------------------------------------------------ credentials

def _expiry(text: str) -> Optional[float]:
    text = (text or "").strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class CredentialSource:
    """Short-lived credentials, fetched again shortly before they expire."""

    def __init__(self, config: StoreConfig, now: Callable[[], float] = time.time) -> None:
        if not config.role and not config.credentials_file:
            raise StoreError("no credentials: the store config names neither a role nor an "
                             "STS credentials file")
        self.config = config
        self.now = now
        self._creds: Optional[Creds] = None
        self._until = 0.0
        self._stamp: Optional[Tuple[int, int]] = None
        self._lock = threading.Lock()

    def get(self) -> Creds:
        with self._lock:
            if self._creds is None or self.now() >= self._until - REFRESH_BEFORE_S \
                    or self._file_changed():
                self._creds, expires = (self._from_file() if self.config.credentials_file
                                        else self._from_role())
                # unknown expiry: ask again in ten minutes
                self._until = expires if expires is not None else self.now() + 900.0
            return self._creds

    @property
    def expires(self) -> float:
        return self._until

    def _file_changed(self) -> bool:
        if not self.config.credentials_file:
            return False
        try:
            st = os.stat(self.config.credentials_file)
        except OSError:
            return False
        return (st.st_mtime_ns, st.st_size) != self._stamp

    def _from_role(self) -> Tuple[Creds, Optional[float]]:
        # a new Metadata each time: its IMDSv2 token lives 300 s, the credentials ~1 h
        try:
            creds = Metadata(self.config.cloud, self.config.metadata).credentials(
                self.config.role)
        except CloudStopError as exc:
            raise StoreError(f"no role credentials: {exc}") from None
        return creds, _expiry(creds.expiration)

    def _from_file(self) -> Tuple[Creds, Optional[float]]:
        path = self.config.credentials_file
        try:
            st = os.stat(path)
            if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise StoreError(f"{path} is readable by others (mode "
                                 f"{stat.S_IMODE(st.st_mode):o}); it must be 600")
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except StoreError:
            raise
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read the credentials file {path}: "
                             f"{type(exc).__name__}") from None
        self._stamp = (st.st_mtime_ns, st.st_size)
        if not isinstance(data, dict):
            raise StoreError(f"{path} is not a JSON object")
        key_id, secret, token = (str(data.get(k) or "") for k in ("key_id", "secret", "token"))
        if not (key_id and secret and token):
            raise StoreError(f"{path} must hold key_id, secret and token (short-lived "
                             "STS credentials; never the account's keys)")
        expires = _expiry(str(data.get("expiration") or ""))
        if expires is None:
            raise StoreError(f"{path} has no expiration")
        if expires <= self.now():
            raise StoreError(f"the STS credentials in {path} expired at "
                             f"{data.get('expiration')}")
        return Creds(key_id, secret, token, str(data.get("expiration"))), expires


# ------------------------------------------------------------------ SigV4

def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def uri_encode(text: str, *, slash: bool = True) -> str:
    """SigV4's URI encoding: RFC 3986 unreserved characters kept, the rest %XX."""
    return urllib.parse.quote(text, safe="-_.~" + ("/" if not slash else ""))


def canonical_query(query: Mapping[str, str]) -> str:
    return "&".join(f"{uri_encode(k)}={uri_encode(v)}" for k, v in sorted(query.items()))


def sign(creds: Creds, method: str, host: str, path: str, query: Mapping[str, str],
         headers: Mapping[str, str], payload_sha256: str, region: str, now: float,
         service: str = "s3") -> Dict[str, str]:
    """The headers to send: ``headers`` plus host, the dates, the token and the signature.

    ``path`` is already URI-encoded (S3 encodes each key segment once, ``/`` kept).
    """
    stamp = _dt.datetime.fromtimestamp(now, _dt.timezone.utc)
    amz_date, day = stamp.strftime("%Y%m%dT%H%M%SZ"), stamp.strftime("%Y%m%d")
    out = {k.lower(): str(v).strip() for k, v in headers.items()}
    out.update({"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload_sha256})
    if creds.token:
        out["x-amz-security-token"] = creds.token
    names = sorted(out)
    canonical = "\n".join([method, path or "/", canonical_query(query),
                           "".join(f"{n}:{' '.join(out[n].split())}\n" for n in names),
                           ";".join(names), payload_sha256])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + creds.secret).encode("utf-8"), day), region),
                      service), "aws4_request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    out["authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.key_id}/{scope}, "
                            f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return out


# ------------------------------------------------------------------ the client

@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    etag: str = ""


@dataclass(frozen=True)
class Response:
    status: int
    headers: Dict[str, str]
    body: bytes


def _xml_text(body: bytes, tag: str) -> str:
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return ""
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == tag:
            return (el.text or "").strip()
    return ""


def _children(root: ET.Element, tag: str) -> Iterator[ET.Element]:
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == tag:
            yield el


def _child_text(el: ET.Element, tag: str) -> str:
    for c in el:
        if c.tag.rsplit("}", 1)[-1] == tag:
            return (c.text or "").strip()
    return ""


def billing_class(method: str, query: Mapping[str, str]) -> str:
    """S3's request classes (aws.amazon.com/s3/pricing, Requests): "tier1" PUT, COPY, POST
    and LIST (ListObjectsV2, ListMultipartUploads, ListParts); "free" DELETE and CANCEL
    (AbortMultipartUpload is a DELETE); "tier2" GET, SELECT and all others (HEAD)."""
    if method == "DELETE":
        return "free"
    if method in ("PUT", "POST") or "list-type" in query or "uploads" in query \
            or "uploadId" in query:
        return "tier1"
    return "tier2"


class Requests:
    """Requests answered by the bucket, by billing class; thread-safe. One per run folder
    (bucket and prefix) in this process, shared by every :class:`Store` of it, so the
    uploader's count includes the keep-alive spend's GET and PUT (bucket_spend.py)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tier1 = self.tier2 = self.free = 0

    def add(self, kind: str) -> None:
        with self._lock:
            setattr(self, kind, getattr(self, kind) + 1)

    def counts(self) -> Tuple[int, int, int]:
        with self._lock:
            return self.tier1, self.tier2, self.free


_REQUESTS: Dict[str, Requests] = {}
_REQUESTS_LOCK = threading.Lock()


def requests_for(uri: str) -> Requests:
    with _REQUESTS_LOCK:
        return _REQUESTS.setdefault(uri, Requests())


_ACTIONS = {("PUT", ""): "PutObject", ("GET", ""): "GetObject", ("HEAD", ""): "GetObject",
            ("DELETE", ""): "DeleteObject", ("GET", "list-type"): "ListBucket",
            ("POST", "uploads"): "PutObject", ("PUT", "partNumber"): "PutObject",
            ("POST", "uploadId"): "PutObject", ("DELETE", "uploadId"): "AbortMultipartUpload",
            ("GET", "uploads"): "ListBucketMultipartUploads"}


class Store:
    """One bucket on one cloud; every method raises :class:`StoreError`."""

    def __init__(self, config: StoreConfig, credentials: Optional[CredentialSource] = None,
                 *, now: Callable[[], float] = time.time, timeout: float = TIMEOUT_S,
                 multipart_threshold: int = MULTIPART_THRESHOLD,
                 part_size: int = PART_SIZE) -> None:
        self.config = config
        self.creds = credentials or CredentialSource(config, now)
        self.now = now
        self.timeout = timeout
        self.multipart_threshold = multipart_threshold
        self.part_size = part_size
        url = urllib.parse.urlsplit(config.endpoint or default_endpoint(config.cloud,
                                                                        config.region))
        self.scheme = url.scheme or "https"
        self.endpoint_host = url.netloc
        self.region = config.sign_region or config.region
        if config.addressing == "virtual":
            self.host = f"{config.bucket}.{self.endpoint_host}"
            self.base_path = ""
        else:
            self.host = self.endpoint_host
            self.base_path = "/" + uri_encode(config.bucket)
        proxy = urllib.parse.urlsplit(config.proxy) if config.proxy else None
        self.proxy = proxy.netloc if proxy is not None else ""
        self.last_meta: Dict[str, str] = {}  # x-amz-meta-* of the last head()
        self.requests = requests_for(config.uri)

    # -------------------------------------------------------------- plumbing

    def _connect(self) -> http.client.HTTPConnection:
        if self.proxy and self.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self.proxy, timeout=self.timeout)
            conn.set_tunnel(self.host)
            return conn
        target = self.proxy or self.host
        cls = http.client.HTTPSConnection if self.scheme == "https" and not self.proxy \
            else http.client.HTTPConnection
        return cls(target, timeout=self.timeout)

    def _path(self, key: str) -> str:
        return self.base_path + "/" + uri_encode(key, slash=False) if key else \
            (self.base_path or "/")

    def request(self, method: str, key: str = "", *, query: Optional[Mapping[str, str]] = None,
                headers: Optional[Mapping[str, str]] = None, body: bytes = b"",
                stream: Optional[IO[bytes]] = None, length: int = 0, sha256: str = "",
                out: Optional[IO[bytes]] = None, pause_at: int = -1) -> Response:
        """One signed request. ``stream``+``length``+``sha256`` send a file's bytes
        (hashed by the caller) without holding them; ``out`` receives a 2xx body."""
        query = dict(query or {})
        path = self._path(key)
        payload = sha256 or hashlib.sha256(body).hexdigest()
        size = length if stream is not None else len(body)
        hdrs = dict(headers or {})
        if method in ("PUT", "POST") or size:
            hdrs["content-length"] = str(size)
        signed = sign(self.creds.get(), method, self.host, path, query, hdrs, payload,
                      self.region, self.now())
        target = path + ("?" + canonical_query(query) if query else "")
        if self.proxy and self.scheme == "http":
            target = f"http://{self.host}{target}"
        action = self._action(method, query)
        conn = self._connect()
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in signed.items():
                conn.putheader(name, value)
            conn.endheaders()
            if stream is not None:
                sent = 0
                while sent < length:
                    if sent >= pause_at >= 0:
                        hook("object-body")
                        pause_at = -1
                    chunk = stream.read(min(CHUNK, length - sent))
                    if not chunk:
                        raise StoreError(f"{key} got shorter while it was sent")
                    conn.send(chunk)
                    sent += len(chunk)
            elif body:
                conn.send(body)
            resp = conn.getresponse()
            self.requests.add(billing_class(method, query))  # answered: billed
            rheaders = {k.lower(): v for k, v in resp.getheaders()}
            if 200 <= resp.status < 300 and out is not None:
                while True:
                    chunk = resp.read(CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                data = b""
            else:
                data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise StoreError(f"cannot reach the bucket: {self.config.bucket} at "
                             f"{self.endpoint_host} ({type(exc).__name__})") from None
        finally:
            conn.close()
        if resp.status >= 300 and not (method == "HEAD" and resp.status == 404):
            code = _xml_text(data, "Code") or resp.reason
            message = _xml_text(data, "Message")
            what = f"s3:{action} on {self.config.bucket}/{key}" if key else \
                f"s3:{action} on {self.config.bucket}"
            if resp.status == 403 or code == "AccessDenied":
                text = f"{what} was denied: {code} {message}".strip()
            else:
                text = f"{what} failed: HTTP {resp.status} {code} {message}".strip()
            raise StoreError(text, status=resp.status, code=code)
        return Response(resp.status, rheaders, data)

    @staticmethod
    def _action(method: str, query: Mapping[str, str]) -> str:
        for name in ("list-type", "uploads", "partNumber", "uploadId"):
            if name in query and (method, name) in _ACTIONS:
                return _ACTIONS[(method, name)]
        return _ACTIONS.get((method, ""), method)

    # -------------------------------------------------------------- objects

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json",
                  meta: Optional[Mapping[str, str]] = None) -> None:
        headers = {"content-type": content_type,
                   "content-md5": base64.b64encode(hashlib.md5(data).digest()).decode()}
        headers.update({f"x-amz-meta-{k}": v for k, v in (meta or {}).items()})
        self.request("PUT", key, body=data, headers=headers)

    def put_file(self, key: str, path: Path, *, sha256: str = "",
                 meta: Optional[Mapping[str, str]] = None) -> ObjectInfo:
        """Upload a file from disk (multipart above the threshold) and verify it landed
        whole: size, ETag (MD5s) and the SHA-256 kept in the object's metadata.

        ``sha256`` (the checkpoint's sidecar) must equal the bytes' hash, else nothing
        is uploaded. One open file throughout: a rename or delete meanwhile is harmless.
        """
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            digest = hashlib.sha256()
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                digest.update(chunk)
            whole = digest.hexdigest()
            if sha256 and whole != sha256:
                raise StoreError(f"{path.name} differs from its SHA-256; not uploaded")
            fields = {"sha256": whole, **(meta or {})}
            fh.seek(0)
            if size > self.multipart_threshold:
                etag = self._multipart(key, fh, size, fields)
            else:
                etag = self._single(key, fh, size, fields)
        info = self.head(key)
        if info is None:
            raise StoreError(f"{key} is not in the bucket after its upload")
        if info.size != size or info.etag.strip('"') != etag.strip('"'):
            raise StoreError(f"{key} in the bucket has {info.size} bytes (ETag {info.etag}); "
                             f"uploaded {size} bytes (ETag {etag})")
        # The store checked each body against its signed SHA-256; the copy in the metadata
        # (kept by S3, COS and OSS) must agree where the store returns it.
        if self.last_meta.get("sha256", whole) != whole:
            raise StoreError(f"{key} in the bucket has another SHA-256 than was uploaded")
        return ObjectInfo(key, size, etag)

    def _single(self, key: str, fh: IO[bytes], size: int, meta: Mapping[str, str]) -> str:
        md5, sha = hashlib.md5(), hashlib.sha256()
        while True:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            md5.update(chunk)
            sha.update(chunk)
        fh.seek(0)
        headers = {"content-type": "application/octet-stream",
                   "content-md5": base64.b64encode(md5.digest()).decode()}
        headers.update({f"x-amz-meta-{k}": v for k, v in meta.items()})
        self.request("PUT", key, headers=headers, stream=fh, length=size,
                     sha256=sha.hexdigest(), pause_at=size // 2)
        return md5.hexdigest()

    def _multipart(self, key: str, fh: IO[bytes], size: int, meta: Mapping[str, str]) -> str:
        headers = {"content-type": "application/octet-stream"}
        headers.update({f"x-amz-meta-{k}": v for k, v in meta.items()})
        started = self.request("POST", key, query={"uploads": ""}, headers=headers)
        upload_id = _xml_text(started.body, "UploadId")
        if not upload_id:
            raise StoreError(f"the bucket gave no UploadId for {key}")
        parts: List[Tuple[int, str]] = []
        md5s = b""
        try:
            number = 0
            while True:
                data = fh.read(self.part_size)
                if not data:
                    break
                number += 1
                md5 = hashlib.md5(data).digest()
                got = self.request("PUT", key, query={"partNumber": str(number),
                                                      "uploadId": upload_id},
                                   body=data, headers={
                                       "content-md5": base64.b64encode(md5).decode()})
                etag = got.headers.get("etag", "").strip('"')
                if etag and etag != md5.hex():
                    raise StoreError(f"part {number} of {key} arrived changed")
                parts.append((number, md5.hex()))
                md5s += md5
                hook("multipart-part")
            body = ("<CompleteMultipartUpload>" + "".join(
                f"<Part><PartNumber>{n}</PartNumber><ETag>\"{e}\"</ETag></Part>"
                for n, e in parts) + "</CompleteMultipartUpload>").encode()
            done = self.request("POST", key, query={"uploadId": upload_id}, body=body,
                                headers={"content-type": "application/xml"})
            if _xml_text(done.body, "Code"):  # S3 may answer 200 with an error inside
                raise StoreError(f"completing {key} failed: {_xml_text(done.body, 'Code')}")
        except BaseException:
            with contextlib.suppress(StoreError):  # else the lifecycle rule removes them
                self.request("DELETE", key, query={"uploadId": upload_id})
            raise
        return f"{hashlib.md5(md5s).hexdigest()}-{len(parts)}"

    def head(self, key: str) -> Optional[ObjectInfo]:
        resp = self.request("HEAD", key)
        if resp.status == 404:
            return None
        self.last_meta = {k[len("x-amz-meta-"):]: v for k, v in resp.headers.items()
                          if k.startswith("x-amz-meta-")}
        return ObjectInfo(key, int(resp.headers.get("content-length", "0") or 0),
                          resp.headers.get("etag", "").strip('"'))

    def get_bytes(self, key: str) -> Optional[bytes]:
        """The object's bytes, or None when there is none."""
        try:
            return self.request("GET", key).body
        except StoreError as exc:
            if exc.status == 404:
                return None
            raise

    def get_file(self, key: str, dest: Path, *, sha256: str = "", size: int = -1) -> Path:
        """Download to a temporary name beside ``dest``, check it, then rename: a reader
        (the training's resume) never sees half a file."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part-{os.getpid()}")
        try:
            with open(tmp, "wb") as fh:
                self.request("GET", key, out=fh)
                fh.flush()
                os.fsync(fh.fileno())
            got = tmp.stat().st_size
            if size >= 0 and got != size:
                raise StoreError(f"{key} came with {got} bytes, expected {size}")
            if sha256 and sha256_file(tmp) != sha256:
                raise StoreError(f"{key} differs from its SHA-256")
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return dest

    def list(self, prefix: str, page_size: int = 1000) -> List[ObjectInfo]:
        """Every object under ``prefix`` (ListObjectsV2, page after page)."""
        found: List[ObjectInfo] = []
        token = ""
        while True:
            query = {"list-type": "2", "prefix": prefix, "max-keys": str(page_size)}
            if token:
                query["continuation-token"] = token
            resp = self.request("GET", "", query=query)
            try:
                root = ET.fromstring(resp.body)
            except ET.ParseError:
                raise StoreError("the bucket's listing is not XML") from None
            for item in _children(root, "Contents"):
                found.append(ObjectInfo(_child_text(item, "Key"),
                                        int(_child_text(item, "Size") or 0),
                                        _child_text(item, "ETag").strip('"')))
            token = _child_text(root, "NextContinuationToken")
            if _child_text(root, "IsTruncated") != "true" or not token:
                return found

    def delete(self, key: str) -> None:
        self.request("DELETE", key)

    def abort_stale_uploads(self, prefix: str) -> int:
        """Abort multipart uploads left under ``prefix`` by a killed uploader."""
        resp = self.request("GET", "", query={"uploads": "", "prefix": prefix})
        try:
            root = ET.fromstring(resp.body)
        except ET.ParseError:
            return 0
        count = 0
        for item in _children(root, "Upload"):
            key, upload_id = _child_text(item, "Key"), _child_text(item, "UploadId")
            if key and upload_id:
                self.request("DELETE", key, query={"uploadId": upload_id})
                count += 1
        return count
