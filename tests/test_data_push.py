"""Datasets (issue 32) from the documented CLI against moto's S3 server: ``gpudesk data push``
sends each file once (by content), writes the manifest last, lists only complete datasets;
bad input is refused with nothing listed; the machine's ``fetch-data`` fetches a dataset in
parallel ranged GETs, checks it against the manifest and caches it by version."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import hashlib
import http.client
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture

from gpudesk.agent import data_fetch
from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreError
from gpudesk.agent.uploader import load_config
from gpudesk.cli.entry import main
from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.storage import datasets


def gpudesk(*argv: str) -> int:
    return main(list(argv))


def make_folder(root: Path, files: dict[str, bytes]) -> Path:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return root


FILES = {"train/a.bin": b"a" * 5000, "train/b.bin": bytes(range(256)) * 40,
         "labels.csv": b"x,y\n1,2\n", "same-as-a.bin": b"a" * 5000, "empty.txt": b""}


@pytest.fixture
def account(bucket: Bucket, memory_keyring: object) -> Bucket:
    save_credentials(bucket.moto.credentials)
    return bucket


def _blobs(bucket: Bucket) -> list[str]:
    return bucket.keys("lab/data/blobs/")


def test_push_sends_each_content_once_and_lists_only_complete_datasets(
        account: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path / "ds", FILES)
    store = f"s3://{account.name}/lab"
    assert gpudesk("data", "push", str(folder), "mnist", "--store", store, "--json") == 0
    out = capsys.readouterr()
    pushed = json.loads(out.out)
    assert (pushed["files"], pushed["bytes"]) == (5, sum(len(b) for b in FILES.values()))
    assert pushed["region"] == "us-east-1" and pushed["source"].endswith(str(folder))
    assert "sent (" in out.err and "/s" in out.err
    # four distinct contents (a.bin twice), each under its SHA-256
    assert _blobs(account) == sorted(f"lab/data/blobs/{hashlib.sha256(b).hexdigest()}"
                                     for b in set(FILES.values()))
    raw = account.read("lab/data/sets/mnist/manifest.json")
    assert hashlib.sha256(raw).hexdigest() == pushed["manifest_sha256"]

    # nothing changed: nothing sent again
    assert gpudesk("data", "push", str(folder), "mnist", "--json") == 0
    again = capsys.readouterr()
    assert "0 B of 0 B sent (0 files" in again.err and "5 files already in the bucket" \
        in again.err, again.err
    # one file changed: only it is sent
    (folder / "labels.csv").write_bytes(b"x,y\n3,4\n")
    assert gpudesk("data", "push", str(folder), "mnist") == 0
    assert "(1 files" in capsys.readouterr().err
    assert len(_blobs(account)) == 5

    assert gpudesk("data", "ls", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["name"], listed["files"], listed["region"]) == ("mnist", 5, "us-east-1")

    # rm asks first; "n" keeps it, --yes removes the manifest and the unused blobs
    import builtins

    answers = iter(["n"])
    original = builtins.input
    builtins.input = lambda _prompt="": next(answers)  # type: ignore[assignment]
    try:
        assert gpudesk("data", "rm", "mnist") == 1
    finally:
        builtins.input = original
    assert "nothing removed" in capsys.readouterr().err
    # the data area's size is in the month's bucket spend, like a run's folder
    from gpudesk.services.storage import usage

    noted = usage.load()[f"data:s3://{account.name}/lab/"]
    assert (noted.cloud, noted.region, noted.uri) == ("aws", "us-east-1",
                                                      f"s3://{account.name}/lab/data/")
    blob_bytes = sum(len(b) for b in set(FILES.values())) + len(b"x,y\n3,4\n")
    assert noted.samples[-1].bytes == blob_bytes + len(
        account.read("lab/data/sets/mnist/manifest.json"))
    assert sum(r.tier1 for r in noted.own_requests) == (3 + 4) + (3 + 0) + (3 + 1)
    assert gpudesk("data", "rm", "mnist", "--yes") == 0
    capsys.readouterr()
    assert account.keys("lab/data/") == []
    assert usage.load()[f"data:s3://{account.name}/lab/"].samples[-1].bytes == 0
    assert gpudesk("data", "ls", "--store", store, "--json") == 0
    assert json.loads(capsys.readouterr().out) == []


def test_bad_input_is_refused_and_nothing_is_listed(
        account: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"s3://{account.name}/lab"
    assert gpudesk("data", "push", str(tmp_path / "missing"), "ds", "--store", store) == 1
    assert "missing is not a folder" in capsys.readouterr().err
    assert gpudesk("data", "push", str(make_folder(tmp_path / "a", FILES)), "bad/name",
                   "--store", store) == 1
    assert "is not a dataset name" in capsys.readouterr().err

    assert gpudesk("data", "push", str(tmp_path / "a"), "ds", "--store", store) == 0
    other = make_folder(tmp_path / "b", {"x.bin": b"other"})
    assert gpudesk("data", "push", str(other), "ds", "--store", store) == 1
    err = capsys.readouterr().err
    assert "The name ds is taken by another dataset" in err and str(tmp_path / "a") in err
    assert gpudesk("data", "push", str(tmp_path / "a"), "ds", "--store",
                   "s3://no-such-lab-bucket/x") == 1
    assert "The bucket no-such-lab-bucket does not exist" in capsys.readouterr().err


class _RefusingPuts(http.server.BaseHTTPRequestHandler):
    """Forwards to moto, but refuses every PutObject of a blob after the first, as a bucket
    whose policy refuses the keys does (403 AccessDenied)."""

    upstream = ""
    puts = 0

    def _forward(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        path = urllib.parse.urlsplit(self.path).path
        if self.command == "PUT" and "/data/blobs/" in path:
            type(self).puts += 1
            if type(self).puts > 1:
                xml = (b"<?xml version='1.0'?><Error><Code>AccessDenied</Code>"
                       b"<Message>Access Denied</Message></Error>")
                self.send_response(403)
                self.send_header("content-length", str(len(xml)))
                self.end_headers()
                self.wfile.write(xml)
                return
        url = urllib.parse.urlsplit(self.upstream)
        conn = http.client.HTTPConnection(url.netloc)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing(account: Bucket, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    _RefusingPuts.upstream, _RefusingPuts.puts = account.moto.endpoint, 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RefusingPuts)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_port}")
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_a_bucket_refusing_the_keys_midway_leaves_nothing_listed(
        account: Bucket, refusing: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path / "ds", FILES)
    assert gpudesk("data", "push", str(folder), "ds", "--store",
                   f"s3://{account.name}/lab") == 1
    err = capsys.readouterr().err
    assert "s3:PutObject was denied" in err, err
    assert account.keys("lab/data/sets/") == []  # no manifest: not a dataset
    assert gpudesk("data", "ls", "--json") == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_cancelled_push_lists_nothing_and_the_next_push_reuses_what_was_sent(
        account: Bucket, tmp_path: Path) -> None:
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.uri import parse_uri

    folder = make_folder(tmp_path / "ds", {f"f{i:03d}.bin": bytes([i]) * 1000
                                           for i in range(40)})
    store, client = parse_uri(f"s3://{account.name}/lab"), account_client("aws", "us-east-1")
    cancel = threading.Event()

    class Cancelling:
        """The client, with the user's Cancel pressed after the fifth file went up."""

        puts = 0

        def __getattr__(self, name: str) -> object:
            return getattr(client, name)

        def put_object(self, **kw: object) -> object:
            answer = client.put_object(**kw)
            Cancelling.puts += 1
            if Cancelling.puts == 5:
                cancel.set()
            return answer

    with pytest.raises(datasets.StorageError, match="was cancelled"):
        datasets.push(Cancelling(), store, "us-east-1", folder, "ds", cancel=cancel,
                      workers=2)
    sent = len(_blobs(account))
    assert 5 <= sent < 40 and account.keys("lab/data/sets/") == []
    seen: list[datasets.Progress] = []
    done = datasets.push(client, store, "us-east-1", folder, "ds", progress=seen.append)
    assert len(done.files) == 40 and seen[-1].files_skipped == sent
    assert seen[-1].files_sent == 40 - sent


