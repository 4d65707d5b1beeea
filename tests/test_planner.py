"""Ranking offers by cost to finish, checked against hand-computed numbers."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import replace
from datetime import date

import pytest

from gpudesk import sizing
from gpudesk.services.cloud.catalog import GpuSpec
from gpudesk.services.cloud.catalog import Offer
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.plan import planner
from gpudesk.sizing import GIB
from gpudesk.sizing import Setup


def gpu(name: str, mem_gib: float, fp16: float, bf16: float) -> GpuSpec:
    return GpuSpec(name=name, memory_gib=mem_gib, usable_bytes=int(mem_gib * GIB),
                   fp32_tflops=fp16 / 8, tf32_tflops=0.0, fp16_tflops=fp16, bf16_tflops=bf16,
                   int8_tops=2 * fp16, bandwidth_gbs=900.0, architecture="test",
                   source="test", source_date=date(2026, 1, 1))


def offer(name: str, g: GpuSpec, count: int, price: float, spot: float | None = None) -> Offer:
    return Offer(provider="aws", instance_type=name, region="us-east-1", gpu=g,
                 gpu_count=count, vcpus=8, ram_gib=64, ondemand_price=price, spot_price=spot,
                 price_source="test", price_date=date(2026, 1, 1))


SMALL = gpu("SMALL", 16, fp16=65, bf16=0)
BIG = gpu("BIG", 80, fp16=312, bf16=312)


def job(**setup: object) -> planner.Job:
    model = sizing.params_model(1e9)
    base = {"precision": "amp-bf16", "optimizer": "adamw"} | setup
    return planner.Job(model, Setup(**base), sizing.Workload(tokens=1e9, mfu=0.5))  # type: ignore[arg-type]


def test_cost_to_finish_is_hours_times_price() -> None:
    r = planner.judge(job(), offer("big1", BIG, 1, 4.0))
    assert r.fits
    flops = 6 * 1e9 * 1e9
    hours = flops / (312e12 * 0.5) / 3600
    assert r.hours == pytest.approx(hours)
    assert r.cost == pytest.approx(hours * 4.0)
    assert r.headroom_bytes == BIG.usable_bytes - r.estimate.total_bytes  # type: ignore[union-attr]


def test_multi_gpu_offer_is_sized_with_its_own_gpu_count() -> None:
    """ZeRO-3 on an 8-GPU machine shards by 8, so a 16 GiB card fits 1B params."""
    z3 = job(zero=3)
    one = planner.judge(z3, offer("big1", BIG, 1, 4.0))
    eight = planner.judge(z3, offer("big8", BIG, 8, 32.0))
    assert eight.estimate is not None and one.estimate is not None
    assert eight.estimate.model_states_bytes == pytest.approx(
        one.estimate.model_states_bytes / 8, rel=1e-9)
    # Same work, 8× the GPUs at 8× the price: same cost, an eighth of the time.
    assert eight.hours == pytest.approx(one.hours / 8)
    assert eight.cost == pytest.approx(one.cost)


def test_unsupported_precision_and_missing_spot_do_not_fit_with_reason() -> None:
    r = planner.judge(job(), offer("small1", SMALL, 1, 0.5))
    assert not r.fits and r.reason == planner.REASON_NO_PRECISION
    assert "bf16" in r.reason_text and math.isinf(r.cost)
    # No spot quote: never a guessed fraction; ranked by on-demand, and the JSON says so.
    s = planner.judge(job(precision="amp-fp16"), offer("big1", BIG, 1, 4.0), spot=True)
    assert s.fits and s.price_per_hour == 4.0
    assert s.to_json()["spot_price"] is None and s.to_json()["price_source"] == "bundled 2026-01-01"


def test_too_big_says_how_much_is_needed() -> None:
    r = planner.judge(job(precision="amp-fp16"), offer("small1", SMALL, 1, 0.5))
    assert not r.fits
    assert r.reason == planner.REASON_TOO_BIG
    assert "needs" in r.reason_text and "SMALL" in r.reason_text
    assert r.headroom_bytes < 0


def test_rank_puts_fitting_offers_first_cheapest_to_finish_first() -> None:
    offers = [offer("small1", SMALL, 1, 0.5), offer("big8", BIG, 8, 40.0),
              offer("big1", BIG, 1, 4.0), offer("big1-dear", BIG, 1, 6.0)]
    ranked = planner.rank(job(precision="amp-fp16"), offers)
    names = [r.offer.instance_type for r in ranked]
    assert names[-1] == "small1"  # does not fit
    assert names[:3] == ["big1", "big8", "big1-dear"]  # 4.0·T, 5.0·T, 6.0·T
    by_price = planner.rank(job(precision="amp-fp16"), offers, sort="price")
    assert [r.offer.instance_type for r in by_price][:3] == ["big1", "big1-dear", "big8"]
    by_headroom = planner.rank(job(precision="amp-fp16", zero=3), offers, sort="headroom")
    assert by_headroom[0].offer.instance_type == "big8"


def test_spot_ranking_uses_spot_price() -> None:
    offers = [offer("a", BIG, 1, 4.0, spot=1.0), offer("b", BIG, 1, 3.0, spot=2.0)]
    assert [r.offer.instance_type for r in planner.rank(job(), offers)] == ["b", "a"]
    assert [r.offer.instance_type for r in planner.rank(job(), offers, spot=True)] == ["a", "b"]


def test_rank_catalog_on_bundled_catalog_filters_and_fits() -> None:
    catalog = load_catalog()
    model = sizing.preset("llama-2-7b")
    j = planner.Job(model, Setup(batch=1, seq=2048, precision="amp-bf16",
                                 grad_checkpointing=True, flash_attention=True),
                    sizing.Workload(tokens=1e9))
    ranked = planner.rank_catalog(j, catalog, provider="aws")
    assert ranked and all(r.offer.provider == "aws" for r in ranked)
    fitting = [r for r in ranked if r.fits]
    # 7B with AdamW under plain DDP needs ~16 bytes/param ≈ 100 GiB: nothing fits.
    assert not fitting
    z3 = planner.rank_catalog(planner.Job(model, replace(j.setup, zero=3), j.work), catalog,
                              provider="aws")
    fit3 = [r for r in z3 if r.fits]
    assert fit3 and all(r.offer.gpu_count >= 4 for r in fit3)
    costs = [r.cost for r in fit3]
    assert costs == sorted(costs)


def test_plan_json_round_trip_and_csv() -> None:
    j = job(precision="amp-fp16", batch=2)
    offers = [offer("big1", BIG, 1, 4.0), offer("small1", SMALL, 1, 0.5)]
    ranked = planner.rank(j, offers)
    data = json.loads(planner.dumps_plan(planner.plan_json(j, ranked[0], ranked)))
    assert data["chosen"]["instance_type"] == "big1"
    assert data["offers"][1]["cost_to_finish"] is None  # inf is not valid JSON
    assert planner.plan_from_json(data) == j
    rows = list(csv.DictReader(io.StringIO(planner.offers_csv(ranked))))
    assert [r["instance_type"] for r in rows] == ["big1", "small1"]
    assert float(rows[0]["cost_to_finish"]) == pytest.approx(ranked[0].cost)


def test_an_offer_without_a_price_has_no_cost_and_ranks_after_the_priced() -> None:
    """No bundled price (the Aliyun rows): never a cost to finish, never cheapest, JSON null."""
    j = job(precision="amp-bf16")
    unpriced = replace(offer("nop", BIG, 8, 1.0), ondemand_price=None,
                       price_kind="unpriced", provider="aliyun", price_source="NO BUNDLED PRICE")
    offers = [offer("big1", BIG, 1, 4.0), unpriced, offer("big8", BIG, 8, 32.0)]
    ranked = planner.rank(j, offers)
    assert [r.offer.instance_type for r in ranked] == ["big1", "big8", "nop"]
    r = ranked[-1]
    assert r.fits and not r.priced and math.isinf(r.cost) and math.isinf(r.price_per_hour)
    assert r.hours == pytest.approx(ranked[1].hours)  # the hours hold without a price
    for sort in ("price", "cost"):
        assert planner.rank(j, offers, sort=sort)[-1].offer.instance_type == "nop"
    assert planner.rank(j, offers, sort="hours")[0].offer.instance_type in ("nop", "big8")
    spot = planner.judge(j, unpriced, spot=True)  # no spot quote either
    assert math.isinf(spot.price_per_hour) and math.isinf(spot.cost)
    row = json.loads(planner.dumps_plan(planner.plan_json(j, r, ranked)))["chosen"]
    assert (row["price_per_hour"], row["cost_to_finish"]) == (None, None)
    assert row["price_source"] == "no bundled price: refresh prices with your Alibaba Cloud " \
                                  "account"
    assert row["hours"] == pytest.approx(r.hours)
    # Never suggested as the cheapest card for LoRA/QLoRA: the same offers with a price are.
    aliyun = [o for o in load_catalog().offers if o.provider == "aliyun"]
    assert planner.lighter_offer(llama_job("llama-2-13b"), aliyun) is None
    priced = [replace(o, ondemand_price=1.0, price_kind="live") for o in aliyun]
    assert planner.lighter_offer(llama_job("llama-2-13b"), priced) is not None
    csv_row = list(csv.DictReader(io.StringIO(planner.offers_csv(ranked))))[-1]
    assert (csv_row["price_per_hour"], csv_row["cost_to_finish"]) == ("", "")


def test_damaged_plan_file_names_the_problem() -> None:
    with pytest.raises(sizing.SizingError) as info:
        planner.plan_from_json({"format": "something else"})
    assert info.value.field == "plan"
    with pytest.raises(sizing.SizingError):
        planner.plan_from_json({"format": "gpudesk-plan", "model": {"bogus": 1}})


# --------------------------------------------------------------------------- lighter methods

CARD_24 = gpu("CARD24", 24, fp16=125, bf16=125)
NO_BF16 = gpu("NOBF16", 24, fp16=65, bf16=0)


def llama_job(name: str, **setup: object) -> planner.Job:
    base = {"precision": "bf16", "optimizer": "adamw", "batch": 1, "seq": 1304} | setup
    return planner.Job(sizing.preset(name), Setup(**base),  # type: ignore[arg-type]
                       sizing.Workload(tokens=1e8))


def test_lighter_method_finds_lora_then_qlora_on_one_24_gb_card() -> None:
    seven = planner.lighter_method(llama_job("llama-2-7b"), CARD_24)
    assert seven is not None and seven.setup.finetune == "lora"
    assert seven.estimate.total_bytes <= CARD_24.usable_bytes
    assert seven.estimate == sizing.estimate(sizing.preset("llama-2-7b"), seven.setup)
    thirteen = planner.lighter_method(llama_job("llama-2-13b"), CARD_24)
    assert thirteen is not None and thirteen.setup.finetune == "qlora"
    assert thirteen.setup.weight_quantization == "nf4-dq"
    lora13 = sizing.estimate(sizing.preset("llama-2-13b"),
                             replace(thirteen.setup, finetune="lora", quantize="none"))
    assert lora13.total_bytes > CARD_24.usable_bytes  # why LoRA was passed over
    # Not offered where the page rules the GPU out, nor when the job already fits.
    assert planner.lighter_method(llama_job("llama-2-7b"), NO_BF16) is None
    assert planner.lighter_method(llama_job("gpt2", seq=512), CARD_24) is None
    assert planner.lighter_method(llama_job("llama-2-7b", finetune="lora"), CARD_24) is None


def test_lighter_offer_on_the_bundled_catalog_is_a_24_gb_card() -> None:
    catalog = load_catalog()
    job13 = llama_job("llama-2-13b")
    found = planner.lighter_offer(job13, catalog.offers)
    assert found is not None and found.offer is not None
    assert found.setup.finetune == "qlora"
    assert found.offer.gpu_count == 1 and found.offer.gpu.memory_gib == 24
    assert found.offer.gpu.supports("bf16")
    assert found.offer.ondemand_price is not None  # an offer with no price is never "cheapest"
    cheaper = [o for o in catalog.offers if o.gpu_count == 1 and o.ondemand_price is not None
               and o.ondemand_price < found.offer.ondemand_price]
    assert all(planner.lighter_method(job13, o.gpu) is None for o in cheaper)


def test_fewest_gpus_with_fsdp_stays_with_fsdp() -> None:
    plan = sizing.smallest_parallel_plan(
        sizing.preset("llama-2-13b"),
        Setup(precision="amp-bf16", batch=1, seq=2048, fsdp="full", gpus=8), 40 * GIB)
    assert plan is not None and plan.zero == 0 and plan.fsdp in ("grad-op", "full")
    assert plan.estimate.total_bytes <= 40 * GIB


def test_plan_json_keeps_the_fine_tuning_setup() -> None:
    j = llama_job("llama-2-7b", finetune="qlora", lora_targets=("q", "k", "v", "o"),
                  lora_rank=16, fsdp="none")
    data = json.loads(planner.dumps_plan(planner.plan_json(j, None, [])))
    back = planner.plan_from_json(data)
    assert back.setup == j.setup and back.setup.lora_targets == ("q", "k", "v", "o")
    assert data["estimate_single_gpu"]["trainable_params"] == 32 * 16 * 4 * 8192
