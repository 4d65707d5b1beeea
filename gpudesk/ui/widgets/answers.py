"""The researcher's three questions, answered in sentences for one GPU type.

Does it fit? What is the largest batch that fits? What is the fewest GPUs
(and the lowest ZeRO stage) that make it fit? Kept apart from the page so the
wording is in one place and the maths stays in :mod:`gpudesk.sizing`.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from gpudesk import sizing
from gpudesk.services.cloud.catalog import GpuSpec
from gpudesk.services.plan.planner import Job, format_bytes

translate = QCoreApplication.translate  # the name lupdate looks for


def strategy_text(plan: sizing.ParallelPlan, mode: str) -> str:
    if plan.gpus == 1 and plan.zero == 0:
        return translate("Answers", "a single GPU")
    if mode == "inference":
        return translate("Answers", "tensor parallel")
    if plan.zero == 0:
        return translate("Answers", "plain data parallel")
    if plan.offload:
        return translate("Answers", "ZeRO-{stage} with CPU offload").format(stage=plan.zero)
    return translate("Answers", "ZeRO-{stage}").format(stage=plan.zero)


def answers_for(job: Job, est: sizing.Estimate, gpu: GpuSpec | None) -> list[str]:
    """Sentences for ``gpu`` (the selected offer's); only the total without one."""
    used = format_bytes(est.total_bytes)
    if gpu is None:
        text = translate("Answers", "Needs {used} per GPU. Pick an offer to compare.")
        return [text.format(used=used)]
    capacity = gpu.usable_bytes
    n = job.setup.gpus
    values = {"gpu": gpu.name, "used": used, "capacity": format_bytes(capacity),
              "free": format_bytes(capacity - est.total_bytes), "n": n}
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
