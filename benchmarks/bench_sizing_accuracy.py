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

from gpudesk.calc.sizing import ModelSpec  # noqa: E402
from gpudesk.calc.sizing import Setup  # noqa: E402
from gpudesk.calc.sizing import estimate  # noqa: E402
from gpudesk.calc.sizing import params_model  # noqa: E402
from gpudesk.calc.sizing import preset  # noqa: E402
from gpudesk.calc.tracing import trace_model  # noqa: E402

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
        # The fixtures compute attention by hand: size them as eager attention.
        setup = Setup(batch=batch, seq=128, precision=precision, optimizer="adam",
                      attention="eager")
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
    published_finetune_rows()
    print(f"done in {time.perf_counter() - start:.1f} s")


# Published max_memory_allocated peaks (docs/sizing-finetune.md has the sources):
# lit-gpt's resource tables (LoRA r=8 on q,v, bf16-true, seq 1304; inference with a
# short prompt and 50 new tokens) and HF's llm_tutorial_optimization (octocoder, GiB).
FINETUNE_ROWS = (
    ("llama-2-7b", "lora", "none", 1, 21.30), ("llama-2-7b", "lora", "none", 2, 29.07),
    ("llama-2-13b", "lora", "none", 1, 38.12), ("llama-2-7b", "qlora", "nf4", 1, 14.14),
    ("llama-2-7b", "qlora", "nf4-dq", 1, 13.84), ("llama-2-7b", "qlora", "fp4", 1, 14.19),
    ("llama-2-13b", "qlora", "nf4", 1, 23.14), ("llama-2-13b", "qlora", "nf4-dq", 1, 22.55),
)
INFERENCE_ROWS = (
    ("llama-2-7b", "nf4", 10, 50, "sdpa", 4.57, 1e9),
    ("llama-2-7b", "nf4-dq", 10, 50, "sdpa", 4.26, 1e9),
    ("llama-2-13b", "nf4", 10, 50, "sdpa", 8.32, 1e9),
    ("llama-2-13b", "nf4-dq", 10, 50, "sdpa", 7.72, 1e9),
    ("starcoder-15b", "int8", 32, 60, "eager", 15.219, 2**30),
    ("starcoder-15b", "fp4", 32, 60, "eager", 9.544, 2**30),
)


def published_finetune_rows() -> None:
    """The analytical estimate against published LoRA/QLoRA/NF4 peaks (no torch needed)."""
    print(f"\n{'model':<14}{'job':<18}{'batch':>6}{'measured':>10}{'gpudesk':>10}{'error':>9}")
    for name, method, quant, batch, measured in FINETUNE_ROWS:
        setup = Setup(batch=batch, seq=1304, precision="bf16", optimizer="adamw",
                      finetune=method, quantize=quant)  # type: ignore[arg-type]
        got = estimate(preset(name), setup).allocated_bytes / 1e9
        print(f"{name:<14}{method + ' ' + quant:<18}{batch:>6}{measured:>10.2f}{got:>10.2f}"
              f"{(got - measured) / measured:>+9.1%}")
    for name, quant, seq, gen, attention, measured, unit in INFERENCE_ROWS:
        setup = Setup(mode="inference", seq=seq, gen_tokens=gen, precision="bf16",
                      quantize=quant, attention=attention)  # type: ignore[arg-type]
        got = estimate(preset(name), setup).allocated_bytes / unit
        print(f"{name:<14}{'inference ' + quant:<18}{1:>6}{measured:>10.2f}{got:>10.2f}"
              f"{(got - measured) / measured:>+9.1%}")


if __name__ == "__main__":
    main()
