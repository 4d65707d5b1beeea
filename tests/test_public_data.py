"""Issue 32: public datasets fetched by the machine itself (``agent/public_data.py``,
``services/runs/run_data_public.py``): an http(s) file with Range on 127.0.0.1, a Hub
stand-in that checks the Bearer token, and moto's S3 server for an ``s3://`` prefix."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_aws import MotoAws  # noqa: F401 - fixtures
from fixtures_aws import aws  # noqa: F401 - fixtures
from fixtures_aws import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture
from fixtures_public_data import COMMIT  # noqa: F401
from fixtures_public_data import TOKEN  # noqa: F401
from fixtures_public_data import FileSite  # noqa: F401
from fixtures_public_data import HubSite  # noqa: F401
from fixtures_public_data import file_site  # noqa: F401
from fixtures_public_data import hub_site  # noqa: F401

from gpudesk.agent import public_data
from gpudesk.services.runs import run_data
from gpudesk.services.runs import run_data_public
from gpudesk.services.storage.errors import StorageError

REPO = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
BIG = bytes(range(256)) * (3 * MB // 256 + 17)  # a little over 3 MiB: four 1 MiB ranges


def _agent(run_dir: Path, *words: str) -> subprocess.CompletedProcess[str]:
    """``python -m gpudesk.agent fetch-data`` as the machine runs it, then a command that
    only leaves a mark (the 'script')."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-I", "-m", "gpudesk.agent", "fetch-data", "--run", str(run_dir),
         *words, "--", sys.executable, "-c",
         "import os,pathlib; pathlib.Path(os.environ['GPUDESK_DATA_DIR'] + '.started')"
         ".write_text('x')"], capture_output=True, text=True, timeout=120, env=env,
        check=False, cwd=str(REPO))


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "machine" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    return run_dir


def test_an_https_file_comes_in_parallel_ranges_checked_and_cached(
        file_site: FileSite, tmp_path: Path) -> None:
    file_site.files["/sets/shards.tar"] = BIG
    url = file_site.url("/sets/shards.tar")
    data = run_data_public.resolve(f"{url}:/mnt/shards")
    assert (data["kind"], data["name"], data["path"]) == ("url", "shards.tar", "/mnt/shards")
    assert data["size"] == str(len(BIG)) and data["etag"].strip('"') == hashlib.md5(
        BIG).hexdigest()  # noqa: S324 - the server's ETag
    assert file_site.gets("/sets/shards.tar") == []  # the desktop read the listing only

    found = public_data.listing("url", url)
    assert public_data.version(found) == data["manifest_sha256"]
    cache = tmp_path / "data-cache"
    folder, count, size = public_data.fetch(found, cache, range_size=MB, workers=4)
    assert (count, size) == (1, len(BIG))
    assert (folder / "shards.tar").read_bytes() == BIG  # not unpacked: as published
    ranges = sorted(s.range for s in file_site.gets("/sets/shards.tar"))
    assert ranges == sorted(f"bytes={a}-{min(a + MB, len(BIG)) - 1}"
                            for a in range(0, len(BIG), MB))
    assert {s.status for s in file_site.gets("/sets/shards.tar")} == {206}
    marker = json.loads((folder / public_data.MARKER).read_text())
    assert marker["files"] == [{"path": "shards.tar", "size": len(BIG),
                                "tag": data["etag"]}]
    assert folder == cache / data["manifest_sha256"]

    before = len(file_site.seen)
    assert public_data.fetch(found, cache, range_size=MB) == (folder, 0, 0)
    assert len(file_site.seen) == before  # a second run fetches nothing


def test_a_server_that_ignores_range_gives_the_file_in_one_stream(
        file_site: FileSite, tmp_path: Path) -> None:
    file_site.ranges = False
    file_site.files["/one.bin"] = BIG
    found = public_data.listing("url", file_site.url("/one.bin"))
    folder, count, _ = public_data.fetch(found, tmp_path / "c", range_size=MB)
    assert count == 1 and (folder / "one.bin").read_bytes() == BIG
    assert [s.status for s in file_site.gets("/one.bin")] == [200]  # one GET, whole


