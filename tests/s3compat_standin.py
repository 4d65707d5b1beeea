"""A stand-in S3-compatible object store (what COS and OSS offer to S3 clients), on 127.0.0.1.

Written from the SigV4 specification and the clouds' own references, not from botocore:
every request's ``Authorization: AWS4-HMAC-SHA256`` header is verified with hmac/hashlib
(canonical request, string to sign, derived key), the payload hash against the body, the
clock skew, and the credential scope's region against the endpoint's region.

It is also the HTTP proxy the client is pointed at: requests arrive with an absolute URI
(``PUT http://bucket.cos.ap-guangzhou.myqcloud.com/key``), so virtual-hosted names need
no DNS and nothing leaves 127.0.0.1. The cloud's rules come from :class:`CloudRules`
(``cos_standin.py`` and ``oss_standin.py``): service host per region, bucket names
(COS: ``<name>-<APPID>`` of the signing account, the domain at most 60 characters;
OSS: 3-63 lowercase letters, digits and hyphens), and whether path-style is refused
(OSS: ``SecondLevelDomainForbidden``).

Operations: CreateBucket (LocationConstraint), HeadBucket, Put/GetBucketTagging,
Put/GetBucketLifecycleConfiguration (Expiration Date must be midnight UTC),
PutObject, GetObject (Range), HeadObject, ListObjectsV2 (MaxKeys at most 1000,
ContinuationToken), DeleteObject, DeleteObjects (at most 1000 keys). Accounts may be
denied actions (named in the cloud's policy language). A bill on a test-driven clock:
stored byte-seconds, requests per operation, bytes out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any
from typing import Self
from urllib.parse import quote
from urllib.parse import unquote
from urllib.parse import urlsplit
from xml.etree import ElementTree as ET

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
MAX_SKEW_S = 900  # S3's RequestTimeTooSkewed limit: 15 minutes
MAX_KEYS = 1000
MAX_DELETE = 1000
EMPTY_SHA = hashlib.sha256(b"").hexdigest()


class S3Error(Exception):
    def __init__(self, status: int, code: str, message: str = "") -> None:
        super().__init__(code)
        self.status, self.code, self.message = status, code, message or code


@dataclass(frozen=True)
class CloudRules:
    """What differs between clouds behind the same S3 protocol."""

    name: str  # tencent | aliyun
    host_template: str  # service host with {region}
    regions: frozenset[str]
    check_bucket: Callable[[str, Account, str], None]  # name, creator, region; raises S3Error
    path_style_error: tuple[str, str] | None  # (code, message) when path-style is refused
    action_names: dict[str, str]  # operation → the action a policy names


@dataclass
class Account:
    key_id: str
    secret: str
    account_id: str
    appid: str = ""
    denied: set[str] = field(default_factory=set)  # action names (cloud's policy language)


@dataclass
class StoredObject:
    data: bytes
    modified: datetime

    @property
    def etag(self) -> str:
        return '"' + hashlib.md5(self.data, usedforsecurity=False).hexdigest() + '"'


@dataclass
class Bucket:
    name: str
    owner: str  # account_id
    region: str
    tags: dict[str, str] = field(default_factory=dict)
    rules: list[dict[str, Any]] = field(default_factory=list)
    objects: dict[str, StoredObject] = field(default_factory=dict)

    @property
    def stored_bytes(self) -> int:
        return sum(len(o.data) for o in self.objects.values())


@dataclass
class Bill:
    byte_seconds: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    bytes_out: int = 0


@dataclass
class Logged:
    operation: str
    host: str
    bucket: str
    key: str
    region: str  # the signature's scope


class S3CompatStandin:
    def __init__(self, rules: CloudRules) -> None:
        self.rules = rules
        self._lock = threading.RLock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    def reset(self) -> None:
        with getattr(self, "_lock", threading.RLock()):
            self.accounts: dict[str, Account] = {}
            self.buckets: dict[str, Bucket] = {}
            self.bills: dict[str, Bill] = {}
            self.log: list[Logged] = []
            self.clock = 0.0  # the bill's clock, moved by advance()
            self.cut_next_get: int | None = None  # send only this many body bytes, then close
            self.refused: list[str] = []  # error codes answered, oldest first

    # ------------------------------------------------------------------ control

    def add_account(self, key_id: str, secret: str, account_id: str, *, appid: str = "",
                    denied: set[str] | None = None) -> Account:
        with self._lock:
            account = Account(key_id, secret, account_id, appid, set(denied or ()))
            self.accounts[key_id] = account
            self.bills.setdefault(account_id, Bill())
            return account

    def advance(self, seconds: float) -> None:
        """Move the bill's clock: every stored byte costs ``seconds`` byte-seconds."""
        with self._lock:
            for bucket in self.buckets.values():
                self.bills.setdefault(bucket.owner, Bill()).byte_seconds += (
                    bucket.stored_bytes * seconds)
            self.clock += seconds

    def bill(self, account_id: str) -> Bill:
        with self._lock:
            return self.bills.setdefault(account_id, Bill())

    def operations(self) -> list[str]:
        with self._lock:
            return [entry.operation for entry in self.log]

    def service_host(self, region: str) -> str:
        return self.rules.host_template.format(region=region)

    # ------------------------------------------------------------------ serving

    @property
    def proxy(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        standin: S3CompatStandin = self

        class Handler(_Handler):
            server_ref = standin

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name=f"{self.rules.name}-s3-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # ------------------------------------------------------------------ one request

    def handle(self, method: str, target: str, headers: dict[str, str],
               body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        """(status, headers, body, cut) for one request; ``cut`` truncates the body sent."""
        try:
            with self._lock:
                return self._handle(method, target, headers, body)
        except S3Error as err:
            with self._lock:
                self.refused.append(err.code)
            xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{err.code}</Code>'
                   f"<Message>{_esc(err.message)}</Message>"
                   f"<RequestId>{uuid.uuid4().hex}</RequestId></Error>").encode()
            return err.status, {"Content-Type": "application/xml"}, (
                b"" if method == "HEAD" else xml), None

    def _handle(self, method: str, target: str, headers: dict[str, str],
                body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        parts = urlsplit(target)
        host = (parts.netloc or headers.get("host", "")).split(":")[0].lower()
        raw_path = parts.path or "/"
        raw_query = parts.query
        region, bucket_name, key = self._address(host, raw_path)
        account = self._verify(method, raw_path, raw_query, headers, body, region)
        query = _query(raw_query)
        operation = _operation(method, key, query)
        self.log.append(Logged(operation, host, bucket_name, key, region))
        self.bills.setdefault(account.account_id, Bill()).requests[operation] += 1
        action = self.rules.action_names.get(operation, operation)
        if action in account.denied:
            raise S3Error(403, "AccessDenied", f"Access Denied: {action} on {bucket_name}")
        if operation == "CreateBucket":
            return self._create_bucket(account, bucket_name, region, body)
        bucket = self._bucket(account, bucket_name, region)
        answer: tuple[int, dict[str, str], bytes, int | None] = getattr(
            self, "_op_" + operation)(account, bucket, key, query, headers, body)
        return answer

    def _address(self, host: str, raw_path: str) -> tuple[str, str, str]:
        """(endpoint region, bucket, key) from a virtual-hosted or path-style address."""
        for region in self.rules.regions:
            service = self.service_host(region)
            if host.endswith("." + service):
                bucket = host[: -len(service) - 1]
                return region, bucket, unquote(raw_path[1:])
            if host == service:
                bucket, _, key = raw_path[1:].partition("/")
                if self.rules.path_style_error is not None:
                    code, message = self.rules.path_style_error
                    raise S3Error(403, code, message)
                return region, unquote(bucket), unquote(key)
        raise S3Error(400, "InvalidURI", f"{host} is not a {self.rules.name} endpoint")

    # ------------------------------------------------------------------ SigV4

    def _verify(self, method: str, raw_path: str, raw_query: str, headers: dict[str, str],
                body: bytes, region: str) -> Account:
        auth = headers.get("authorization", "")
        match = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/"
                             r"aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?"
                             r"Signature=([0-9a-f]{64})", auth)
        if not match:
            raise S3Error(403, "AccessDenied", "a SigV4 Authorization header is required")
        key_id, day, scope_region, signed, signature = match.groups()
        account = self.accounts.get(key_id)
        if account is None:
            raise S3Error(403, "InvalidAccessKeyId", "The access key id does not exist")
        if scope_region != region:
            raise S3Error(400, "AuthorizationHeaderMalformed",
                          f"the region '{scope_region}' is wrong; expecting '{region}'")
        amz_date = headers.get("x-amz-date", "")
        try:
            when = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise S3Error(403, "AccessDenied", "x-amz-date is missing or malformed") from None
        if abs((datetime.now(UTC) - when).total_seconds()) > MAX_SKEW_S or \
                amz_date[:8] != day:
            raise S3Error(403, "RequestTimeTooSkewed", "The difference between the request "
                          "time and the server's time is too large.")
        payload = headers.get("x-amz-content-sha256", "")
        if not payload:
            raise S3Error(400, "InvalidRequest", "x-amz-content-sha256 is required")
        if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
            raise S3Error(400, "XAmzContentSHA256Mismatch",
                          "The provided 'x-amz-content-sha256' header does not match")
        names = signed.split(";")
        if "host" not in names or names != sorted(names):
            raise S3Error(403, "AccessDenied", "SignedHeaders must include host, sorted")
        canonical_headers = "".join(
            f"{n}:{' '.join(headers.get(n, '').split())}\n" for n in names)
        canonical = "\n".join([method, raw_path or "/", _canonical_query(raw_query),
                               canonical_headers, signed, payload])
        scope = f"{day}/{scope_region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        k = _hmac(("AWS4" + account.secret).encode(), day)
        for part in (scope_region, "s3", "aws4_request"):
            k = _hmac(k, part)
        expected = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise S3Error(403, "SignatureDoesNotMatch", "The request signature we calculated "
                          "does not match the signature you provided.")
        return account

    # ------------------------------------------------------------------ buckets

    def _bucket(self, account: Account, name: str, region: str) -> Bucket:
        bucket = self.buckets.get(name)
        if bucket is None:
            raise S3Error(404, "NoSuchBucket", "The specified bucket does not exist.")
        if bucket.owner != account.account_id:
            raise S3Error(403, "AccessDenied", "Access Denied")
        if bucket.region != region:
            raise S3Error(403, "AccessDenied", "The bucket you are attempting to access "
                          "must be addressed using the specified endpoint.")
        return bucket

    def _create_bucket(self, account: Account, name: str, region: str,
                       body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        self.rules.check_bucket(name, account, region)
        location = ""
        if body:
            node = ET.fromstring(body).find(f"{{{NS}}}LocationConstraint")
            location = node.text or "" if node is not None else ""
        if location != region:
            raise S3Error(400, "IllegalLocationConstraintException",
                          f"The {location or 'unspecified'} location constraint is "
                          f"incompatible for the region specific endpoint this request "
                          f"was sent to ({region}).")
        existing = self.buckets.get(name)
        if existing is not None:
            if existing.owner == account.account_id and existing.region == region:
                raise S3Error(409, "BucketAlreadyOwnedByYou", "You already own it.")
            raise S3Error(409, "BucketAlreadyExists", "The requested bucket name is not "
                          "available.")
        self.buckets[name] = Bucket(name, account.account_id, region)
        return 200, {"Location": f"/{name}"}, b"", None

    def _op_HeadBucket(self, *_: Any) -> tuple[int, dict[str, str], bytes, int | None]:
        return 200, {}, b"", None

    def _op_PutBucketTagging(self, _a: Account, bucket: Bucket, _k: str, _q: Any, _h: Any,
                             body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        root = ET.fromstring(body)
        bucket.tags = {t.findtext(f"{{{NS}}}Key") or "": t.findtext(f"{{{NS}}}Value") or ""
                       for t in root.iter(f"{{{NS}}}Tag")}
        return 204, {}, b"", None

    def _op_PutBucketLifecycleConfiguration(
            self, _a: Account, bucket: Bucket, _k: str, _q: Any, _h: Any,
            body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        rules: list[dict[str, Any]] = []
        for node in ET.fromstring(body).iter(f"{{{NS}}}Rule"):
            rule: dict[str, Any] = {
                "ID": node.findtext(f"{{{NS}}}ID") or "",
                "Status": node.findtext(f"{{{NS}}}Status") or "",
                "Prefix": node.findtext(f"{{{NS}}}Filter/{{{NS}}}Prefix") or "",
            }
            date_text = node.findtext(f"{{{NS}}}Expiration/{{{NS}}}Date")
            if date_text:
                date = datetime.fromisoformat(date_text.replace("Z", "+00:00"))
                if (date.hour, date.minute, date.second, date.microsecond) != (0, 0, 0, 0):
                    raise S3Error(400, "InvalidArgument", "'Date' must be at midnight GMT")
                rule["Date"] = date
            days = node.findtext(f"{{{NS}}}AbortIncompleteMultipartUpload/"
                                 f"{{{NS}}}DaysAfterInitiation")
            if days:
                rule["AbortDays"] = int(days)
            if rule["Status"] not in ("Enabled", "Disabled"):
                raise S3Error(400, "MalformedXML", "Status must be Enabled or Disabled")
            rules.append(rule)
        if len({r["ID"] for r in rules}) != len(rules):
            raise S3Error(400, "InvalidArgument", "Rule ID must be unique")
        bucket.rules = rules
        return 200, {}, b"", None

    def _op_GetBucketLifecycleConfiguration(
            self, _a: Account, bucket: Bucket, *_: Any) -> tuple[int, dict[str, str], bytes,
                                                                 int | None]:
        if not bucket.rules:
            raise S3Error(404, "NoSuchLifecycleConfiguration",
                          "The lifecycle configuration does not exist.")
        parts = [f'<LifecycleConfiguration xmlns="{NS}">']
        for r in bucket.rules:
            parts.append(f"<Rule><ID>{_esc(r['ID'])}</ID><Filter><Prefix>{_esc(r['Prefix'])}"
                         f"</Prefix></Filter><Status>{r['Status']}</Status>")
            if "Date" in r:
                parts.append(f"<Expiration><Date>{r['Date'].strftime('%Y-%m-%dT%H:%M:%S.000Z')}"
                             "</Date></Expiration>")
            if "AbortDays" in r:
                parts.append("<AbortIncompleteMultipartUpload><DaysAfterInitiation>"
                             f"{r['AbortDays']}</DaysAfterInitiation>"
                             "</AbortIncompleteMultipartUpload>")
            parts.append("</Rule>")
        parts.append("</LifecycleConfiguration>")
        return 200, {"Content-Type": "application/xml"}, "".join(parts).encode(), None

    def _op_GetBucketTagging(self, _a: Account, bucket: Bucket,
                             *_: Any) -> tuple[int, dict[str, str], bytes, int | None]:
        tags = "".join(f"<Tag><Key>{_esc(k)}</Key><Value>{_esc(v)}</Value></Tag>"
                       for k, v in bucket.tags.items())
        xml = f'<Tagging xmlns="{NS}"><TagSet>{tags}</TagSet></Tagging>'
        return 200, {"Content-Type": "application/xml"}, xml.encode(), None

    # ------------------------------------------------------------------ objects

    def _op_PutObject(self, _a: Account, bucket: Bucket, key: str, _q: Any, _h: Any,
                      body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        obj = StoredObject(body, datetime.now(UTC))
        bucket.objects[key] = obj
        return 200, {"ETag": obj.etag}, b"", None

    def _object(self, bucket: Bucket, key: str) -> StoredObject:
        obj = bucket.objects.get(key)
        if obj is None:
            raise S3Error(404, "NoSuchKey", "The specified key does not exist.")
        return obj

    def _op_HeadObject(self, _a: Account, bucket: Bucket, key: str,
                       *_: Any) -> tuple[int, dict[str, str], bytes, int | None]:
        obj = self._object(bucket, key)
        return 200, {"ETag": obj.etag, "Content-Length": str(len(obj.data)),
                     "Last-Modified": _http_date(obj.modified)}, b"", None

    def _op_GetObject(self, account: Account, bucket: Bucket, key: str, _q: Any,
                      headers: dict[str, str],
                      _b: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        obj = self._object(bucket, key)
        data, status = obj.data, 200
        out = {"ETag": obj.etag, "Last-Modified": _http_date(obj.modified),
               "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        wanted = headers.get("range", "")
        if wanted:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
            if not m or not (m.group(1) or m.group(2)):
                raise S3Error(416, "InvalidRange", "The requested range is not satisfiable")
            size = len(obj.data)
            if m.group(1):
                first = int(m.group(1))
                last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            else:
                first, last = max(0, size - int(m.group(2))), size - 1
            if first >= size or first > last:
                raise S3Error(416, "InvalidRange", "The requested range is not satisfiable")
            data, status = obj.data[first:last + 1], 206
            out["Content-Range"] = f"bytes {first}-{last}/{size}"
        cut, self.cut_next_get = self.cut_next_get, None
        sent = len(data) if cut is None else min(cut, len(data))
        self.bills.setdefault(account.account_id, Bill()).bytes_out += sent
        return status, out, data, cut

    def _op_DeleteObject(self, _a: Account, bucket: Bucket, key: str,
                         *_: Any) -> tuple[int, dict[str, str], bytes, int | None]:
        bucket.objects.pop(key, None)
        return 204, {}, b"", None

    def _op_DeleteObjects(self, _a: Account, bucket: Bucket, _k: str, _q: Any, _h: Any,
                          body: bytes) -> tuple[int, dict[str, str], bytes, int | None]:
        root = ET.fromstring(body)
        keys = [o.findtext(f"{{{NS}}}Key") or "" for o in root.iter(f"{{{NS}}}Object")]
        if len(keys) > MAX_DELETE:
            raise S3Error(400, "MalformedXML", f"at most {MAX_DELETE} keys per request")
        quiet = (root.findtext(f"{{{NS}}}Quiet") or "").lower() == "true"
        done = []
        for key in keys:
            bucket.objects.pop(key, None)
            done.append(f"<Deleted><Key>{_esc(key)}</Key></Deleted>")
        xml = f'<DeleteResult xmlns="{NS}">{"" if quiet else "".join(done)}</DeleteResult>'
        return 200, {"Content-Type": "application/xml"}, xml.encode(), None

    def _op_ListObjectsV2(self, _a: Account, bucket: Bucket, _k: str, query: dict[str, str],
                          *_: Any) -> tuple[int, dict[str, str], bytes, int | None]:
        prefix = query.get("prefix", "")
        try:
            max_keys = min(int(query.get("max-keys", str(MAX_KEYS))), MAX_KEYS)
        except ValueError:
            raise S3Error(400, "InvalidArgument", "max-keys must be a number") from None
        after = query.get("start-after", "")
        token = query.get("continuation-token")
        if token:
            try:
                after = base64.urlsafe_b64decode(token.encode()).decode()
            except ValueError:
                raise S3Error(400, "InvalidArgument", "The continuation token provided is "
                              "incorrect") from None
        keys = sorted(k for k in bucket.objects if k.startswith(prefix) and k > after)
        page, more = keys[:max_keys], len(keys) > max_keys
        url = query.get("encoding-type") == "url"

        def enc(text: str) -> str:
            return _esc(quote(text, safe="/") if url else text)

        parts = [f'<ListBucketResult xmlns="{NS}"><Name>{_esc(bucket.name)}</Name>'
                 f"<Prefix>{enc(prefix)}</Prefix><KeyCount>{len(page)}</KeyCount>"
                 f"<MaxKeys>{max_keys}</MaxKeys><IsTruncated>{str(more).lower()}</IsTruncated>"]
        if url:
            parts.append("<EncodingType>url</EncodingType>")
        if token:
            parts.append(f"<ContinuationToken>{_esc(token)}</ContinuationToken>")
        if more:
            nxt = base64.urlsafe_b64encode(page[-1].encode()).decode()
            parts.append(f"<NextContinuationToken>{nxt}</NextContinuationToken>")
        for k in page:
            obj = bucket.objects[k]
            parts.append(f"<Contents><Key>{enc(k)}</Key><LastModified>"
                         f"{obj.modified.strftime('%Y-%m-%dT%H:%M:%S.000Z')}</LastModified>"
                         f"<ETag>{_esc(obj.etag)}</ETag><Size>{len(obj.data)}</Size>"
                         "<StorageClass>STANDARD</StorageClass></Contents>")
        parts.append("</ListBucketResult>")
        return 200, {"Content-Type": "application/xml"}, "".join(parts).encode(), None


def _operation(method: str, key: str, query: dict[str, str]) -> str:
    if not key:
        table = {("PUT", "tagging"): "PutBucketTagging", ("GET", "tagging"): "GetBucketTagging",
                 ("PUT", "lifecycle"): "PutBucketLifecycleConfiguration",
                 ("GET", "lifecycle"): "GetBucketLifecycleConfiguration",
                 ("POST", "delete"): "DeleteObjects"}
        for (m, sub), name in table.items():
            if method == m and sub in query:
                return name
        if method == "GET" and query.get("list-type") == "2":
            return "ListObjectsV2"
        simple = {"PUT": "CreateBucket", "HEAD": "HeadBucket"}
        if method in simple and not query:
            return simple[method]
    else:
        simple = {"PUT": "PutObject", "GET": "GetObject", "HEAD": "HeadObject",
                  "DELETE": "DeleteObject"}
        if method in simple and not (set(query) & {"uploads", "uploadId", "partNumber"}):
            return simple[method]
    raise S3Error(501, "NotImplemented", f"{method} with {sorted(query)} is not in the stand-in")


def _query(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, raw.split("&")):
        k, _, v = item.partition("=")
        out[unquote(k)] = unquote(v)
    return out


def _canonical_query(raw: str) -> str:
    """Each name and value URI-encoded (RFC 3986 unreserved kept), sorted by name."""
    pairs = []
    for item in filter(None, raw.split("&")):
        k, _, v = item.partition("=")
        pairs.append((quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _http_date(when: datetime) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S GMT")


class _Handler(BaseHTTPRequestHandler):
    server_ref: S3CompatStandin
    protocol_version = "HTTP/1.0"  # one request per connection; a cut body is a close

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Expect", "").lower() == "100-continue":
            # as S3 does: the client waits for this before it sends the body
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, out, data, cut = self.server_ref.handle(self.command, self.path, headers, body)
        self.send_response(status)
        for name, value in out.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        size = out.get("Content-Length") if self.command == "HEAD" else str(len(data))
        self.send_header("Content-Length", size or "0")
        self.send_header("x-amz-request-id", uuid.uuid4().hex[:16])
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data if cut is None else data[:cut])
            self.wfile.flush()
        if cut is not None:
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _answer  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        return
