"""Headless ``gpudesk <verb>``: the same services the window uses, for scripts.

Never imports Qt. Bad input prints one line naming the field and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gpudesk.calc import finetune
from gpudesk.calc import hf_config
from gpudesk.calc import hf_hub
from gpudesk.calc import sizing
from gpudesk.cli import budget as cli_budget
from gpudesk.cli import cloud as cli_cloud
from gpudesk.cli import data as cli_data
from gpudesk.cli import machine as cli_machine
from gpudesk.cli import outputs as cli_outputs
from gpudesk.cli import queue as cli_queue
from gpudesk.cli import remote as cli_remote
from gpudesk.cli import runs as cli_runs
from gpudesk.cli import spend as cli_spend
from gpudesk.cli import watch as cli_watch
from gpudesk.services.plan.planner import Job
from gpudesk.services.plan.planner import RankedOffer
from gpudesk.services.plan.planner import format_bytes
from gpudesk.services.plan.planner import implausible_size
from gpudesk.services.plan.planner import rank_catalog
from gpudesk.services.plan.planner import what_would_fit
from gpudesk.services.plan.planner import what_would_fit_lines

# Verb modules: each has VERBS, add_parsers(sub) and handle_error(err) -> exit code | None.
VERB_MODULES = (cli_cloud, cli_remote, cli_runs, cli_watch, cli_spend, cli_machine,
                cli_budget, cli_outputs, cli_queue, cli_data)

LINES = (("weights", "weights_bytes"), ("gradients", "gradients_bytes"),
         ("optimizer", "optimizer_bytes"), ("activations", "activations_bytes"),
         ("autocast cache", "autocast_cache_bytes"), ("kv cache", "kv_cache_bytes"),
         ("comm buffers", "comm_buffer_bytes"), ("cuda context", "cuda_context_bytes"),
         ("total", "total_bytes"))


def _number(text: str) -> float:
    """Accept 7.5e9, 7_500_000_000, 7.5B, 1.3M, 50k."""
    t = text.strip().replace("_", "").lower()
    scale = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}.get(t[-1:], 0)
    try:
        return float(t[:-1]) * scale if scale else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None


def _add_size_flags(p: argparse.ArgumentParser) -> None:
    m = p.add_argument_group("model (one of)")
    m.add_argument("--model", metavar="PRESET", help="a preset: " + ", ".join(sizing.PRESETS))
    m.add_argument("--params", type=_number, metavar="N", help="parameter count, e.g. 7.5e9")
    m.add_argument("--config", metavar="FILE|ORG/NAME",
                   help="a Hugging Face config.json (LLaMA, Mistral, Qwen2, Gemma, GPT-2, BERT, "
                        "ViT…), or a model id whose config.json is fetched once and cached")
    for name in ("layers", "hidden", "heads", "kv-heads", "ffn", "vocab"):
        m.add_argument(f"--{name}", type=int, help=f"transformer shape: {name}")
    m.add_argument("--gated-ffn", action="store_true", help="SwiGLU FFN (llama-style)")
    s = p.add_argument_group("setup")
    s.add_argument("--batch", type=int, default=1, help="per-GPU micro-batch (default 1)")
    s.add_argument("--seq", type=int, default=512, help="sequence length / prompt tokens")
    s.add_argument("--image-size", type=int, default=0, help="vision models (default native)")
    s.add_argument("--mode", choices=("train", "inference"), default="train")
    s.add_argument("--gen-tokens", type=int, default=0, help="inference: tokens generated")
    s.add_argument("--precision", choices=sizing.PRECISIONS, default="amp-bf16")
    s.add_argument("--optimizer", choices=sizing.OPTIMIZERS, default="adamw")
    s.add_argument("--grad-checkpointing", action="store_true")
    s.add_argument("--attention", choices=sizing.ATTENTIONS,
                   help="attention implementation (default: the model's framework default, "
                        "sdpa for PyTorch >= 2 and Hugging Face)")
    s.add_argument("--flash-attention", action="store_true", help="same as --attention flash")
    s.add_argument("--gpus", type=int, default=1)
    s.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3))
    s.add_argument("--fsdp", choices=sizing.FSDP_MODES, default="none",
                   help="PyTorch FSDP: full (FULL_SHARD), grad-op (SHARD_GRAD_OP), hybrid")
    s.add_argument("--offload", action="store_true",
                   help="ZeRO-Offload / FSDP CPU offload of the sharded states")
    f = p.add_argument_group("fine-tuning and quantized weights")
    f.add_argument("--finetune", choices=finetune.METHODS, default="full",
                   help="full, lora, qlora (LoRA on a 4-bit base) or head (train the head only)")
    f.add_argument("--lora-rank", type=int, default=8)
    f.add_argument("--lora-alpha", type=int, default=16, help="scaling only; no memory effect")
    f.add_argument("--lora-targets", default="q,v",
                   help="q,k,v,o,gate,up,down or 'attention' / 'all-linear' (default q,v)")
    f.add_argument("--quantize", choices=finetune.QUANTIZATIONS, default="none",
                   help="base weights as stored: bitsandbytes nf4, nf4-dq (double "
                        "quantization), fp4 or int8 (LLM.int8); qlora defaults to nf4-dq")
    s.add_argument("--cuda-context-mib", type=int, default=sizing.DEFAULT_CUDA_CONTEXT_BYTES
                   // sizing.MIB, help="CUDA context counted by nvidia-smi (default 500)")
    w = p.add_argument_group("work to finish (for time and cost)")
    w.add_argument("--tokens", type=_number, default=0.0, help="training tokens, all epochs")
    w.add_argument("--samples", type=_number, default=0.0, help="images, all epochs")
    w.add_argument("--mfu", type=float, default=0.35, help="model FLOPs utilisation (0-1)")


def _model(a: argparse.Namespace) -> sizing.ModelSpec:
    shape = [a.layers, a.hidden, a.heads, a.ffn, a.vocab]
    if a.model and a.config:
        raise sizing.SizingError("model", "give --model PRESET or --config FILE, not both")
    if a.model or a.config:
        if a.model:
            model = sizing.preset(a.model)
        elif hf_hub.looks_like_model_id(a.config):  # org/name: fetched, cached
            model = hf_hub.model_from_hub(a.config)
        else:
            model = hf_config.model_from_config(hf_config.load_config(a.config),
                                                source=a.config)
        overrides = {k: v for k, v in (("layers", a.layers), ("hidden", a.hidden),
                                       ("heads", a.heads), ("kv_heads", a.kv_heads),
                                       ("ffn", a.ffn), ("vocab", a.vocab)) if v is not None}
        return replace(model, **overrides) if overrides else model
    if a.params is not None:
        return sizing.params_model(a.params, layers=a.layers or 0, hidden=a.hidden or 0)
    if any(v is not None for v in shape):
        hidden = a.hidden or 0
        return sizing.ModelSpec(
            name="custom transformer", kind="decoder", layers=a.layers or 0, hidden=hidden,
            heads=a.heads or 0, kv_heads=a.kv_heads or a.heads or 0,
            ffn=a.ffn if a.ffn is not None else 4 * hidden, vocab=a.vocab or 0,
            gated_ffn=a.gated_ffn, tied_embeddings=not a.gated_ffn,
        )
    raise sizing.SizingError("model", "give --model PRESET, --params N or a shape "
                             "(--layers --hidden --heads --vocab)")


def _job(a: argparse.Namespace) -> Job:
    model = _model(a)
    attention = "flash" if a.flash_attention else (a.attention or model.default_attention)
    setup = sizing.Setup(
        batch=a.batch, seq=a.seq, image_size=a.image_size, mode=a.mode,
        precision=a.precision, optimizer=a.optimizer, grad_checkpointing=a.grad_checkpointing,
        attention=attention, gpus=a.gpus, zero=a.zero, offload=a.offload,  # type: ignore[arg-type]
        gen_tokens=a.gen_tokens, cuda_context_bytes=a.cuda_context_mib * sizing.MIB,
        finetune=a.finetune, lora_rank=a.lora_rank, lora_alpha=a.lora_alpha,
        lora_targets=finetune.parse_targets(a.lora_targets), quantize=a.quantize, fsdp=a.fsdp,
    )
    sizing.validate(model, setup)
    return Job(model, setup, sizing.Workload(tokens=a.tokens, samples=a.samples, mfu=a.mfu))


def _cmd_size(a: argparse.Namespace) -> int:
    job = _job(a)
    est = sizing.estimate(job.model, job.setup)
    from gpudesk.services.plan.disk_plan import checkpoint_bytes
    from gpudesk.services.plan.disk_plan import gb_text

    checkpoint = checkpoint_bytes(job.model, job.setup)  # on disk (issue 32)
    if a.json:
        out: dict[str, Any] = {"model": job.model.name, **est.to_json(),
                               "checkpoint_bytes": checkpoint}
        print(json.dumps(out, indent=2))
        return 0
    setup = job.setup
    sharding = f"FSDP {setup.fsdp}" if setup.fsdp != "none" else f"ZeRO {setup.zero}"
    print(f"{job.model.name}: {est.params / 1e6:,.1f} M parameters, per GPU "
          f"({setup.gpus} GPU{'s' if setup.gpus > 1 else ''}, {sharding}, "
          f"{setup.attention_impl} attention)")
    if setup.mode == "train" and setup.finetune != "full":
        print(f"  {setup.finetune}: {est.trainable_params:,} trainable parameters "
              f"({est.trainable_params / max(est.params, 1):.3%})"
              + (f", rank {setup.lora_rank}, alpha {setup.lora_alpha}, targets "
                 f"{','.join(setup.lora_targets)}" if setup.finetune != "head" else ""))
    if est.quantized_params:
        print(f"  {setup.weight_quantization}: {est.quantized_params / 1e6:,.1f} M parameters "
              f"in {format_bytes(est.quantized_bytes)}; "
              f"{(est.params - est.quantized_params) / 1e6:,.1f} M kept in 16-bit")
    for label, key in LINES:
        value = est.to_json()[key]
        print(f"  {label:<14} {format_bytes(value):>12}")
    print(f"  (total is comparable to nvidia-smi 'used'; "
          f"{format_bytes(est.allocated_bytes)} to torch.cuda.max_memory_allocated)")
    if est.cpu_offload_bytes:
        print(f"  CPU RAM for offloaded states: {format_bytes(est.cpu_offload_bytes)}")
    if checkpoint:
        print(f"  one checkpoint on disk: {gb_text(checkpoint)} (trainable weights + "
              "optimizer state; gpudesk launch --checkpoint-gb)")
    for note in est.notes:
        print(f"  note: {note}")
    return 0


def _offer_row(r: RankedOffer) -> str:
    o = r.offer
    hours = "-" if not r.fits else f"{r.hours:,.1f} h"
    cost = "-" if not r.fits or not r.priced else f"${r.cost:,.2f}"
    price = f"${r.price_per_hour:>8.3f}/h" if r.priced else f"{'-':>9}/h"
    return (f"{o.provider:<8}{o.instance_type:<22}{o.region:<15}{o.gpu_count:>2}×"
            f"{o.gpu.name:<11}{price} {hours:>12} {cost:>12}  "
            f"{r.reason_text} [{o.price_status}"
            f"{'; no spot price' if r.spot and o.spot_price is None else ''}]"
            f"{_risk_text(r)}")


def _risk_text(r: RankedOffer) -> str:
    """A spot row's expected cost and range with its rate and source (one line more)."""
    if r.risk is None or not r.fits:
        return ""
    risk = r.risk.to_json()
    if risk["expected_cost"] is None:
        return f"\n{'':<8}{risk['rate_source']} ({r.risk.rate.source})"
    low, high = risk["expected_cost_range"]
    chance = risk["chance_budget_runs_out"]
    return (f"\n{'':<8}expected ${risk['expected_cost']:,.2f} (${low:,.2f}-${high:,.2f}), "
            f"{risk['expected_hours']:,.1f} h; interruption rate {risk['interruption_rate']} "
            f"({risk['rate_source']})"
            + (f"; {chance:.0%} chance the ${risk['budget']:,.2f} budget runs out first"
               if chance is not None else ""))