def test_plain_http_is_refused_off_the_loopback() -> None:
    for text in ("http://example.com/data.tar", "ftp://example.com/x", "https:///x"):
        with pytest.raises(public_data.SourceError, match="https:// address"):
            public_data.check_url(text)
    with pytest.raises(StorageError) as caught:
        run_data_public.resolve("http://example.com/data.tar")
    assert "over https" in str(caught.value)
    assert public_data.check_url("http://127.0.0.1:9/x") == "http://127.0.0.1:9/x"
    assert public_data.check_url("https://example.com/x") == "https://example.com/x"


def test_the_specs_path_and_the_pushed_names_stay_apart() -> None:
    split = run_data_public.split_path
    assert split("https://h:8443/f.tar") == ("https://h:8443/f.tar", "")
    assert split("https://h:8443/f.tar:/mnt/d") == ("https://h:8443/f.tar", "/mnt/d")
    assert split("hf:lab/set@v1:/data") == ("hf:lab/set@v1", "/data")
    assert split("hf://datasets/lab/set") == ("hf://datasets/lab/set", "")
    assert run_data.parse_spec("tokens:/mnt/t") == ("tokens", "/mnt/t")
    assert run_data.parse_spec("s3://b/p/:/mnt/t") == ("s3://b/p/", "/mnt/t")
    assert not run_data_public.is_public("tokens") and run_data_public.is_public("HF:a/b")
    with pytest.raises(StorageError, match="not a Hugging Face dataset"):
        run_data_public.resolve("hf://models/lab/set")


def test_a_hub_dataset_is_pinned_to_its_commit_and_the_token_stays_with_the_hub(
        hub_site: HubSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"train/000.parquet": BIG, "README.md": b"# a set\n"}
    hub_site.repos["lab/gated"] = body
    hub_site.gated.add("lab/gated")
    monkeypatch.setenv("GPUDESK_HF_ENDPOINT", hub_site.endpoint)
    with pytest.raises(StorageError) as caught:  # no token: said, with what to do
        run_data_public.resolve("hf:lab/gated", token="")
    assert "HTTP 401" in str(caught.value) and "gpudesk data hf-token" in str(caught.value)

    data = run_data_public.resolve("hf://datasets/lab/gated@main:/data", token=TOKEN)
    assert (data["kind"], data["repo"], data["revision"]) == ("hf", "lab/gated", COMMIT)
    assert data["uses_token"] == "yes" and TOKEN not in json.dumps(data)
    assert (data["files"], data["bytes"]) == ("2", str(len(BIG) + 8))

    found = public_data.listing("hf", hub_site.endpoint, repo="lab/gated",
                                revision=COMMIT, token=TOKEN)
    assert public_data.version(found) == data["manifest_sha256"]  # the pin holds
    folder, count, _ = public_data.fetch(found, tmp_path / "c", token=TOKEN, range_size=MB)
    assert count == 2
    assert {p: (folder / p).read_bytes() for p in body} == body
    assert hub_site.cdn_auth and set(hub_site.cdn_auth) == {""}  # the CDN never got it
    resolves = [s for s in hub_site.seen if "/resolve/" in s.path]
    assert {s.auth for s in resolves} == {f"Bearer {TOKEN}"}


def test_a_hub_file_that_differs_from_its_sha256_is_refused_and_never_cached(
        hub_site: HubSite, tmp_path: Path) -> None:
    hub_site.repos["lab/open"] = {"a.bin": BIG, "b.txt": b"fine"}
    hub_site.corrupt = True
    found = public_data.listing("hf", hub_site.endpoint, repo="lab/open")
    assert [s.auth for s in hub_site.seen] == [""]  # a public set: no token at all
    with pytest.raises(public_data.SourceError, match="differs from its SHA-256"):
        public_data.fetch(found, tmp_path / "c", range_size=MB)
    assert not (tmp_path / "c" / public_data.version(found)).exists()


