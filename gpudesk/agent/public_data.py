"""A public dataset, fetched by the machine itself: an https file, a bucket prefix, a Hub id.

Issue 32: data that is already on the internet never goes through the laptop's uplink.
The desktop reads only the source's *listing* (names, sizes, ETags or the Hub's commit;
metadata, a few KB) to pin the version the run names; the machine fetches the bytes.
Both sides call :func:`listing` from this module (standard library only, like the whole
agent), so they compute the same :func:`version` from the same listing by construction.

Three kinds of source (the desktop turns what the user typed into these words):

- ``url``: one file, ``https://host/path/file``. Plain ``http://`` is refused except on
  the loopback (tests, an SSH tunnel): a dataset fetched in the clear could be changed on
  the way, and the hash it is checked against would come over the same wire. An archive
  (``.tar``, ``.zip``) is *not* unpacked: the script gets the file as published, at
  ``$GPUDESK_DATA_DIR/<file name>``, and unpacks it as it knows best.
- ``bucket``: every object under a prefix of a bucket that allows anonymous reads, read
  with unsigned ListObjects and GETs at ``BASE`` (the bucket's URL, path-style or
  virtual-hosted, which the desktop works out from ``s3://``/``cos://``/``oss://`` and
  the region). The run's short-lived keys reach only its own bucket, and the account's
  keys never reach a machine, so a private bucket is read by pushing it as a dataset.
- ``hf``: a Hugging Face dataset repository at one commit: its file list from
  ``ENDPOINT/api/datasets/ORG/NAME/revision/REV?blobs=true`` and each file from
  ``ENDPOINT/datasets/ORG/NAME/resolve/COMMIT/PATH``. A token, when given, is sent as
  ``Authorization: Bearer`` to the Hub only: a redirect to another host (the Hub's CDN)
  goes without it.

Files come with parallel ranged GETs where the server answers ``206``, in one stream
where it ignores ``Range``; each file's size is checked, and its SHA-256 where the
listing names one (the Hub's LFS files), as soon as the file is whole. The folder is
cached at
``<root>/data-cache/<version>/`` like a pushed dataset, so a second run fetches nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from typing import Dict
from typing import List
from typing import Optional
from typing import Tuple

from .file_parts import At
from .file_parts import sha256_file

KINDS = ("url", "bucket", "hf")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MARKER = ".gpudesk-source.json"  # written last: the cached folder is whole
RANGE = 8 * 1024 * 1024
WORKERS = 16
CHUNK = 1024 * 1024
TIMEOUT = 60.0
LIST_PAGE = 1000  # keys per listing page (the most S3, COS and OSS give)
MAX_REDIRECTS = 5
_S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class SourceError(Exception):
    """A source that cannot be read; the message names the URL, never a token."""


def check_url(url: str) -> str:
    """``url`` when it is https (or http on the loopback); raises SourceError."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and (parts.hostname or "") in LOOPBACK:
        return url
    raise SourceError(f"{url} is not an https:// address; a dataset is fetched over https "
                      "only (plain http only from 127.0.0.1)")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None  # followed by _open, which decides where the token goes


_OPENER = urllib.request.build_opener(_NoRedirect)


def _open(url: str, *, token: str = "", headers: Optional[Dict[str, str]] = None,
          method: str = "GET", timeout: float = TIMEOUT) -> Tuple[Any, str]:
    """(the response, the URL that answered); redirects followed, the token only sent to
    the host it was given for. Raises SourceError with the status and the URL."""
    first_host = urllib.parse.urlsplit(url).netloc
    for _ in range(MAX_REDIRECTS + 1):
        check_url(url)
        sent = dict(headers or {})
        if token and urllib.parse.urlsplit(url).netloc == first_host:
            sent["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(url, headers=sent, method=method)
        try:
            return _OPENER.open(req, timeout=timeout), url
        except urllib.error.HTTPError as exc:
            where = exc.headers.get("Location") if exc.headers else None
            if exc.code in (301, 302, 303, 307, 308) and where:
                exc.close()
                url = urllib.parse.urljoin(url, where)
                continue
            exc.close()
            raise SourceError(_http_words(exc.code, url, bool(token))) from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            raise SourceError(f"{url} could not be reached ({reason})") from None
    raise SourceError(f"{url} redirects more than {MAX_REDIRECTS} times")


def _http_words(code: int, url: str, had_token: bool) -> str:
    if code in (401, 403):
        if had_token:
            return (f"{url} refused the Hugging Face token (HTTP {code}): the token cannot "
                    "read this dataset; accept its terms on the Hub or use another token")
        return (f"{url} refused an anonymous read (HTTP {code}): the source is not public; "
                "for a gated Hugging Face dataset save a token with "
                "`gpudesk data hf-token`, for a private bucket push the data as a dataset")
    if code == 404:
        return f"{url} is not there (HTTP 404)"
    return f"{url} answered HTTP {code}"


def _read_json(url: str, token: str) -> Any:
    reply, _ = _open(url, token=token, headers={"Accept": "application/json"})
    with reply:
        raw = reply.read(50_000_000)
    try:
        return json.loads(raw)
    except ValueError:
        raise SourceError(f"{url} did not answer JSON") from None


# ------------------------------------------------------------------ listings

def _listing_url(url: str) -> Dict[str, Any]:
    check_url(url)
    name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])
    if not name or name in (".", ".."):
        raise SourceError(f"{url} names no file: give the address of one file")
    reply, _ = _open(url, method="HEAD")
    with reply:
        size = reply.headers.get("Content-Length")
        tag = reply.headers.get("ETag") or reply.headers.get("Last-Modified") or ""
    if size is None or not size.isdigit():
        raise SourceError(f"{url} does not say its size (no Content-Length)")
    return {"source": {"kind": "url", "url": url},
            "files": [{"path": name, "url": url, "size": int(size), "tag": tag}]}