def _now() -> float:
    import time

    return time.time()


def _cmd_history(a: argparse.Namespace) -> int:
    """``offers --history TYPE --region R``: the spot price history per zone (the account's)."""
    from gpudesk.services.cloud.accounts import provider_from_keyring
    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.cloud.spot_history import price_history

    names = a.provider and [a.provider] or sorted(
        {o.provider for o in load_catalog().offers
         if o.instance_type == a.history and o.region == a.region})
    if not a.region or len(names) != 1:
        print("gpudesk: error: --history needs --region (and --provider where the type and "
              "region are not in the catalog)", file=sys.stderr)
        return 2
    provider = provider_from_keyring(names[0])
    history = price_history(provider, names[0], a.region, a.history, now=_now(),
                            days=a.days)
    if a.json:
        print(json.dumps(history.to_json(), indent=2))
        return 0
    print(f"{a.history} in {a.region}: spot prices ({history.source})")
    for zone, points in sorted(history.zones.items()):
        prices = [p.price for p in points]
        print(f"  {zone:<16}{len(points):>5} changes, {min(prices):.4f}-{max(prices):.4f} "
              f"{points[-1].currency}/h, now {prices[-1]:.4f}")
    if not history.zones:
        print("  no spot price quoted")
    hours = history.hour_of_day()
    print("  hour of day (UTC) mean: " + " ".join(
        f"{h:02d}:{v:.3f}" for h, v in enumerate(hours) if v is not None))
    return 0


