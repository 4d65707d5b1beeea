"""gpudesk.calc.tracing against exact parameter maths, the analytical calculator and a
real CPU training step. Needs torch (CI installs it through the ``test`` extra)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import fixtures_models as fm  # noqa: E402

from gpudesk.calc.sizing import ModelSpec  # noqa: E402
from gpudesk.calc.sizing import Setup  # noqa: E402
from gpudesk.calc.sizing import estimate  # noqa: E402
from gpudesk.calc.sizing import preset  # noqa: E402
from gpudesk.calc.tracing import TraceError  # noqa: E402
from gpudesk.calc.tracing import parse_input_spec  # noqa: E402
from gpudesk.calc.tracing import torch_available  # noqa: E402
from gpudesk.calc.tracing import trace_model  # noqa: E402

FIXTURES = Path(__file__).with_name("fixtures_models.py")
GPT_SPEC = ModelSpec(name="tiny-gpt", kind="decoder", kv_heads=fm.GPT_CONFIG["heads"],
                     **fm.GPT_CONFIG)
# Measured with fm.saved_elements (batch 2, fp32, training mode, unique storages,
# parameters and the input image left out), divided by 2: 21,179,264 elements
# (42,358,528 for the batch); 21,379,968 counting bytes / 4, the difference being
# max-pool's int64 indices (64·56·56 per image).
RESNET50_SAVED_ELEMENTS_PER_IMAGE = 21_179_264


def target(func: str) -> str:
    return f"{FIXTURES}:{func}"


def gpt_tokens(batch: int = 4) -> tuple[torch.Tensor]:
    return (torch.randint(0, fm.GPT_CONFIG["vocab"], (batch, 128)),)


# --------------------------------------------------------------------------- (a) model states


@pytest.mark.parametrize(("func", "spec"), [("make_mlp", "float32[32,256]"),
                                            ("make_gpt", "int64[4,128]<512")])
def test_model_states_are_exact(func: str, spec: str) -> None:
    result = trace_model(target(func), spec, Setup(batch=4, precision="fp32", optimizer="adam"))
    n = sum(p.numel() for p in getattr(fm, func)().parameters())
    assert result.params == n
    assert result.weights_bytes == 4 * n
    assert result.gradients_bytes == 4 * n
    assert result.optimizer_bytes == 8 * n
    assert result.peak_bytes > 16 * n + result.activations_bytes > 16 * n
    data = result.to_json()
    assert data["params"] == n and isinstance(data["notes"], list)


def test_module_path_target_and_optimizers() -> None:
    n = sum(p.numel() for p in fm.make_mlp().parameters())
    sgd = trace_model("fixtures_models:make_mlp", "float32[8,256]",
                      Setup(batch=8, precision="fp32", optimizer="sgd"))
    momentum = trace_model("fixtures_models:make_mlp", "float32[8,256]",
                           Setup(batch=8, precision="fp32", optimizer="sgd-momentum"))
    adafactor = trace_model(target("make_mlp"), "float32[8,256]",
                            Setup(batch=8, precision="fp32", optimizer="adafactor"))
    assert sgd.optimizer_bytes == 0
    assert momentum.optimizer_bytes == 4 * n
    assert adafactor.optimizer_bytes == 8 * n
    assert any("AdamW" in note for note in adafactor.notes)


def test_batch_overrides_leading_dim() -> None:
    small = trace_model(target("make_gpt"), "int64[1,128]<512", Setup(batch=2, precision="fp32"))
    large = trace_model(target("make_gpt"), "int64[1,128]<512", Setup(batch=4, precision="fp32"))
    assert large.activations_bytes == pytest.approx(2 * small.activations_bytes, rel=0.01)
    assert any("replaces the first dimension 1" in note for note in large.notes)


def test_lora_wrapped_model_traces_like_any_other() -> None:
    """Issue 17: frozen base weights have no gradients and no optimizer state."""
    path = f"{Path(__file__).parent / 'data' / 'lora_model.py'}:make_lora_mlp"
    result = trace_model(path, "float32[16,256]",
                         Setup(batch=16, precision="fp32", optimizer="adamw"))
    r = 4
    trainable = r * (256 + 512) + r * (512 + 512) + r * (512 + 10)
    base = 256 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10
    assert result.params == base + trainable
    assert result.weights_bytes == 4 * (base + trainable)
    assert result.gradients_bytes == 4 * trainable
    assert result.optimizer_bytes == 8 * trainable


def test_cli_trace_takes_the_batch_from_the_typed_shape(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: 'float32[32,256]' without --batch traces batch 32, not batch 1."""
    from gpudesk.cli import entry as cli

    def traced(*extra: str) -> dict[str, Any]:
        assert cli.main(["trace", target("make_mlp"), "--input", "float32[32,256]",
                         *extra, "--json"]) == 0
        data: dict[str, Any] = json.loads(capsys.readouterr().out)
        return data

    kept = traced()
    by_flag = traced("--batch", "32")
    assert kept["activations_bytes"] == by_flag["activations_bytes"]
    assert not any("replaces" in n for n in kept["notes"])
    # The first Linear's input (32×256 fp32) is among the saved activations.
    assert kept["activations_bytes"] >= 32 * 256 * 4
    one = traced("--batch", "1")
    assert one["activations_bytes"] * 16 < kept["activations_bytes"]
    assert any("batch 1 (from --batch) replaces the first dimension 32" in n
               for n in one["notes"])


