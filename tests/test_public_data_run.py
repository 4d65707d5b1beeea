"""Issue 32, whole process from the documented CLI: ``gpudesk run --data hf:ORG/NAME`` on a
real sshd on 127.0.0.1, the dataset on a stand-in Hub that checks the Bearer token. The
machine fetches it itself (no bucket at all); the token from the keyring reaches it only
as a short-lived file: never in any process's command line while files are served, in the
run's record, its log, or what the CLI printed; a start that fails deletes the file."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture
from fixtures_public_data import COMMIT  # noqa: F401
from fixtures_public_data import TOKEN  # noqa: F401
from fixtures_public_data import FileSite  # noqa: F401
from fixtures_public_data import HubSite  # noqa: F401
from fixtures_public_data import file_site  # noqa: F401
from fixtures_public_data import hub_site  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401 - fixture
from fixtures_sshd import sshd  # noqa: F401 - fixture
from test_run_data_resume import READS_DATA
from test_run_store_resume import _kill_tree  # noqa: F401 - fixture
from test_run_store_resume import machines  # noqa: F401 - fixture
from test_runs import PYTHON
from test_runs import gpudesk
from test_runs import run_cmd
from test_runs import training_project
from test_runs import wait_for

from gpudesk.agent.runs import read_pid
from gpudesk.services.cloud.credentials import save_hf_token
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs.run_data import dataset_line

FILES = {"train/000.bin": bytes(range(256)) * 40, "README.md": b"# gated\n"}


@pytest.fixture
def machine(tmp_path: Path, hub_site: HubSite,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("GPUDESK_HF_ENDPOINT", hub_site.endpoint)
    for name in ("GPUDESK_AMP", "GPUDESK_CHECKPOINT_EVERY_MIN", "GPUDESK_RUN_DIR",
                 "GPUDESK_STORE_ENDPOINT", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    hub_site.repos["lab/gated"] = FILES
    hub_site.gated.add("lab/gated")
    root = tmp_path / "machine"
    yield root
    _kill_tree(read_pid(root / "agent" / "data" / "agent.pid"))
    for pid_file in (root / "runs").glob("*/pid"):
        _kill_tree(read_pid(pid_file))


def test_a_run_reads_a_gated_hub_dataset_with_the_token_as_a_short_lived_file(
        sshd: SshdServer, hub_site: HubSite, machine: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], memory_keyring: object) -> None:
    project = training_project(tmp_path / "proj", {"reads_data.py": READS_DATA})
    out_dir = tmp_path / "out"
    argv = run_cmd(sshd, machine, project, "--accept-new", "--data", "hf:lab/gated",
                   "--", "reads_data.py", "--out", str(out_dir), "--max-steps", "2",
                   "--ckpt-steps", "2")

    assert gpudesk(*argv) == 1  # no token in the keyring: the Hub's 401, said; no start
    err = capsys.readouterr().err
    assert "HTTP 401" in err and "gpudesk data hf-token" in err, err
    assert not (machine / "runs").exists()

    save_hf_token(TOKEN)
    assert gpudesk(*argv) == 0
    said = capsys.readouterr()
    assert "the dataset lab/gated (version " in said.err, said.err
    assert "fetches it from hf:lab/gated itself" in said.err
    run_id = said.out.splitlines()[0]
    record = runs.RunRecord.load(run_id)
    assert record.data["revision"] == COMMIT and record.store_uri == ""
    assert dataset_line(record.data) == (
        f"Data: the dataset lab/gated, version {record.data['manifest_sha256'][:12]}, "
        "from hf:lab/gated")
    version = record.data["manifest_sha256"]
    cache = machine / "data-cache" / version
    (seen,) = [json.loads(p.read_text()) for p in out_dir.glob("data-seen-*.json")]
    assert seen == {"dir": str(cache), "files": {
        rel: hashlib.sha256(body).hexdigest() for rel, body in FILES.items()}}
    assert "fetched from its source: 2 files" in said.out, said.out[-2000:]

    # the token: at the Hub only, and nowhere else
    assert {s.auth for s in hub_site.seen if s.path.startswith("/datasets/")} == {
        f"Bearer {TOKEN}"}
    assert set(hub_site.cdn_auth) == {""}
    assert hub_site.token_in_ps == []  # no command line (ps) held it during the download
    run_dir = Path(record.main.run_dir)
    assert not (run_dir / ".hf-token").exists()
    assert TOKEN not in runs.RunRecord.path_of(run_id).read_text()
    assert TOKEN not in said.out + said.err
    for path in [*machine.rglob("*")]:
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert TOKEN.encode() not in path.read_bytes(), path


def test_a_start_that_fails_deletes_the_token_file(
        sshd: SshdServer, hub_site: HubSite, machine: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], memory_keyring: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    save_hf_token(TOKEN)
    written: list[tuple[Path, int, bytes]] = []

    def refuse(conn: object, spec: dict[str, object], python: str) -> dict[str, object]:
        written.extend((p, p.stat().st_mode & 0o777, p.read_bytes())
                       for p in Path(str(spec["run_dir"])).glob(".hf-token"))
        raise RuntimeError("the launcher did not answer")

    monkeypatch.setattr(runs, "start", refuse)
    project = training_project(tmp_path / "proj")
    with pytest.raises(RuntimeError, match="did not answer"):
        gpudesk(*run_cmd(sshd, machine, project, "--accept-new", "--data",
                         "hf:lab/gated:/tmp/unused", "--", "train.py", "--out",
                         str(tmp_path / "o")))
    ((path, mode, text),) = written  # there at the start, for the agent alone
    assert (mode, text) == (0o600, TOKEN.encode())
    assert not path.exists()  # deleted by the desktop: the agent never read it


def test_a_keep_alive_replacement_fetches_a_public_source_at_first_boot(
        bucket: Bucket, machines: tuple[Path, Path], file_site: FileSite, tmp_path: Path,
        memory_keyring: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """The group's next machine, with no desktop and no token: run.json names the https
    file's version; the replacement fetches it from the source before the run starts."""
    from fixtures_agent_store import write_sts_file

    from gpudesk.agent import replacement
    from gpudesk.agent.store import Store
    from gpudesk.agent.store import StoreConfig
    from gpudesk.services.cloud.providers.base import Credentials
    from gpudesk.services.runs import run_data_public
    from gpudesk.services.runs import run_package
    from gpudesk.services.runs.shipped_source import launcher_source
    from gpudesk.services.storage.access import StoreAccess
    from gpudesk.services.storage.clients import make_client
    from gpudesk.services.storage.uri import StoreUri

    machine_a, machine_b = machines
    body = bytes(range(256)) * 500
    file_site.files["/sets/tokens.bin"] = body
    data = run_data_public.resolve(file_site.url("/sets/tokens.bin"))
    project = training_project(tmp_path / "proj", {"reads_data.py": READS_DATA})
    out, run_id = tmp_path / "out", runs.new_run_id("proj")
    request = runs.RunRequest(project, "reads_data.py", ["--out", str(out), "--max-steps",
                                                          "2", "--ckpt-steps", "2"],
                              nproc=1, python=PYTHON, root=str(machine_b), run_id=run_id,
                              data=data)
    store = StoreUri("aws", bucket.name)
    access = StoreAccess(store, "us-east-1", run_id, role="gpudesk-run")
    package = run_package.write_package(
        access, request, client=make_client("aws", "us-east-1", Credentials(
            "aws", "AKIADESKTOP000000001", "desktop-secret")), keep=2)
    assert package.run_json["data"] == data
    (machine_b / "agent").mkdir(parents=True)
    (machine_b / "agent" / replacement.KEEP_ALIVE_FILE).write_text(
        json.dumps(package.keep_alive().to_json()))
    keys = write_sts_file(tmp_path / "role-keys.json")
    machine = Store(StoreConfig("aws", "us-east-1", bucket.name, f"runs/{run_id}/",
                                endpoint=bucket.moto.endpoint, addressing="path",
                                credentials_file=str(keys)))
    launcher = tmp_path / run_package.LAUNCHER  # the bundle's: run_folder.py inlined
    launcher.write_text(launcher_source(), encoding="utf-8")
    monkeypatch.setattr(replacement, "launcher_path", lambda: launcher)
    outcome = replacement.resume(machine_b, store=machine, cloud_id="i-0b")
    assert outcome.state == "started", outcome
    wait_for(lambda: (out / "data-seen-0.json").exists(), "the script reading its data")
    (seen,) = [json.loads(p.read_text()) for p in out.glob("data-seen-*.json")]
    assert seen == {"dir": str(machine_b / "data-cache" / data["manifest_sha256"]),
                    "files": {"tokens.bin": hashlib.sha256(body).hexdigest()}}
    assert [s.status for s in file_site.gets("/sets/tokens.bin")] == [206]

    # the source changed since the run started: the next machine refuses it, no script
    file_site.files["/sets/tokens.bin"] = body + b"more"
    (machine_a / "agent").mkdir(parents=True)
    (machine_a / "agent" / replacement.KEEP_ALIVE_FILE).write_text(
        json.dumps(package.keep_alive().to_json()))
    with pytest.raises(replacement.ReplacementError, match="changed since the run started"):
        replacement.resume(machine_a, store=machine, cloud_id="i-0c")
    assert not list((machine_a / "runs").glob("*/pid"))