def test_the_machine_fetches_in_ranges_checks_hashes_and_caches_by_version(
        account: Bucket, tmp_path: Path) -> None:
    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.uri import parse_uri

    big = bytes(range(256)) * 4096 + b"tail"  # 1 MiB + 4: many ranges of 64 KiB
    folder = make_folder(tmp_path / "ds", {**FILES, "big/shard.bin": big})
    store = parse_uri(f"s3://{account.name}/lab")
    pushed = datasets.push(account_client("aws", "us-east-1"), store, "us-east-1", folder,
                           "ds")
    config, _ = load_config(account.run("r1"))
    machine = Store(config)
    ranges: list[str] = []
    plain = machine.request

    def counted(method: str, key: str = "", **kw: object) -> object:
        if "range" in (kw.get("headers") or {}):  # type: ignore[operator]
            ranges.append(key)
        return plain(method, key, **kw)  # type: ignore[arg-type]

    machine.request = counted  # type: ignore[method-assign,assignment]
    cache = tmp_path / "machine" / data_fetch.CACHE
    where, count, size = data_fetch.fetch(machine, pushed.manifest_key,
                                          pushed.manifest_sha256, cache,
                                          range_size=64 * 1024)
    assert (count, size) == (6, len(big) + sum(len(b) for b in FILES.values()))
    assert where == cache / pushed.manifest_sha256
    for rel, body in {**FILES, "big/shard.bin": big}.items():
        assert (where / rel).read_bytes() == body, rel
    assert len(ranges) == 17 + 4  # the big file in 64 KiB ranges, one each for the others
    # a second run on this machine fetches nothing
    assert data_fetch.fetch(machine, pushed.manifest_key, pushed.manifest_sha256,
                            cache)[1:] == (0, 0)
    # another version than the run names is refused
    with pytest.raises(StoreError, match="another version"):
        data_fetch.fetch(machine, pushed.manifest_key, "0" * 64, cache)
    # a blob changed in the bucket is caught by its hash; nothing lands in the cache
    sha = hashlib.sha256(b"x,y\n1,2\n").hexdigest()
    account.s3.put_object(Bucket=account.name, Key=f"lab/data/blobs/{sha}", Body=b"x,y\n9,9\n")
    other = tmp_path / "machine-2" / data_fetch.CACHE
    with pytest.raises(StoreError, match="labels.csv differs from its SHA-256"):
        data_fetch.fetch(machine, pushed.manifest_key, pushed.manifest_sha256, other)
    assert not (other / pushed.manifest_sha256).exists()