def test_amp_and_inference_run() -> None:
    fp32 = trace_model(target("make_gpt"), "int64[4,128]<512", Setup(batch=4, precision="fp32"))
    amp = trace_model(target("make_gpt"), "int64[4,128]<512",
                      Setup(batch=4, precision="amp-bf16"))
    assert amp.weights_bytes == fp32.weights_bytes  # autocast keeps fp32 weights
    assert amp.activations_bytes < fp32.activations_bytes
    assert any("autocast" in note for note in amp.notes)
    infer = trace_model(target("make_gpt"), "int64[4,128]<512",
                        Setup(batch=4, precision="bf16", mode="inference"))
    assert infer.weights_bytes == 2 * fp32.params
    assert infer.gradients_bytes == infer.optimizer_bytes == 0


# --------------------------------------------------------------------------- (b) vs sizing.py


def test_gpt_activations_match_the_analytical_estimate() -> None:
    """fp32, no flash attention: the traced activations (what the step holds when
    the forward pass ends) came out at 1.0024× sizing's activations_bytes at batch 4
    (12,514,312 vs 12,484,608 bytes) and 1.0010× at batch 8. The parts differ - sizing
    counts the logits' gradient, the trace instead keeps 1-byte dropout masks and the
    attention mask - but the totals agree, so the band is ±5%. The peak is 1.11-1.13×
    sizing's allocated_bytes: at the start of backward the trace also holds gradient
    temporaries (2 MiB of logits gradient here) on top of all activations. The
    fixture computes attention by hand (eager), so it is sized with attention="eager"."""
    setup = Setup(batch=4, seq=128, precision="fp32", optimizer="adam", attention="eager")
    analytical = estimate(GPT_SPEC, setup)
    traced = trace_model(target("make_gpt"), "int64[4,128]<512", setup)
    assert traced.params == analytical.params == GPT_SPEC.parameter_count()
    assert traced.weights_bytes == analytical.weights_bytes
    assert traced.optimizer_bytes == analytical.optimizer_bytes
    assert 0.95 <= traced.activations_bytes / analytical.activations_bytes <= 1.05
    assert 1.0 <= traced.peak_bytes / analytical.allocated_bytes <= 1.25


# --------------------------------------------------------------------------- (c) vs real CPU


@pytest.mark.parametrize(("func", "spec", "inputs"), [
    ("make_mlp", "float32[32,256]", lambda: (torch.randn(32, fm.MLP_IN),)),
    ("make_gpt", "int64[4,128]<512", gpt_tokens),
])
def test_traced_matches_a_real_cpu_step(func: str, spec: str, inputs: object) -> None:
    """A real CPU step measured by the CPU allocator's own allocation events
    (profiler, profile_memory=True) agrees with the fake-tensor trace to within a
    few dozen bytes (Adam's step counters, the loss): observed 12-16 bytes on
    8-16 MB. The band is 1%."""
    real = fm.measure_real_step(getattr(fm, func), inputs, "adam")
    traced = trace_model(target(func), spec, Setup(batch=real_batch(spec), precision="fp32",
                                                   optimizer="adam"))
    assert traced.weights_bytes == real["weights_bytes"]
    assert traced.gradients_bytes == real["gradients_bytes"]
    assert traced.optimizer_bytes == real["optimizer_bytes"]
    assert traced.activations_bytes == pytest.approx(real["activations_bytes"], rel=0.01)
    # What autograd saves is the bulk of it (all but the input batch and the loss).
    assert real["saved_bytes"] == pytest.approx(real["activations_bytes"], rel=0.01)
    assert traced.peak_bytes == pytest.approx(real["peak_bytes"], rel=0.01)