def test_the_agent_reads_and_deletes_the_token_file_and_runs_the_script(
        hub_site: HubSite, tmp_path: Path) -> None:
    hub_site.repos["lab/gated"] = {"a.bin": BIG}
    hub_site.gated.add("lab/gated")
    run_dir = _run_dir(tmp_path)
    found = public_data.listing("hf", hub_site.endpoint, repo="lab/gated", revision="main",
                                token=TOKEN)
    version = public_data.version(found)
    token_file = run_dir / ".hf-token"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, TOKEN.encode())
    os.close(fd)
    words = ["--sha", version, "--name", "lab/gated", "--source-kind", "hf", "--source",
             hub_site.endpoint, "--repo", "lab/gated", "--revision", COMMIT,
             "--token-file", str(token_file)]
    done = _agent(run_dir, *words)
    assert done.returncode == 0, done.stderr
    where = tmp_path / "machine" / "data-cache" / version
    assert f"GPUDESK_DATA_DIR={where}" in done.stdout
    assert (where / "a.bin").read_bytes() == BIG and Path(f"{where}.started").exists()
    assert not token_file.exists()  # read, then gone before the download
    assert hub_site.token_in_ps == []  # no command line held it while files were served
    assert TOKEN not in done.stdout + done.stderr

    # the next run on this machine: its cache has the version, the Hub is asked nothing
    Path(f"{where}.started").unlink()
    served = len(hub_site.seen)
    os.close(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600))
    again = _agent(run_dir, *words)
    assert again.returncode == 0 and "nothing fetched" in again.stderr
    assert hub_site.seen[served:] == [] and not token_file.exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", ["404", "unreachable", "hub-401", "changed"])
def test_a_source_that_fails_ends_the_fetch_with_status_3_and_no_script(
        case: str, file_site: FileSite, hub_site: HubSite, tmp_path: Path) -> None:
    hub_site.repos["lab/gated"] = {"a.bin": b"x"}
    hub_site.gated.add("lab/gated")
    file_site.files["/f.bin"] = b"version one"
    words = {
        "404": ["--source-kind", "url", "--source", file_site.url("/missing.bin")],
        "unreachable": ["--source-kind", "url", "--source",
                        f"http://127.0.0.1:{_closed_port()}/f.bin"],
        "hub-401": ["--source-kind", "hf", "--source", hub_site.endpoint, "--repo",
                    "lab/gated", "--revision", COMMIT],
        "changed": ["--source-kind", "url", "--source", file_site.url("/f.bin")],
    }[case]
    said = {"404": "is not there (HTTP 404)", "unreachable": "could not be reached",
            "hub-401": "refused an anonymous read (HTTP 401)",
            "changed": "changed since the run started"}[case]
    run_dir = _run_dir(tmp_path)
    done = _agent(run_dir, "--sha", "0" * 64, "--path", str(tmp_path / "at"), *words)
    assert done.returncode == 3, done.stderr
    assert "could not be fetched" in done.stderr and said in done.stderr, done.stderr
    assert "GPUDESK_DATA_DIR" not in done.stdout
    assert not list(tmp_path.rglob("*.started")) and not (tmp_path / "at").exists()


