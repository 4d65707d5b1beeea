"""``gpudesk sync`` as a user runs it — a whole process — takes the quick path: it syncs,
and it does not import what other verbs need (the keyring, the cloud glue, sizing), which
would cost more than a small sync (issue 14: ≤ 1.5x rsync, benchmarks/bench_sync.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

REPO = Path(__file__).resolve().parent.parent


def test_sync_process_syncs_and_skips_other_verbs_imports(
        sshd: SshdServer, tmp_path: Path) -> None:  # noqa: F811
    local = tmp_path / "proj"
    (local / "pkg").mkdir(parents=True)
    (local / "train.py").write_text("print('hi')\n")
    (local / "pkg" / "model.py").write_text("X = 1\n")
    (local / ".gitignore").write_text("data/\n")
    (local / "data").mkdir()
    (local / "data" / "big.bin").write_bytes(b"x" * 1000)
    remote = tmp_path / "remote"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpudesk", "sync", str(local), str(remote),
         "--delete", "--accept-new", "--on", sshd.url, "--identity", str(sshd.client_key)],
        capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (remote / "train.py").read_text() == "print('hi')\n"
    assert (remote / "pkg" / "model.py").is_file() and not (remote / "data").exists()
    assert "sent 3 files" in done.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    for heavy in ("keyring", "gpudesk.services.cloud.accounts", "gpudesk.calc.sizing",
                  "gpudesk.cli.cloud", "PySide6", "invoke.collection"):
        assert heavy not in imported, heavy


def test_sync_measures_ignored_folders_only_when_it_lists_them(
        sshd: SshdServer, tmp_path: Path) -> None:  # noqa: F811
    """The summary's "not synced" size needs a walk of every ignored folder (a dataset can
    hold a million files): it is paid for by --verbose and --dry-run alone."""
    local = tmp_path / "proj"
    (local / "data").mkdir(parents=True)
    (local / "train.py").write_text("print('hi')\n")
    (local / ".gitignore").write_text("data/\n")
    (local / "data" / "big.bin").write_bytes(b"x" * 5000)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    base = [sys.executable, "-m", "gpudesk", "sync", str(local), str(tmp_path / "remote"),
            "--accept-new", "--on", sshd.url, "--identity", str(sshd.client_key)]
    plain = subprocess.run(base, capture_output=True, text=True, env=env, timeout=120)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert "sent 2 files" in plain.stdout and "1 skipped in" in plain.stdout
    assert "not synced" not in plain.stdout and "skip data/" not in plain.stdout
    listed = subprocess.run([*base, "--verbose"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "skip data/ (gitignore, 5.0 KB, 1 files)" in listed.stdout
    assert "1 skipped (5.0 KB not synced)" in listed.stdout