def real_batch(spec: str) -> int:
    return parse_input_spec(spec)[0].shape[0]


# --------------------------------------------------------------------------- ResNet-50


def test_resnet50_layout_has_torchvision_parameter_count() -> None:
    assert sum(p.numel() for p in fm.resnet50().parameters()) == 25_557_032


def test_resnet50_saved_elements_per_image() -> None:
    torch.manual_seed(0)
    elements, nbytes = fm.saved_elements(fm.resnet50(), torch.randn(2, 3, 224, 224))
    assert elements / 2 == RESNET50_SAVED_ELEMENTS_PER_IMAGE
    assert nbytes / 8 == pytest.approx(elements / 2, rel=0.01)


def test_resnet50_trace_agrees_with_the_measurement() -> None:
    traced = trace_model(target("resnet50"), "float32[2,3,224,224]",
                         Setup(batch=2, precision="fp32", optimizer="sgd"))
    assert traced.params == 25_557_032
    saved = RESNET50_SAVED_ELEMENTS_PER_IMAGE * 2 * 4
    image = 2 * 3 * 224 * 224 * 4
    assert traced.activations_bytes == pytest.approx(saved + image, rel=0.01)


def test_sizing_resnet50_constant_matches_measurement() -> None:
    # Fails until sizing.py's guess (1.00e8) is set from the measurement above.
    measured = RESNET50_SAVED_ELEMENTS_PER_IMAGE
    assert preset("resnet50").cnn_act_elements_per_image == pytest.approx(measured, rel=0.10)


# --------------------------------------------------------------------------- (d) errors


@pytest.mark.parametrize(("tgt", "spec", "words"), [
    ("no_such_package.models:make", "float32[8,4]", ["no_such_package", "not found"]),
    (f"{FIXTURES}:raises", "float32[8,4]", ["building the model", "checkpoint file not found"]),
    (f"{FIXTURES}:not_a_module", "float32[8,4]", ["dict", "torch.nn.Module"]),
    (f"{FIXTURES}:missing", "float32[8,4]", ["no function named 'missing'"]),
    ("/nowhere/model.py:make", "float32[8,4]", ["does not exist"]),
    ("just_a_module", "float32[8,4]", ["package.module:function"]),
    (f"{FIXTURES}:make_mlp", "float32[8,x]", ["float32[8,x]", "dimension 'x'"]),
    (f"{FIXTURES}:make_mlp", "complex7[8]", ["unknown dtype"]),
    (f"{FIXTURES}:make_mlp", "float32[8,4]<9", ["upper bound"]),
    (f"{FIXTURES}:make_mlp", "float32[8,7]", ["forward pass"]),  # 7 != 256 features
    (f"{FIXTURES}:uses_item", "float32[8,8]", ["forward pass", "fake"]),
])
def test_failures_are_trace_errors(tgt: str, spec: str, words: list[str]) -> None:
    with pytest.raises(TraceError) as info:
        trace_model(tgt, spec, Setup(batch=8, precision="fp32"))
    message = str(info.value)
    for word in words:
        assert word in message
    assert "analytical estimate" in message
    assert "Traceback" not in message and "\n" not in message


def test_input_spec_parsing() -> None:
    a, b = parse_input_spec("int64[4,512]<50257; float32[4,512]")
    assert (a.dtype, a.shape, a.high) == ("int64", (4, 512), 50257)
    assert (b.dtype, b.shape) == ("float32", (4, 512))


# --------------------------------------------------------------------------- (e) import cost


def test_import_does_not_import_torch() -> None:
    code = ("import sys, gpudesk.calc.tracing as t; assert t.torch_available(); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
    assert torch_available()
