"""Analytical estimate vs fake-tensor trace vs a real CPU step, for small models.

    python benchmarks/bench_sizing_accuracy.py      (about 15-30 s on a laptop CPU)

"real" is a second (steady-state) training step on real CPU tensors, measured
from the CPU allocator's own allocation events (torch profiler,
profile_memory=True); see tests/fixtures_models.py:measure_real_step.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from gpudesk.sizing import ModelSpec, Setup, estimate, params_model, preset  # noqa: E402
from gpudesk.tracing import trace_model  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures_models.py"


def _row(name: str, line: str, analytical: int | None, traced: int, real: int | None) -> str:
    def fmt(v: int | None) -> str:
        return f"{v:>14,}" if v is not None else f"{'-':>14}"

    def ratio(v: int | None) -> str:
        return f"{traced / v:>8.3f}" if v else f"{'-':>8}"

    return f"{name:<22}{line:<13}{fmt(analytical)}{fmt(traced)}{fmt(real)}{ratio(analytical)}" \
           f"{ratio(real)}"


def main() -> None:
    import fixtures_models as fm
    import torch

    start = time.perf_counter()
    gpt_spec = ModelSpec(name="tiny-gpt", kind="decoder", kv_heads=fm.GPT_CONFIG["heads"],
                         **fm.GPT_CONFIG)
    resnet = preset("resnet50")
    cases = [
        ("mlp fp32 b32", "make_mlp", "float32[32,256]", params_model(399_370), "fp32",
         lambda: (torch.randn(32, fm.MLP_IN),)),
        ("tiny-gpt fp32 b4", "make_gpt", "int64[4,128]<512", gpt_spec, "fp32",
         lambda: (torch.randint(0, 512, (4, 128)),)),
        ("tiny-gpt amp-bf16 b4", "make_gpt", "int64[4,128]<512", gpt_spec, "amp-bf16", None),
        ("resnet50 fp32 b2", "resnet50", "float32[2,3,224,224]", resnet, "fp32",
         lambda: (torch.randn(2, 3, 224, 224),)),
    ]
    print(f"{'model':<22}{'line':<13}{'analytical':>14}{'traced':>14}{'real CPU':>14}"
          f"{'tr/an':>8}{'tr/real':>8}")
    for name, func, spec, model, precision, inputs in cases:
        batch = int(spec.split("[")[1].split(",")[0])
        setup = Setup(batch=batch, seq=128, precision=precision, optimizer="adam")
        traced = trace_model(f"{FIXTURES}:{func}", spec, setup)
        est = estimate(model, setup) if model is not None else None
        real = fm.measure_real_step(getattr(fm, func), inputs, "adam") if inputs else None
        for line, a_key, t_val, r_key in (
            ("weights", "weights_bytes", traced.weights_bytes, "weights_bytes"),
            ("gradients", "gradients_bytes", traced.gradients_bytes, "gradients_bytes"),
            ("optimizer", "optimizer_bytes", traced.optimizer_bytes, "optimizer_bytes"),
            ("activations", "activations_bytes", traced.activations_bytes, "activations_bytes"),
            ("peak", "allocated_bytes", traced.peak_bytes, "peak_bytes"),
        ):
            a_val = getattr(est, a_key) if est is not None else None
            print(_row(name, line, a_val, t_val, real[r_key] if real else None))
    torch.manual_seed(0)
    elements, nbytes = fm.saved_elements(fm.resnet50(), torch.randn(2, 3, 224, 224))
    print(f"\nResNet-50 saved-for-backward per 224² image (fp32, batch 2 / 2): "
          f"{elements / 2:,.0f} elements, {nbytes / 2:,.0f} bytes "
          f"(sizing.py constant: {preset('resnet50').cnn_act_elements_per_image:.3g})")
    print(f"done in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