def _listing_bucket(base: str, prefix: str) -> Dict[str, Any]:
    check_url(base)
    base = base if base.endswith("/") else base + "/"
    files: List[Dict[str, Any]] = []
    marker = ""
    while True:  # ListObjects (version 1, by marker): S3, COS and OSS all answer it
        query = {"prefix": prefix, "max-keys": str(LIST_PAGE)}
        if marker:
            query["marker"] = marker
        url = base + "?" + urllib.parse.urlencode(query)
        reply, _ = _open(url)
        with reply:
            raw = reply.read()
        try:
            root = ET.fromstring(raw)
        except ET.ParseError:
            raise SourceError(f"{url} did not answer a bucket listing") from None
        keys = []
        for item in root.iter(_S3_NS + "Contents"):
            key = item.findtext(_S3_NS + "Key") or ""
            keys.append(key)
            rel = key[len(prefix):].lstrip("/")
            if not rel or key.endswith("/"):
                continue  # a folder marker
            files.append({"path": rel, "url": base + urllib.parse.quote(key),
                          "size": int(item.findtext(_S3_NS + "Size") or 0),
                          "tag": (item.findtext(_S3_NS + "ETag") or "").strip('"')})
        marker = root.findtext(_S3_NS + "NextMarker") or (keys[-1] if keys else "")
        if (root.findtext(_S3_NS + "IsTruncated") or "").lower() != "true" or not marker:
            break
    if not files:
        raise SourceError(f"{base} holds nothing under '{prefix}'")
    return {"source": {"kind": "bucket", "url": base, "prefix": prefix}, "files": files}


def _listing_hf(endpoint: str, repo: str, revision: str, token: str) -> Dict[str, Any]:
    endpoint = check_url(endpoint.rstrip("/"))
    rev = urllib.parse.quote(revision, safe="")
    info = _read_json(f"{endpoint}/api/datasets/{repo}/revision/{rev}?blobs=true", token)
    commit = str(info.get("sha") or "") if isinstance(info, dict) else ""
    if not commit:
        raise SourceError(f"{endpoint} named no commit for {repo}@{revision}")
    files: List[Dict[str, Any]] = []
    for sib in info.get("siblings") or []:
        rel = str(sib.get("rfilename") or "")
        if not rel:
            continue
        lfs = sib.get("lfs") or {}
        size = lfs.get("size", sib.get("size"))
        if size is None:
            raise SourceError(f"{endpoint} did not say the size of {repo}/{rel}")
        entry = {"path": rel, "size": int(size), "tag": str(lfs.get("sha256") or
                                                           sib.get("blobId") or ""),
                 "url": f"{endpoint}/datasets/{repo}/resolve/{commit}/"
                        f"{urllib.parse.quote(rel)}"}
        if lfs.get("sha256"):
            entry["sha256"] = str(lfs["sha256"])
        files.append(entry)
    if not files:
        raise SourceError(f"{repo}@{revision} holds no files")
    return {"source": {"kind": "hf", "url": endpoint, "repo": repo, "revision": commit},
            "files": files}


def listing(kind: str, url: str, *, prefix: str = "", repo: str = "", revision: str = "",
            token: str = "") -> Dict[str, Any]:
    """{"source": what names it, "files": [{"path", "url", "size", "tag"[, "sha256"]}]}:
    names, sizes and versions only (blocking; a few small requests). Raises SourceError."""
    if kind == "url":
        result = _listing_url(url)
    elif kind == "bucket":
        result = _listing_bucket(url, prefix)
    elif kind == "hf":
        result = _listing_hf(url, repo, revision or "main", token)
    else:
        raise SourceError(f"unknown kind of source {kind!r}")
    for f in result["files"]:
        rel = str(f["path"])
        if rel.startswith("/") or ".." in rel.split("/"):
            raise SourceError(f"the source names a path outside the dataset: {rel}")
    result["files"].sort(key=lambda f: f["path"])
    return result


