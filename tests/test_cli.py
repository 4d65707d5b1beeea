"""``gpudesk size`` / ``gpudesk offers`` as a script would call them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpudesk import sizing

KEYS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
        "kv_cache_bytes", "autocast_cache_bytes", "overhead_bytes", "total_bytes")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run([sys.executable, "-m", "gpudesk", *args], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.40625), (2, 16.640625),
                                           (3, 1.875)])
def test_size_json_reproduces_zero_paper(stage: int, gb: float) -> None:
    proc = run_cli("size", "--params", "7.5e9", "--precision", "amp-fp16", "--optimizer",
                   "adam", "--gpus", "64", "--zero", str(stage), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(KEYS) <= data.keys()
    states = data["weights_bytes"] + data["gradients_bytes"] + data["optimizer_bytes"]
    assert states == pytest.approx(gb * 1e9, rel=1e-9)
    assert data["total_bytes"] == sum(data[k] for k in KEYS[:-1])


def test_size_preset_matches_library_and_never_imports_qt_or_torch() -> None:
    proc = run_cli("size", "--model", "llama-2-7b", "--batch", "2", "--seq", "2048",
                   "--precision", "bf16", "--optimizer", "adamw", "--grad-checkpointing",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    expected = sizing.estimate(sizing.preset("llama-2-7b"), sizing.Setup(
        batch=2, seq=2048, precision="bf16", optimizer="adamw", grad_checkpointing=True))
    assert json.loads(proc.stdout)["total_bytes"] == expected.total_bytes
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from gpudesk.cli.entry import main; "
         "main(['size','--model','gpt2','--json']); "
         "assert 'PySide6' not in sys.modules and 'torch' not in sys.modules"],
        capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr


def test_image_model_takes_image_size() -> None:
    small = json.loads(run_cli("size", "--model", "vit-b-16", "--batch", "8", "--json").stdout)
    big = json.loads(run_cli("size", "--model", "vit-b-16", "--batch", "8", "--image-size",
                             "384", "--json").stdout)
    assert big["activations_bytes"] > 2.5 * small["activations_bytes"]


def test_inference_mode_reports_kv_cache() -> None:
    proc = run_cli("size", "--model", "mistral-7b", "--mode", "inference", "--seq", "1000",
                   "--gen-tokens", "24", "--precision", "bf16", "--json")
    data = json.loads(proc.stdout)
    assert data["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 1024 * 2
    assert data["optimizer_bytes"] == 0


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--model", "gpt5"), "model"),
        (("--layers", "0", "--hidden", "768", "--heads", "12", "--vocab", "100"), "layers"),
        (("--layers", "2", "--hidden", "768", "--heads", "7", "--vocab", "100"), "heads"),
        (("--model", "gpt2", "--batch", "-3"), "batch"),
    ],
)
def test_bad_input_is_one_readable_line(args: tuple[str, ...], field: str) -> None:
    proc = run_cli("size", *args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"gpudesk: error: {field}:")


def test_human_output_lists_every_line() -> None:
    proc = run_cli("size", "--model", "gpt2")
    assert proc.returncode == 0
    for label in ("weights", "gradients", "optimizer", "activations", "autocast cache",
                  "kv cache", "comm buffers", "cuda context", "total"):
        assert label in proc.stdout


def test_trace_verb_measures_a_module_file() -> None:
    pytest.importorskip("torch")
    from pathlib import Path

    target = f"{Path(__file__).parent / 'fixtures_models.py'}:make_mlp"
    proc = run_cli("trace", target, "--input", "float32[32,256]", "--optimizer", "adam",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["weights_bytes"] == 4 * data["params"]
    assert data["optimizer_bytes"] == 8 * data["params"]


def test_trace_verb_failure_is_one_readable_paragraph() -> None:
    proc = run_cli("trace", "no_such_module_xyz:build", "--input", "float32[1,4]")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("gpudesk: error:")
