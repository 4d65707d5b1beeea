"""The bundled catalog's data and the loader's behaviour on good and bad CSVs."""

from __future__ import annotations

import csv
from datetime import date
from pathlib import Path

import pytest

from gpudesk.services.cloud.catalog import NO_PRICE_MARK
from gpudesk.services.cloud.catalog import PRECISIONS
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import CatalogError
from gpudesk.services.cloud.catalog import GpuSpec
from gpudesk.services.cloud.catalog import Offer
from gpudesk.services.cloud.catalog import load_catalog

REPO_CATALOG = Path(__file__).resolve().parent.parent / "resources" / "catalog"

AWS_FAMILIES = {"g4dn", "g5", "g6", "g6e", "p3", "p4d", "p4de", "p5"}
AWS_TYPES = {
    "g4dn.xlarge", "g4dn.2xlarge", "g4dn.12xlarge", "g4dn.metal",
    "g5.xlarge", "g5.2xlarge", "g5.12xlarge", "g5.48xlarge",
    "g6.xlarge", "g6.12xlarge", "g6.48xlarge",
    "g6e.xlarge", "g6e.12xlarge", "g6e.48xlarge",
    "p3.2xlarge", "p3.8xlarge", "p3.16xlarge",
    "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge",
}
TENCENT_TYPES = {
    "GN7.2XLARGE32", "GN7.20XLARGE320", "GN10Xp.2XLARGE40", "GN10Xp.20XLARGE320",
    "GT4.4XLARGE96", "GT4.41XLARGE948", "PNV4.7XLARGE116", "PNV4.56XLARGE932",
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(REPO_CATALOG)


def _offer(catalog: Catalog, instance_type: str, region: str) -> Offer:
    (offer,) = [o for o in catalog.offers
                if o.instance_type == instance_type and o.region == region]
    return offer


# --- the bundled data -------------------------------------------------------------------


def test_default_load_is_the_bundled_catalog_and_cached() -> None:
    first = load_catalog()
    assert load_catalog() is first
    assert first == load_catalog(REPO_CATALOG)


def test_every_aws_type_in_every_us_region(catalog: Catalog) -> None:
    for region in ("us-east-1", "us-west-2"):
        types = {o.instance_type for o in catalog.filter(provider="aws", region=region)}
        assert types == AWS_TYPES, region
    families = {o.instance_type.split(".")[0] for o in catalog.filter(provider="aws")}
    assert families == AWS_FAMILIES
    eu = {o.instance_type.split(".")[0] for o in catalog.filter(provider="aws",
                                                                region="eu-west-1")}
    assert {"g4dn", "g5", "p3", "p4d"} <= eu


def test_every_tencent_type_in_every_region(catalog: Catalog) -> None:
    for region in ("ap-guangzhou", "ap-shanghai", "ap-beijing"):
        types = {o.instance_type for o in catalog.filter(provider="tencent", region=region)}
        assert types == TENCENT_TYPES, region
    assert catalog.regions("tencent") == ["ap-beijing", "ap-guangzhou", "ap-shanghai"]


def test_offers_reference_known_gpus_and_have_provenance(catalog: Catalog) -> None:
    for o in catalog.offers:
        assert catalog.gpus[o.gpu.name] is o.gpu
        assert o.price_source.strip()
        assert o.price_date <= date.today()
        assert o.gpu_count >= 1 and o.vcpus >= 1 and o.ram_gib > 0
    for g in catalog.gpus.values():
        assert g.source.strip()
        # nvidia-smi never reports more than the marketed size
        assert g.usable_bytes <= g.memory_gib * 1024**3 * 1.0001


def test_no_bundled_spot_price_is_a_guess(catalog: Catalog) -> None:
    """Spot prices are live quotes only: the bundle says so instead of a fixed fraction."""
    for o in catalog.offers:
        if o.provider in ("aws", "tencent"):
            assert o.spot_price is None and "spot: none bundled" in o.price_source
        assert "typical" not in o.price_source or o.provider not in ("aws", "tencent")


def test_estimated_prices_say_so(catalog: Catalog) -> None:
    for o in catalog.filter(provider="tencent"):
        assert "CNY/USD" in o.price_source
    # eu-west-1 rows derived from us-east-1 must say they are estimates
    for o in catalog.filter(region="eu-west-1"):
        us = _offer(catalog, o.instance_type, "us-east-1")
        if "ESTIMATE" in o.price_source:
            assert o.ondemand_price == pytest.approx(us.ondemand_price * 1.08, rel=0.04)
        assert o.ondemand_price > us.ondemand_price


def test_no_aliyun_price_is_guessed(catalog: Catalog) -> None:
    """No citable Alibaba Cloud list price was found: the rows carry none, and say why."""
    aliyun = catalog.filter(provider="aliyun")
    assert len(aliyun) == 21 and catalog.regions("aliyun") == ["cn-beijing", "cn-hangzhou",
                                                               "cn-shanghai"]
    for o in aliyun:
        assert o.ondemand_price is None and o.spot_price is None and not o.priced
        assert o.price_kind == "unpriced" and o.price_source.startswith(NO_PRICE_MARK)
        assert "DescribePrice" in o.price_source and "ESTIMATE" not in o.price_source
        assert o.price(spot=False) is None and o.price(spot=True) is None
    # Only the priced rows date the catalog (an unpriced row's date is when none was found).
    assert catalog.oldest_price_date == date(2025, 6, 1)
    # With a maximum price an offer without one cannot be shown to be under it.
    assert catalog.filter(provider="aliyun", max_price=1000.0) == []
    assert catalog.filter(provider="aliyun", spot=True, max_price=1000.0) == []
    assert all(o.priced for o in catalog.filter(max_price=1000.0))


def test_an_empty_price_must_say_why(tmp_path: Path) -> None:
    directory = _copy_catalog(tmp_path)
    line = _edit_offer(directory, 5, "ondemand_usd_per_hour", "")  # an AWS row
    with pytest.raises(CatalogError, match="missing") as info:
        load_catalog(directory)
    assert (info.value.line, info.value.column) == (line, "ondemand_usd_per_hour")
    directory = _copy_catalog(tmp_path)
    row = next(i for i, o in enumerate(load_catalog(directory).offers)
               if o.provider == "aliyun")
    line = _edit_offer(directory, row, "ondemand_usd_per_hour", "1.5")  # marked, yet a number
    with pytest.raises(CatalogError, match="carries no price") as info:
        load_catalog(directory)
    assert (info.value.line, info.value.column) == (line, "ondemand_usd_per_hour")


def test_instance_shapes(catalog: Catalog) -> None:
    p4d = _offer(catalog, "p4d.24xlarge", "us-east-1")
    assert (p4d.gpu_count, p4d.gpu.name, p4d.vcpus, p4d.ram_gib) == (8, "A100-40GB", 96, 1152)
    p4de = _offer(catalog, "p4de.24xlarge", "us-east-1")
    assert (p4de.gpu_count, p4de.gpu.name) == (8, "A100-80GB")
    p5 = _offer(catalog, "p5.48xlarge", "us-east-1")
    assert (p5.gpu_count, p5.gpu.name, p5.vcpus, p5.ram_gib) == (8, "H100-80GB", 192, 2048)
    g5 = _offer(catalog, "g5.12xlarge", "us-east-1")
    assert (g5.gpu_count, g5.gpu.name, g5.vcpus, g5.ram_gib) == (4, "A10G", 48, 192)
    gt4 = _offer(catalog, "GT4.41XLARGE948", "ap-guangzhou")
    assert (gt4.gpu_count, gt4.gpu.name, gt4.vcpus, gt4.ram_gib) == (8, "A100-40GB", 164, 948)
    assert _offer(catalog, "GN10Xp.2XLARGE40", "ap-beijing").gpu.name == "V100-32GB"


@pytest.mark.parametrize(("instance_type", "price"), [
    ("g4dn.xlarge", 0.526), ("g5.xlarge", 1.006), ("g5.12xlarge", 5.672),
    ("p3.2xlarge", 3.06), ("p3.8xlarge", 12.24), ("p3.16xlarge", 24.48),
    ("p4d.24xlarge", 21.96), ("p5.48xlarge", 55.04),
])
def test_known_us_east_1_prices(catalog: Catalog, instance_type: str, price: float) -> None:
    """The list prices in shared/reference/clouds.md."""
    assert _offer(catalog, instance_type, "us-east-1").ondemand_price == price


def test_gpu_memory(catalog: Catalog) -> None:
    assert catalog.gpus["A10G"].usable_bytes == 22_888 * 1024**2
    assert catalog.gpus["H100-80GB"].usable_bytes == 81_559 * 1024**2
    assert catalog.gpus["T4"].usable_bytes == 15_360 * 1024**2


def test_precision_support(catalog: Catalog) -> None:
    for name in ("T4", "V100-16GB", "V100-32GB"):
        gpu = catalog.gpus[name]
        assert not gpu.supports("bf16") and not gpu.supports("amp-bf16"), name
        assert gpu.supports("amp-fp16") and gpu.supports("fp32"), name
    for gpu in catalog.gpus.values():
        if gpu.architecture in ("Ampere", "Ada Lovelace", "Hopper"):
            assert gpu.supports("amp-bf16"), gpu.name
        for p in PRECISIONS:
            assert gpu.peak_tflops(p) >= 0
    a100 = catalog.gpus["A100-40GB"]
    assert a100.peak_tflops("fp32") == 19.5
    assert a100.peak_tflops("amp-bf16") == a100.peak_tflops("bf16") == 312  # dense, not 624
    assert a100.peak_tflops("amp-fp16") == a100.peak_tflops("fp16") == 312
    assert a100.peak_tflops("int4") == a100.peak_tflops("int8") == 624
    h100 = catalog.gpus["H100-80GB"]
    assert h100.peak_tflops("bf16") < 1000  # the 1979 on the datasheet is sparse


def test_unknown_precision_is_an_error(catalog: Catalog) -> None:
    with pytest.raises(ValueError, match="fp8"):
        catalog.gpus["T4"].peak_tflops("fp8")


# --- Catalog behaviour on a small hand-made catalog ---------------------------------------


def _gpu(name: str, bf16: float = 10.0) -> GpuSpec:
    return GpuSpec(name=name, memory_gib=16, usable_bytes=16 * 1024**3, fp32_tflops=1,
                   tf32_tflops=0, fp16_tflops=10, bf16_tflops=bf16, int8_tops=20,
                   bandwidth_gbs=300, architecture="X", source="test",
                   source_date=date(2025, 1, 1))


def _small() -> Catalog:
    t4, big = _gpu("T4", bf16=0), _gpu("BIG")

    def offer(provider: str, itype: str, region: str, gpu: GpuSpec, od: float,
              spot: float | None, when: date) -> Offer:
        return Offer(provider=provider, instance_type=itype, region=region, gpu=gpu,
                     gpu_count=1, vcpus=4, ram_gib=16, ondemand_price=od, spot_price=spot,
                     price_source="test", price_date=when)

    offers = (
        offer("aws", "a", "us-east-1", t4, 0.5, 0.2, date(2025, 6, 1)),
        offer("aws", "b", "us-east-1", big, 4.0, None, date(2025, 3, 1)),
        offer("aws", "a", "eu-west-1", t4, 0.6, 0.25, date(2025, 6, 1)),
        offer("tencent", "c", "ap-guangzhou", big, 3.0, 0.75, date(2025, 5, 1)),
    )
    return Catalog(gpus={"T4": t4, "BIG": big}, offers=offers)


def _ids(offers: list[Offer]) -> list[tuple[str, str]]:
    return [(o.instance_type, o.region) for o in offers]


def test_filter_subsets() -> None:
    c = _small()
    assert len(c.filter()) == 4
    assert _ids(c.filter(provider="aws")) == [("a", "us-east-1"), ("b", "us-east-1"),
                                              ("a", "eu-west-1")]
    assert _ids(c.filter(region="us-east-1")) == [("a", "us-east-1"), ("b", "us-east-1")]
    assert _ids(c.filter(provider="aws", region="ap-guangzhou")) == []
    # An offer without a spot quote stays, judged by on-demand (spot is never guessed).
    assert _ids(c.filter(spot=True)) == [("a", "us-east-1"), ("b", "us-east-1"),
                                         ("a", "eu-west-1"), ("c", "ap-guangzhou")]
    assert _ids(c.filter(gpu="BIG")) == [("b", "us-east-1"), ("c", "ap-guangzhou")]
    # max_price is inclusive and judged in the chosen market
    assert _ids(c.filter(max_price=0.5)) == [("a", "us-east-1")]
    assert _ids(c.filter(max_price=1.0, spot=True)) == [("a", "us-east-1"), ("a", "eu-west-1"),
                                                        ("c", "ap-guangzhou")]
    assert _ids(c.filter(max_price=3.0)) == [("a", "us-east-1"), ("a", "eu-west-1"),
                                             ("c", "ap-guangzhou")]
    assert _ids(c.filter(provider="tencent", spot=True, max_price=0.7)) == []


def test_filter_bundled_catalog(catalog: Catalog) -> None:
    cheap = catalog.filter(provider="aws", region="us-east-1", max_price=1.0)
    assert {o.instance_type for o in cheap} == {"g4dn.xlarge", "g4dn.2xlarge", "g6.xlarge"}
    spot = catalog.filter(provider="aws", region="us-east-1", spot=True)
    assert len(spot) == len(AWS_TYPES)  # kept without a spot quote, judged by on-demand
    assert all(o.spot_price is None for o in spot)  # the bundle carries no spot price
    assert {o.instance_type for o in catalog.filter(provider="aws", region="us-east-1",
                                                    spot=True, max_price=1.0)} == {
        "g4dn.xlarge", "g4dn.2xlarge", "g6.xlarge"}


def test_price_by_market() -> None:
    a, b = _small().offers[:2]
    assert a.price(spot=False) == 0.5 and a.price(spot=True) == 0.2
    assert b.price(spot=True) is None


def test_regions_providers_and_age() -> None:
    c = _small()
    assert c.providers() == ["aws", "tencent"]
    assert c.regions() == ["ap-guangzhou", "eu-west-1", "us-east-1"]
    assert c.regions("aws") == ["eu-west-1", "us-east-1"]
    assert c.oldest_price_date == date(2025, 3, 1)
    assert c.age_days(date(2025, 3, 31)) == 30
    assert c.age_days(date(2026, 3, 1)) == 365
    assert c.age_days(date(2025, 1, 1)) == 0  # a clock set back is not a negative age
    assert c.age_days() == (date.today() - date(2025, 3, 1)).days


def test_empty_catalog_has_no_age() -> None:
    with pytest.raises(CatalogError):
        _ = Catalog(gpus={}, offers=()).oldest_price_date


# --- malformed files --------------------------------------------------------------------------


def _copy_catalog(tmp_path: Path) -> Path:
    for name in ("gpus.csv", "offers.csv"):
        (tmp_path / name).write_text((REPO_CATALOG / name).read_text(encoding="utf-8"),
                                     encoding="utf-8")
    return tmp_path


def _edit_offer(directory: Path, row_index: int, column: str, value: str) -> int:
    """Set one offers.csv cell; returns the cell's 1-based line number."""
    path = directory / "offers.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
        header = list(rows[0].keys())
    rows[row_index][column] = value
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return row_index + 2


def test_copied_catalog_loads_unchanged(tmp_path: Path) -> None:
    assert load_catalog(_copy_catalog(tmp_path)) == load_catalog(REPO_CATALOG)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("gpu", "B300", "not in gpus.csv"),
    ("gpu", "", "missing"),
    ("ondemand_usd_per_hour", "1,5", "not a number"),
    ("ondemand_usd_per_hour", "free", "not a number"),
    ("ondemand_usd_per_hour", "nan", "finite"),
    ("spot_usd_per_hour", "-0.1", "positive"),
    ("gpu_count", "-1", "at least 1"),
    ("gpu_count", "0", "at least 1"),
    ("gpu_count", "2.5", "not an integer"),
    ("price_date", "06/01/2025", "date"),
    ("provider", "AWS", "unknown provider"),
])
def test_malformed_offer_names_file_line_and_column(tmp_path: Path, column: str, value: str,
                                                    message: str) -> None:
    directory = _copy_catalog(tmp_path)
    line = _edit_offer(directory, 5, column, value)
    with pytest.raises(CatalogError, match=message) as info:
        load_catalog(directory)
    err = info.value
    assert (err.file, err.line, err.column) == (directory / "offers.csv", line, column)
    text = str(err)
    assert "offers.csv" in text and f"line {line}" in text and repr(column) in text