def test_a_public_bucket_prefix_from_moto(aws: MotoAws, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="open-data")
    objects = {"corpus/v1/a.txt": b"alpha\n", "corpus/v1/deep/b.bin": BIG,
               "corpus/v1/": b"", "corpus/v2/other.txt": b"not this one"}
    for key, body in objects.items():
        s3.put_object(Bucket="open-data", Key=key, Body=body, ACL="public-read")
    s3.put_object(Bucket="open-data", Key="private/p.bin", Body=b"mine")  # no public ACL
    data = run_data_public.resolve("s3://open-data/corpus/v1:/mnt/corpus")
    assert (data["kind"], data["prefix"], data["path"]) == ("bucket", "corpus/v1/",
                                                            "/mnt/corpus")
    assert data["source_url"] == f"{aws.endpoint}/open-data/"  # path-style on 127.0.0.1
    assert (data["files"], data["bytes"]) == ("2", str(6 + len(BIG)))

    monkeypatch.setattr(public_data, "LIST_PAGE", 1)  # a listing in pages, by marker
    paged = public_data.listing("bucket", data["source_url"], prefix=data["prefix"])
    assert public_data.version(paged) == data["manifest_sha256"]
    assert [f["path"] for f in paged["files"]] == ["a.txt", "deep/b.bin"]

    run_dir = _run_dir(tmp_path)
    done = _agent(run_dir, "--sha", data["manifest_sha256"], "--source-kind", "bucket",
                  "--source", data["source_url"], "--prefix", data["prefix"])
    assert done.returncode == 0, done.stderr
    where = tmp_path / "machine" / "data-cache" / data["manifest_sha256"]
    assert (where / "a.txt").read_bytes() == b"alpha\n"
    assert (where / "deep" / "b.bin").read_bytes() == BIG
    assert not (where / "other.txt").exists()

    # an object that is not public: moto refuses the unsigned GET, the script never starts
    private = run_data_public.resolve("s3://open-data/private")
    refused = _agent(run_dir, "--sha", private["manifest_sha256"], "--source-kind",
                     "bucket", "--source", private["source_url"], "--prefix", "private/")
    assert refused.returncode == 3
    assert "refused an anonymous read (HTTP 403)" in refused.stderr, refused.stderr
    assert not (where.parent / f"{private['manifest_sha256']}.started").exists()
    assert not (where.parent / private["manifest_sha256"]).exists()

    with pytest.raises(StorageError, match="--store-region"):
        run_data_public.resolve("cos://open-data-1250000000/corpus")
    with pytest.raises(StorageError, match="holds nothing under"):
        run_data_public.resolve("s3://open-data/nothing-here")


def test_the_hub_token_goes_to_the_keyring_from_stdin_only(
        memory_keyring: object, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from gpudesk.cli import entry as cli
    from gpudesk.services.cloud.credentials import load_hf_token

    monkeypatch.setattr(sys, "stdin", io.StringIO(TOKEN + "\n"))
    assert cli.main(["data", "hf-token"]) == 0
    assert load_hf_token() == TOKEN and TOKEN not in capsys.readouterr().out
    assert cli.main(["data", "hf-token", "--forget"]) == 0
    assert load_hf_token() == ""


def test_a_fetch_cut_short_keeps_only_files_it_can_prove_whole(
        file_site: FileSite, hub_site: HubSite, tmp_path: Path) -> None:
    file_site.files["/big.bin"] = BIG
    found = public_data.listing("url", file_site.url("/big.bin"))
    part = tmp_path / "c" / (public_data.version(found) + ".part")
    part.mkdir(parents=True)
    with open(part / "big.bin", "wb") as fh:  # full-size, as a cut-short fetch leaves it
        fh.truncate(len(BIG))
    folder, count, _ = public_data.fetch(found, tmp_path / "c", range_size=MB)
    assert count == 1 and (folder / "big.bin").read_bytes() == BIG  # fetched again

    hub_site.repos["lab/open"] = {"a.bin": BIG, "b.txt": b"fine"}
    found = public_data.listing("hf", hub_site.endpoint, repo="lab/open")
    part = tmp_path / "c" / (public_data.version(found) + ".part")
    part.mkdir(parents=True)
    (part / "a.bin").write_bytes(BIG)  # its SHA-256 proves it whole: not fetched again
    folder, count, size = public_data.fetch(found, tmp_path / "c", range_size=MB)
    assert (count, size) == (1, 4) and (folder / "a.bin").read_bytes() == BIG