def test_a_disk_too_small_for_the_data_is_refused_before_a_byte_is_fetched(
        account: Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    from collections import namedtuple

    from gpudesk.services.storage.clients import account_client
    from gpudesk.services.storage.uri import parse_uri

    pushed = datasets.push(account_client("aws", "us-east-1"),
                           parse_uri(f"s3://{account.name}/lab"), "us-east-1",
                           make_folder(tmp_path / "ds", FILES), "ds")
    config, _ = load_config(account.run("r1"))
    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    monkeypatch.setattr(data_fetch.shutil, "disk_usage",
                        lambda p: usage(*real(p)[:2], 1000))  # a nearly full disk
    fetched: list[str] = []
    machine = Store(config)
    plain = machine.request

    def counted(method: str, key: str = "", **kw: object) -> object:
        fetched.append(key)
        return plain(method, key, **kw)  # type: ignore[arg-type]

    machine.request = counted  # type: ignore[method-assign,assignment]
    cache = tmp_path / "machine" / data_fetch.CACHE
    need = sum(len(b) for b in FILES.values())
    with pytest.raises(StoreError, match=f"needs {need} bytes more on this machine's disk, "
                                         "but .* has 1000 bytes free"):
        data_fetch.fetch(machine, pushed.manifest_key, pushed.manifest_sha256, cache)
    assert fetched == [pushed.manifest_key]  # the manifest only, no file
    assert not (cache / pushed.manifest_sha256).exists()