def test_malformed_gpu_row(tmp_path: Path) -> None:
    (tmp_path / "gpus.csv").write_text(
        "gpu,memory_gib,usable_mib,fp32_tflops,tf32_tflops,fp16_tflops,bf16_tflops,int8_tops,"
        "mem_bandwidth_gbs,architecture,source,source_date\n"
        "T4,16,15360,8.1,0,65,0,130,320,Turing,datasheet,2025-01-01\n"
        "\n"
        "L4,24,lots,30.3,60,121,121,242,300,Ada,datasheet,2025-01-01\n",
        encoding="utf-8")
    (tmp_path / "offers.csv").write_text("", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"gpus\.csv, line 4, column 'usable_mib'"):
        load_catalog(tmp_path)


def test_duplicate_offer_and_missing_column(tmp_path: Path) -> None:
    directory = _copy_catalog(tmp_path)
    path = directory / "offers.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines, lines[1]]) + "\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=f"line {len(lines) + 1}, column 'instance_type'"):
        load_catalog(directory)
    path.write_text(lines[0].replace(",vcpus", "") + "\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="line 1, column 'vcpus'"):
        load_catalog(directory)


def test_extra_field_and_missing_file(tmp_path: Path) -> None:
    directory = _copy_catalog(tmp_path)
    path = directory / "offers.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] += ",surprise"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="line 4"):
        load_catalog(directory)
    (directory / "gpus.csv").unlink()
    with pytest.raises(CatalogError, match="gpus.csv"):
        load_catalog(directory)
