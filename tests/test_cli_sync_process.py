"""``gpudesk sync`` as a user runs it — a whole process — takes the quick path: it syncs,
and it does not import what other verbs need (the keyring, the cloud glue, sizing), which
would cost more than a small sync (issue 14: ≤ 1.5x rsync, benchmarks/bench_sync.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fixtures_sshd import SshdServer, sshd  # noqa: F401

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
    for heavy in ("keyring", "gpudesk.services.cloud.accounts", "gpudesk.sizing",
                  "gpudesk.cli_cloud", "PySide6", "invoke.collection"):
        assert heavy not in imported, heavy