def _cmd_offers(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.cloud.live_prices import prices_for_ranking
    from gpudesk.services.cloud.spot_rates import rates_for_ranking
    from gpudesk.services.plan import run_history
    from gpudesk.services.runs.detached import RunError
    from gpudesk.services.runs.detached import RunRecord

    if a.history:
        return _cmd_history(a)
    job = _job(a)
    catalog, refreshed = prices_for_ranking(load_catalog(), refresh=a.refresh)
    rates, rate_errors = rates_for_ranking(catalog, refresh=a.refresh and a.spot)
    assumptions = run_history.given({"checkpoint_minutes": a.checkpoint_minutes,
                                     "restart_minutes": a.restart_minutes,
                                     "checkpoint_cost_seconds": a.checkpoint_cost_seconds},
                                    a.budget)
    figures = None
    if a.run:  # the run's own checkpoint and restart times (issue 33)
        try:
            figures = run_history.of_run(RunRecord.load(a.run))
        except RunError as err:
            print(f"gpudesk: error: {err.message()}", file=sys.stderr)
            return 2
        assumptions = figures.assumptions(assumptions)
    ranked = rank_catalog(job, catalog, provider=a.provider, region=a.region, spot=a.spot,
                          max_price=a.max_price, sort=a.sort, rates=rates,
                          assumptions=assumptions)
    if not a.all:
        ranked = [r for r in ranked if r.fits] + [r for r in ranked if not r.fits][: a.limit]
    if a.json:
        print(json.dumps({"catalog_price_date": catalog.oldest_price_date.isoformat(),
                          "catalog_age_days": catalog.age_days(),
                          "refresh_errors": {k: e.message() for k, e in
                                             (refreshed.errors if refreshed else {}).items()}
                          | rate_errors,
                          "run_figures": figures.to_json() if figures else None,
                          "offers": [r.to_json() for r in ranked]}, indent=2))
        return 0
    print(f"Prices from {catalog.oldest_price_date.isoformat()} "
          f"({catalog.age_days()} days old); MFU {job.work.mfu:.0%}")
    if a.spot:
        print(f"Checkpoint every {assumptions.checkpoint_minutes:g} min, "
              f"{assumptions.checkpoint_cost_seconds:g} s to write, "
              f"{assumptions.restart_minutes:g} min to restart after a reclaim:")
        for name, source in assumptions.sources:
            print(f"  {name.replace('_', ' ')}: {source}")
        if figures is not None and figures.note:
            print(f"  ({figures.note})")
    odd = implausible_size(job.model)
    if odd:
        print(odd)
    for r in ranked:
        print(_offer_row(r))
    # nothing fits: the window's words, what would fit computed on the same offers
    found = what_would_fit(job, catalog.filter(provider=a.provider, region=a.region,
                                               spot=a.spot, max_price=a.max_price), a.spot)
    if found is not None:
        print("\n".join(what_would_fit_lines(found, job.setup.mode)))
    return 0


def _cmd_trace(a: argparse.Namespace) -> int:
    from gpudesk.calc import tracing

    if not tracing.torch_available():
        print("gpudesk: error: tracing needs PyTorch: pip install 'gpudesk[trace]' "
              "(the analytical estimate, `gpudesk size`, needs nothing)", file=sys.stderr)
        return 2
    # The batch is the input's first dimension unless --batch says otherwise
    # (and then the trace's notes say that it replaced the typed dimension).
    setup = sizing.Setup(batch=a.batch or 1, mode=a.mode, precision=a.precision,
                         optimizer=a.optimizer)
    try:
        result = tracing.trace_model(a.target, a.input, setup, batch_from_input=a.batch is None)
    except tracing.TraceError as err:
        print(f"gpudesk: error: {err}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(f"{a.target}: {result.params / 1e6:,.2f} M parameters, traced on {result.device}")
    for label in ("weights", "gradients", "optimizer", "activations", "temp", "peak"):
        print(f"  {label:<12} {format_bytes(getattr(result, label + '_bytes')):>12}")
    for note in result.notes:
        print(f"  note: {note}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpudesk", description="Plan, rent and watch GPUs.")
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("size", help="per-GPU memory for a training or inference job")
    _add_size_flags(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_size)
    p = sub.add_parser("offers", help="offers that fit, ranked by cost to finish")
    _add_size_flags(p)
    p.add_argument("--provider", choices=("aws", "tencent", "aliyun"))
    p.add_argument("--region")
    p.add_argument("--spot", action="store_true")
    p.add_argument("--max-price", type=float, help="USD per hour")
    p.add_argument("--sort", choices=("cost", "price", "headroom", "hours"), default="cost")
    p.add_argument("--all", action="store_true", help="list every offer that does not fit")
    p.add_argument("--limit", type=int, default=5, help="offers that don't fit to show")
    p.add_argument("--refresh", action="store_true",
                   help="ask the providers (AWS price list; accounts in the keyring) first")
    p.add_argument("--json", action="store_true")
    r = p.add_argument_group("spot risk (expected cost to finish)")
    r.add_argument("--checkpoint-minutes", type=float, help="checkpoint every (default 30)")
    r.add_argument("--restart-minutes", type=float,
                   help="a new machine, setup and checkpoint fetch after a reclaim (default 15)")
    r.add_argument("--checkpoint-cost-seconds", type=float,
                   help="time to write one checkpoint (default 60)")
    r.add_argument("--budget", type=float, metavar="USD",
                   help="say each spot row's chance that this budget runs out first")
    r.add_argument("--run", metavar="RUN",
                   help="take the checkpoint interval, checkpoint time and restart time "
                        "from this run's own history (its checkpoints and reclaims)")
    r.add_argument("--history", metavar="TYPE",
                   help="the spot price history of TYPE in --region (needs its account)")
    r.add_argument("--days", type=int, help="history days (at most AWS 90, Alibaba Cloud 30)")
    p.set_defaults(func=_cmd_offers)
    p = sub.add_parser("trace", help="measure your own nn.Module under fake tensors (torch)")
    p.add_argument("target", help="package.module:function or path/file.py:function")
    p.add_argument("--input", required=True,
                   help="example input, e.g. 'float32[8,3,224,224]' or 'int64[4,512]<50257'")
    p.add_argument("--batch", type=int, default=None,
                   help="replace the input's first dimension (default: keep the shape given)")
    p.add_argument("--mode", choices=("train", "inference"), default="train")
    p.add_argument("--precision", choices=sizing.TRAIN_PRECISIONS, default="fp32")
    p.add_argument("--optimizer", choices=sizing.OPTIMIZERS, default="adamw")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_trace)
    for module in VERB_MODULES:
        module.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if any(args.verb in module.VERBS for module in VERB_MODULES):
        from gpudesk.logs import setup_logging

        setup_logging()
    try:
        result: int = args.func(args)
        return result
    except sizing.SizingError as err:
        print(f"gpudesk: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        for module in VERB_MODULES:
            code: int | None = module.handle_error(err)
            if code is not None:
                return code
        raise
    except KeyboardInterrupt:
        print("gpudesk: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
