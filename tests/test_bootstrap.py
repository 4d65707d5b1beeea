"""Bootstrap checks and the cached requirements venv, against the real loopback sshd.

The machine's tools are stand-ins (tests/fake_gpu_tools.py): the replaying
nvidia-smi, an nvcc that prints a CUDA 12.x version, and a tiny torch package on
the remote PYTHONPATH; the remote python3 itself is real.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_gpu_tools import FakeTorch
from fake_gpu_tools import Tools
from fake_gpu_tools import make_tools
from fake_nvidia_smi import SCENARIOS
from fake_nvidia_smi import table
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.remote import bootstrap
from gpudesk.services.remote.bootstrap import BootstrapError
from gpudesk.services.remote.bootstrap import MachineFacts
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget

SYSTEM_PYTHON = "/usr/bin/python3"  # the machine's python3: no torch of its own


def connect(server: SshdServer) -> SshConnection:
    target = SshTarget.parse(server.url, key_file=server.client_key)
    return SshConnection(target, HostKeyPolicy.expect(server.host_key_fingerprint),
                         store=PinStore()).connect()


def check(server: SshdServer, tools: Tools, python: str = SYSTEM_PYTHON,
          **kw: object) -> tuple[bootstrap.BootstrapReport, int]:
    with connect(server) as conn:
        before = conn.exec_count
        report = bootstrap.check_machine(conn, python=python, path_prefix=str(tools.bin),
                                         env=tools.env, **kw)  # type: ignore[arg-type]
        return report, conn.exec_count - before


@pytest.fixture(autouse=True)
def _need_python() -> None:
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip("no /usr/bin/python3 on this machine")


# ------------------------------------------------------------------------------ over sshd

def test_all_good_in_one_round_trip(sshd: SshdServer, tmp_path: Path) -> None:  # noqa: F811
    tools = make_tools(tmp_path / "tools", smi_scenario="a100", nvcc="12.1",
                       torch=FakeTorch("2.4.1+cu121", "12.1", True, 1))
    report, round_trips = check(sshd, tools)
    assert round_trips == 1
    facts = report.facts
    assert (facts.driver, facts.driver_cuda) == ("535.129.03", "12.2")
    assert facts.gpu_names == ("NVIDIA A100-SXM4-40GB",)
    assert facts.nvcc == "12.1"
    assert re.fullmatch(r"3\.\d+\.\d+", facts.python) and facts.python_executable == SYSTEM_PYTHON
    assert (facts.torch, facts.torch_cuda, facts.cuda_available, facts.torch_devices) == (
        "2.4.1+cu121", "12.1", True, 1)
    assert [(c.name, c.level) for c in report.checks] == [
        ("driver", "ok"), ("gpus", "ok"), ("nvcc", "ok"), ("python", "ok"), ("torch", "ok")]
    assert report.ok
    assert "535.129.03" in report.check("driver").message  # type: ignore[union-attr]
    assert "12.2" in report.check("driver").message  # type: ignore[union-attr]


def test_torch_built_for_newer_cuda_than_the_driver_is_an_error_with_the_fix(
        sshd: SshdServer, tmp_path: Path) -> None:  # noqa: F811
    # Driver 470.223.02 supports CUDA 11.4 (the 'missing' capture); torch wants 12.4.
    tools = make_tools(tmp_path / "tools", smi_scenario="missing", nvcc="12.1",
                       torch=FakeTorch("2.5.1+cu124", "12.4", False, 0,
                                       warning="CUDA initialization: The NVIDIA driver on "
                                               "your system is too old (found version 11040)"))
    report, _ = check(sshd, tools)
    assert not report.ok
    torch = report.check("torch")
    assert torch is not None and torch.level == "error"
    assert torch.message == (
        "torch 2.5.1+cu124 is built for CUDA 12.4 but the driver 470.223.02 supports up to "
        "CUDA 11.4: install a torch built for cu118 (pip install torch --index-url "
        "https://download.pytorch.org/whl/cu118) or use an image with a newer driver.")
    assert report.facts.gpu_names == ("Tesla K80", "NVIDIA GeForce RTX 3090")
    nvcc = report.check("nvcc")
    assert nvcc is not None and nvcc.level == "warning" and "11.4" in nvcc.message


def test_no_nvidia_smi_says_there_is_no_nvidia_driver(sshd: SshdServer,  # noqa: F811
                                                      tmp_path: Path) -> None:
    tools = make_tools(tmp_path / "tools", smi_scenario=None,
                       torch=FakeTorch("2.4.1+cu121", "12.1", False, 0))
    report, _ = check(sshd, tools)
    driver = report.check("driver")
    assert driver is not None and driver.level == "error"
    assert driver.message.startswith("No NVIDIA driver: nvidia-smi was not found on ")
    assert report.check("gpus") is None  # nothing more to say about GPUs without a driver
    assert not report.ok


def test_torch_missing_says_so_with_the_wheel_for_the_driver(sshd: SshdServer,  # noqa: F811
                                                             tmp_path: Path) -> None:
    tools = make_tools(tmp_path / "tools", smi_scenario="a100", torch=None)
    report, _ = check(sshd, tools)
    torch = report.check("torch")
    assert torch is not None and torch.level == "error"
    assert torch.message.startswith(f"torch is not installed for {SYSTEM_PYTHON} "
                                    "(ModuleNotFoundError: No module named 'torch')")
    assert "https://download.pytorch.org/whl/cu121" in torch.message  # driver CUDA 12.2
    assert report.check("python").level == "ok"  # type: ignore[union-attr]


def test_no_python_says_which_one_and_how_to_install(sshd: SshdServer,  # noqa: F811
                                                     tmp_path: Path) -> None:
    tools = make_tools(tmp_path / "tools")
    report, _ = check(sshd, tools, python="/nonexistent/python3")
    python = report.check("python")
    assert python is not None and python.level == "error"
    assert "'/nonexistent/python3' was not found" in python.message
    assert "sudo apt install python3 python3-venv" in python.message
    assert report.check("torch") is None


# ------------------------------------------------------------------------------ requirements

def _project(root: Path, requirements: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "requirements.txt").write_text(requirements)
    return root


OFFLINE = {"PIP_NO_INDEX": "1"}  # nothing leaves the machine: pip uses what it has


def test_requirements_venv_is_cached_by_the_file_hash(sshd: SshdServer,  # noqa: F811
                                                      tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", "pip\n")
    venv = str(tmp_path / "machine" / "venvs" / "proj")
    notes: list[bootstrap.Note] = []
    with connect(sshd) as conn:
        first = bootstrap.ensure_requirements(conn, project, venv, python=SYSTEM_PYTHON,
                                              env=OFFLINE, progress=notes.append)
        texts = [n.text for n in notes]
        assert first.installed and not first.cached
        assert notes[0].template == bootstrap.MSG_STEP_VENV
        assert any(n.template == bootstrap.MSG_STEP_PIP for n in notes)
        assert any(t.startswith("Requirement already satisfied: pip") for t in texts), texts
        assert notes[-1].template == bootstrap.MSG_REQ_DONE
        marker = Path(venv) / bootstrap.MARKER
        assert marker.read_text().strip() == first.digest
        assert Path(first.python).is_file() and first.python == f"{venv}/bin/python"

        notes.clear()
        before = conn.exec_count
        second = bootstrap.ensure_requirements(conn, project, venv, python=SYSTEM_PYTHON,
                                               env=OFFLINE, progress=notes.append)
        assert conn.exec_count - before == 1
        assert second.cached and not second.installed and second.digest == first.digest
        assert [n.template for n in notes] == [bootstrap.MSG_REQ_CACHED]
        assert "nothing to do" in second.note.text

        # The checks now use the venv's python (which sees the machine's packages).
        tools = make_tools(tmp_path / "tools", torch=FakeTorch())
        report = bootstrap.check_machine(conn, python=SYSTEM_PYTHON, venv=venv,
                                         path_prefix=str(tools.bin), env=tools.env)
        assert report.facts.python_executable == f"{venv}/bin/python"
        assert report.ok

        (project / "requirements.txt").write_text("pip\n# changed\n")
        notes.clear()
        third = bootstrap.ensure_requirements(conn, project, venv, python=SYSTEM_PYTHON,
                                              env=OFFLINE, progress=notes.append)
        assert third.installed and third.digest != first.digest
        assert bootstrap.MSG_STEP_VENV not in [n.template for n in notes]  # venv reused


def test_failed_install_is_readable_and_not_cached(sshd: SshdServer,  # noqa: F811
                                                  tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", "gpudesk-no-such-package-xyz==1.0\n")
    venv = str(tmp_path / "machine" / "venvs" / "proj")
    with connect(sshd) as conn, pytest.raises(BootstrapError) as caught:
        bootstrap.ensure_requirements(conn, project, venv, python=SYSTEM_PYTHON,
                                      env=OFFLINE)
    message = caught.value.message()
    assert caught.value.translation_context == "Bootstrap"
    assert "failed (pip exit status 1)" in message
    assert "gpudesk-no-such-package-xyz" in message
    assert "ERROR:" in message
    assert not (Path(venv) / bootstrap.MARKER).exists()


def test_no_requirements_file_installs_nothing(sshd: SshdServer,  # noqa: F811
                                               tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    with connect(sshd) as conn:
        before = conn.exec_count
        result = bootstrap.ensure_requirements(conn, tmp_path / "proj", "~/venv")
        assert conn.exec_count == before
    assert not result.installed and not result.cached
    assert result.note.template == bootstrap.MSG_NO_REQUIREMENTS


# ------------------------------------------------------------------------------ pure parts

def _probe_output(smi: str | None, smi_rc: int = 0, listing: str = "", listing_rc: int = 0,
                  py_json: str = "") -> str:
    lines: list[str] = []
    if smi is None:
        lines.append("@@missing smi")
    else:
        lines += ["@@begin smi", smi, f"@@end smi {smi_rc}",
                  "@@begin smil", listing, f"@@end smil {listing_rc}"]
    lines += ["@@missing nvcc", "@@begin py", "@@json " + py_json, "@@end py 0"]
    return "\n".join(lines) + "\n"


PY_TORCH_CPU = '{"python": "3.10.12", "executable": "/usr/bin/python3", "torch": "2.5.1+cpu"}'


def test_parses_the_table_head_of_each_capture() -> None:
    for name, driver, cuda in (("a100", "535.129.03", "12.2"), ("v100", "450.80.02", "11.0"),
                               ("units", "418.87.01", "10.1")):
        facts = bootstrap.parse_probe(_probe_output(table(SCENARIOS[name])))
        assert (facts.driver, facts.driver_cuda) == (driver, cuda)


def test_driver_present_but_failing_and_no_gpu() -> None:
    failing = bootstrap.parse_probe(_probe_output(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
        "sure that the latest NVIDIA driver is installed and running.", smi_rc=9))
    checks = {c.name: c for c in bootstrap.assess(failing, "m")}
    assert checks["driver"].level == "error"
    assert "couldn't communicate with the NVIDIA driver" in checks["driver"].message
    assert "reboot" in checks["driver"].message

    no_gpu = bootstrap.parse_probe(_probe_output(table(SCENARIOS["a100"]),
                                                 listing="No devices were found", listing_rc=6))
    checks = {c.name: c for c in bootstrap.assess(no_gpu, "m")}
    assert checks["driver"].level == "ok"
    assert checks["gpus"].level == "error" and "sees no GPU" in checks["gpus"].message


def test_cpu_only_torch_on_a_gpu_machine_is_an_error() -> None:
    facts = bootstrap.parse_probe(_probe_output(
        table(SCENARIOS["v100"]),
        listing="GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-8f1a0c2d-31b4-9e5a-7c60-d2b9e4f1a305)",
        py_json=PY_TORCH_CPU))
    assert facts.gpu_names == ("Tesla V100-SXM2-32GB",)
    torch = {c.name: c for c in bootstrap.assess(facts, "m")}["torch"]
    assert torch.level == "error"
    assert "CPU-only build" in torch.message and "whl/cu118" in torch.message


def test_newer_minor_cuda_is_a_warning_when_it_works() -> None:
    facts = MachineFacts(smi_found=True, smi_status=0, driver="535.129.03", driver_cuda="12.2",
                         gpu_names=("A100",), nvcc_found=True, nvcc="12.2", python_found=True,
                         python="3.11.4", torch="2.5.1+cu124", torch_cuda="12.4",
                         cuda_available=True, torch_devices=1)
    torch = {c.name: c for c in bootstrap.assess(facts, "m")}["torch"]
    assert torch.level == "warning" and "minor-version compatibility" in torch.message
    broken = MachineFacts(**{**facts.__dict__, "cuda_available": False})
    assert {c.name: c for c in bootstrap.assess(broken, "m")}["torch"].level == "error"
    # A newer major version never works, whatever is_available() claimed.
    old = MachineFacts(**{**facts.__dict__, "driver": "470.223.02", "driver_cuda": "11.4"})
    torch = {c.name: c for c in bootstrap.assess(old, "m")}["torch"]
    assert torch.level == "error" and "install a torch built for cu118" in torch.message


@pytest.mark.parametrize(("cuda", "tag"), [("12.2", "cu121"), ("11.4", "cu118"),
                                           ("11.0", "cu118"), ("12.9", "cu129"),
                                           ("13.1", "cu130"), ("12.4", "cu124"),
                                           ("10.1", None), ("", None)])
def test_wheel_tag_for_driver(cuda: str, tag: str | None) -> None:
    assert bootstrap.wheel_tag_for(cuda) == tag


def test_driver_too_old_for_any_torch_build() -> None:
    facts = MachineFacts(smi_found=True, smi_status=0, driver="418.87.01", driver_cuda="10.1",
                         gpu_names=("Tesla T4",), python_found=True, python="3.8.10",
                         torch="2.5.1+cu124", torch_cuda="12.4", cuda_available=False,
                         torch_devices=0)
    checks = {c.name: c for c in bootstrap.assess(facts, "m")}
    assert checks["torch"].level == "error"
    assert "older than any current PyTorch build" in checks["torch"].message
    assert checks["python"].level == "warning"  # 3.8 < 3.9
