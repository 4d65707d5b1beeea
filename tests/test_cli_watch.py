"""``gpudesk watch`` on the loopback sshd with the stand-in nvidia-smi, parsed as a script would.

cli.py registers the verb (see the module's report); here the argparse tree is built the
same way: the verb's parser and its error handlers, as ``gpudesk.cli.main`` chains them.
"""
# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd/_telemetry arrive as parameters


from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import PYTHON  # noqa: F401
from fixtures_telemetry import Roots  # noqa: F401
from fixtures_telemetry import roots  # noqa: F401
from fixtures_telemetry import smi_wrapper  # noqa: F401

from gpudesk.cli import remote as cli_remote
from gpudesk.cli import watch as cli_watch

KEYS = ["time", "gpu", "name", "util_pct", "mem_used_mib", "mem_total_mib", "temp_c",
        "power_w"]


def gpudesk(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="gpudesk")
    sub = parser.add_subparsers(dest="verb", required=True)
    cli_watch.add_parsers(sub)
    args = parser.parse_args(list(argv))
    assert args.verb in cli_watch.VERBS
    try:
        code: int = args.func(args)
        return code
    except Exception as err:
        handled = cli_remote.handle_error(err)
        if handled is None:
            handled = cli_watch.handle_error(err)
        if handled is None:
            raise
        return handled


def watch(server: SshdServer, root: Path, scenario: str, *extra: str,
          host_key: str | None = None) -> int:
    smi = smi_wrapper(root.parent / "bin", scenario)
    return gpudesk("watch", "--on", server.url, "--identity", str(server.client_key),
                   "--host-key", host_key or server.host_key_fingerprint,
                   "--python", PYTHON, "--remote-root", str(root), "--nvidia-smi", str(smi),
                   *extra)


def test_watch_json_lines(sshd: SshdServer, roots: Roots,
                          capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    assert watch(sshd, root, "a100", "--seconds", "2.5", "--json-lines") == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows and all(list(r) == KEYS for r in rows)
    # The A100-SXM4-40GB capture on driver 535.129.03 (idle): 0 %, 4 / 40960 MiB, 31 C.
    assert {(r["gpu"], r["name"], r["util_pct"], r["mem_used_mib"], r["mem_total_mib"],
             r["temp_c"], r["power_w"]) for r in rows} == {
        (0, "NVIDIA A100-SXM4-40GB", 0, 4, 40960, 31, 52.32)}
    times = [r["time"] for r in rows]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert (root / "agent" / "data" / "agent.pid").is_file()  # deployed and started by watch


def test_watch_prints_null_for_missing_values(sshd: SshdServer, roots: Roots,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert watch(sshd, roots.new(), "missing", "--seconds", "2.5", "--json-lines") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    k80 = next(r for r in rows if r["gpu"] == 0)
    rtx = next(r for r in rows if r["gpu"] == 1)
    assert (k80["name"], k80["util_pct"], k80["temp_c"], k80["power_w"]) == (
        "Tesla K80", 37, None, None)
    assert (rtx["util_pct"], rtx["temp_c"], rtx["power_w"]) == (12, 45, None)


def test_watch_table_lines(sshd: SshdServer, roots: Roots,
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert watch(sshd, roots.new(), "v100", "--seconds", "2.5") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines
    for line in lines:
        assert "Tesla V100-SXM2-32GB" in line and "99%" in line
        assert "30994/32480 MiB" in line and ("64 C" in line or "65 C" in line)


def test_watch_refuses_an_unknown_host_key(sshd: SshdServer, roots: Roots,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    wrong = "SHA256:" + "A" * 43
    assert watch(sshd, root, "a100", "--seconds", "1", host_key=wrong) == 1
    err = capsys.readouterr().err
    assert "gpudesk: error:" in err and sshd.host_key_fingerprint in err
    assert not (root / "agent").exists()  # nothing was put on the machine


def test_watch_fails_when_no_sample_comes(sshd: SshdServer, roots: Roots, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    broken = tmp_path / "bin" / "nvidia-smi-broken"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    broken.chmod(0o755)
    code = gpudesk("watch", "--on", sshd.url, "--identity", str(sshd.client_key),
                   "--host-key", sshd.host_key_fingerprint, "--python", PYTHON,
                   "--remote-root", str(root), "--nvidia-smi", str(broken), "--seconds", "2",
                   "--json-lines")
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert "gpudesk: error:" in captured.err and "agent" in captured.err
