"""The researcher's three questions, answered in sentences for one GPU type.

Does it fit? What is the largest batch that fits? What is the fewest GPUs
(and the lowest ZeRO stage) that make it fit? Kept apart from the page so the
wording is in one place and the maths stays in :mod:`gpudesk.sizing`.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from gpudesk.calc import sizing
from gpudesk.services.cloud.catalog import GpuSpec
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.plan.planner import Job
from gpudesk.services.plan.planner import MethodSuggestion
from gpudesk.services.plan.planner import format_bytes

translate = QCoreApplication.translate  # the name lupdate looks for


def strategy_text(plan: sizing.ParallelPlan, mode: str) -> str:
    if plan.gpus == 1 and plan.zero == 0:
        return translate("Answers", "a single GPU")
    if mode == "inference":
        return translate("Answers", "tensor parallel")
    if plan.fsdp == "full":
        return translate("Answers", "FSDP full shard")
    if plan.fsdp == "grad-op":
        return translate("Answers", "FSDP shard grad+optimizer")
    if plan.zero == 0:
        return translate("Answers", "plain data parallel")
    if plan.offload:
        return translate("Answers", "ZeRO-{stage} with CPU offload").format(stage=plan.zero)
    return translate("Answers", "ZeRO-{stage}").format(stage=plan.zero)


def method_text(setup: sizing.Setup) -> str:
    if setup.finetune == "qlora":
        return translate("Answers", "QLoRA ({quantize} base, rank {rank})").format(
            quantize=setup.weight_quantization, rank=setup.lora_rank)
    return translate("Answers", "LoRA (rank {rank})").format(rank=setup.lora_rank)


def suggestion_text(s: MethodSuggestion, gpu: GpuSpec) -> str:
    target = s.offer.gpu if s.offer is not None else gpu
    text = translate("Answers", "{method} fits on one {gpu}: {used} of {capacity}.").format(
        method=method_text(s.setup), gpu=target.name, used=format_bytes(s.estimate.total_bytes),
        capacity=format_bytes(target.usable_bytes))
    if s.offer is not None:
        text += " " + translate("Answers", "Cheapest such offer: {machine} ({provider}).").format(
            machine=s.offer.instance_type, provider=provider_title(s.offer.provider))
    return text


def answers_for(job: Job, est: sizing.Estimate, gpu: GpuSpec | None,
                suggestion: MethodSuggestion | None = None) -> list[str]:
    """Sentences for ``gpu`` (the selected offer's); only the total without one.

    Never proposes what the offers table rules out: on a GPU without the
    job's precision it says so instead of sizing batches and GPU counts.
    """
    used = format_bytes(est.total_bytes)
    if gpu is None:
        text = translate("Answers", "Needs {used} per GPU. Pick an offer to compare.")
        return [text.format(used=used)]
    capacity = gpu.usable_bytes
    n = job.setup.gpus
    values = {"gpu": gpu.name, "used": used, "capacity": format_bytes(capacity),
              "free": format_bytes(max(0, capacity - est.total_bytes)), "n": n}
    if not gpu.supports(job.setup.precision):
        return [translate("Answers", "The {gpu} has no {precision} support: choose another "
                                     "offer or precision.").format(
            gpu=gpu.name, precision=job.setup.precision)]
    if est.total_bytes <= capacity and n == 1:
        text = translate("Answers", "Fits on one {gpu}: {used} of {capacity} ({free} free).")
    elif est.total_bytes <= capacity:
        text = translate("Answers",
                         "Fits on {n} × {gpu}: {used} of {capacity} per GPU ({free} free).")
    elif n == 1:
        text = translate("Answers", "Does not fit on one {gpu}: needs {used}, has {capacity}.")
    else:
        text = translate("Answers",
                         "Does not fit on {n} × {gpu}: needs {used} per GPU, has {capacity}.")
    lines = [text.format(**values)]
    if suggestion is not None:
        lines.append(suggestion_text(suggestion, gpu))
    batch = sizing.largest_batch(job.model, job.setup, capacity)
    if batch:
        text = translate("Answers", "Largest batch per GPU that fits: {batch}.")
    else:
        text = translate("Answers", "Not even batch 1 fits on the {gpu}.")
    lines.append(text.format(batch=batch, **values))
    plan = sizing.smallest_parallel_plan(job.model, job.setup, capacity)
    if plan is None:
        lines.append(translate("Answers", "No plan with up to 512 × {gpu} fits.").format(**values))
    else:
        text = translate("Answers", "Fewest GPUs that fit: {count} × {gpu}, {strategy} "
                                    "({used} per GPU).")
        lines.append(text.format(count=plan.gpus, gpu=gpu.name,
                                 strategy=strategy_text(plan, job.setup.mode),
                                 used=format_bytes(plan.estimate.total_bytes)))
    return lines