def version(found: Dict[str, Any]) -> str:
    """The SHA-256 of what the listing names (where from, every path, size and tag): the
    version a run's record keeps and the machine's cache is keyed by."""
    files = [[f["path"], int(f["size"]), f.get("tag", "")] for f in found["files"]]
    text = json.dumps({"source": found["source"], "files": files}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------ the fetch

def _copy(reply: Any, out: At, limit: int) -> None:
    while out.written < limit:
        chunk = reply.read(min(CHUNK, limit - out.written))
        if not chunk:
            break
        out.write(chunk)


def fetch(found: Dict[str, Any], cache: Path, *, token: str = "", workers: int = WORKERS,
          range_size: int = RANGE) -> Tuple[Path, int, int]:
    """(the folder, files fetched, bytes fetched) for ``listing``'s ``found``; nothing
    fetched when the cache holds its version. Raises SourceError (or OSError)."""
    sha = version(found)
    done = cache / sha
    if (done / MARKER).is_file():
        return done, 0, 0
    part = cache / (sha + ".part")
    part.mkdir(parents=True, exist_ok=True)
    wanted: List[Tuple[Dict[str, Any], Path]] = []
    for f in found["files"]:
        dest = part / str(f["path"])
        size = int(f["size"])
        if "sha256" in f and dest.is_file() and dest.stat().st_size == size and \
                sha256_file(dest) == f["sha256"]:
            continue  # a fetch cut short already brought it (a file without a hash is
            # fetched again: it was made full-size before its bytes came)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as fh:
            fh.truncate(size)
        wanted.append((f, dest))
    need = sum(int(f["size"]) for f, _ in wanted)
    free = shutil.disk_usage(str(part)).free
    if need > free:
        raise SourceError(f"the dataset needs {need} bytes more on this machine's disk, but "
                          f"{part.parent} has {free} bytes free; give the machine a larger "
                          "disk or free space there")
    fetched = [0]
    lock = threading.Lock()
    rest: List[Tuple[str, str, Dict[str, Any], Path, int, int]] = []
    pieces: Dict[Path, int] = {}  # ranges still to come, per file

    def get(url: str, dest: Path, first: int, last: int, origin: str) -> Tuple[int, str, int]:
        """GET bytes first..last into dest; (status, the URL that answered, bytes)."""
        use = token if urllib.parse.urlsplit(url).netloc == urllib.parse.urlsplit(
            origin).netloc else ""
        reply, answered = _open(url, token=use, headers={"Range": f"bytes={first}-{last}"})
        fd = os.open(str(dest), os.O_WRONLY)
        try:
            with reply:
                code = reply.status
                out = At(fd, first if code == 206 else 0)
                _copy(reply, out, last - first + 1 if code == 206 else 1 << 62)
        finally:
            os.close(fd)
        with lock:
            fetched[0] += out.written
        return code, answered, out.written

    def check(f: Dict[str, Any], dest: Path) -> None:
        """A whole file against the listing: its size, and its SHA-256 where the listing
        names one (checked here, while other files still come: hashlib lets go of the
        GIL). Without one there is nothing to check a hash against: the version is the
        listing's ETags and sizes."""
        if dest.stat().st_size != int(f["size"]):
            raise SourceError(f"{f['path']} has another size than the listing says")
        if "sha256" in f and sha256_file(dest) != f["sha256"]:
            raise SourceError(f"{f['path']} differs from its SHA-256 in the listing")

    def probe(item: Tuple[Dict[str, Any], Path]) -> None:
        f, dest = item
        size = int(f["size"])
        url = str(f["url"])
        if size:
            code, answered, got = get(url, dest, 0, min(size, range_size) - 1, url)
            if code == 206:
                extra = [(answered, url, f, dest, start, min(size, start + range_size) - 1)
                         for start in range(range_size, size, range_size)]
                if extra:
                    with lock:
                        pieces[dest] = len(extra)
                        rest.extend(extra)
                    return
            elif got != size:  # one stream: the server ignored Range
                raise SourceError(f"{url} sent {got} bytes, the listing says {size}")
        check(f, dest)

    def more(task: Tuple[str, str, Dict[str, Any], Path, int, int]) -> None:
        url, origin, f, dest, first, last = task
        code, _, got = get(url, dest, first, last, origin)
        if code != 206 or got != last - first + 1:
            raise SourceError(f"{origin} bytes {first}-{last} came with {got} bytes "
                              f"(HTTP {code})")
        with lock:
            pieces[dest] -= 1
            whole = pieces[dest] == 0
        if whole:
            check(f, dest)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(probe, wanted))
        list(pool.map(more, rest))
    for f in found["files"]:  # every file, those a fetch cut short brought too
        if (part / str(f["path"])).stat().st_size != int(f["size"]):
            raise SourceError(f"{f['path']} has another size than the listing says")
    record = {"version": sha, "source": found["source"],
              "files": [{k: f[k] for k in ("path", "size", "tag", "sha256") if k in f}
                        for f in found["files"]]}
    (part / MARKER).write_text(json.dumps(record, indent=1, sort_keys=True))
    if done.exists():
        shutil.rmtree(done)
    os.replace(part, done)
    return done, len(wanted), fetched[0]


def read_token(path: str) -> str:
    """The token in the short-lived file ``path``, which is deleted at once; "" without one.
    The desktop wrote it (mode 0600) into the run's folder just before the start."""
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read().strip()
    except FileNotFoundError:
        return ""
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return text
