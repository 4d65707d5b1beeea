"""The Plan page's input form: model and training setup ⇄ a planner ``Job``.

Numbers are typed into line edits, not spin boxes, so that a half-typed or
wrong value stays on screen (marked red, with a message) instead of being
silently clamped, and the other inputs are never touched. ``inputs()`` and
``set_inputs()`` speak plain JSON-able dicts of the raw texts: that is what
``settings.last_plan`` and saved plans keep, so even invalid inputs survive.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from dataclasses import fields
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSizePolicy
from PySide6.QtWidgets import QWidget

from gpudesk.calc import finetune
from gpudesk.calc import hf_hub
from gpudesk.calc import sizing
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.plan.planner import Job
from gpudesk.ui.widgets.qt_early import set_keys
from gpudesk.ui.widgets.retranslate import Retranslating

ERR_WHOLE = QT_TRANSLATE_NOOP(
    "SizingError", "enter a whole number, e.g. {example}")
ERR_AMOUNT = QT_TRANSLATE_NOOP(
    "SizingError", "enter a number such as 1e9 or 2.5B")
ERR_PERCENT = QT_TRANSLATE_NOOP(
    "SizingError", "enter a percentage between 1 and 100")
ERR_AT_LEAST = QT_TRANSLATE_NOOP(
    "SizingError", "enter a whole number of at least {minimum}")
ERR_ABOVE_ZERO = QT_TRANSLATE_NOOP(
    "SizingError", "enter a number above zero, such as 1e9 or 2.5B")
ERR_CONFIG = QT_TRANSLATE_NOOP(
    "SizingError", "fetch its config.json, or load a config.json file, first")

INT_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "batch", "seq",
              "image_size", "gen_tokens", "gpus", "lora_rank", "lora_alpha")
SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
TEXT_FIELDS = (*INT_FIELDS, "params", "work", "mfu", "lora_targets")
OPTIMIZER_NAMES = {"sgd": "SGD", "sgd-momentum": QT_TRANSLATE_NOOP("PlanForm", "SGD + momentum"),
                   "adam": "Adam",
                   "adamw": "AdamW", "adafactor": "Adafactor", "adam-8bit": "Adam 8-bit",
                   "paged-adamw-8bit": "Paged AdamW 8-bit"}
SOURCES = ("preset", "shape", "params", "config")
COMBO_KEYS = ("source", "preset", "mode", "precision", "optimizer", "zero", "finetune",
              "quantize", "fsdp", "attention")
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
# The form row that shows an error about a field the core names otherwise.
ROW_OF = {"tokens": "work", "samples": "work"}
# The smallest whole number each field takes (as sizing.validate checks it), so every field's
# own message shows at once instead of the first one the core finds.
MINIMUM = {"gen_tokens": 0, "image_size": 0}


def error_message(error: sizing.SizingError) -> str:
    """The error in the window's language, without the field's name."""
    return QCoreApplication.translate("SizingError", error.template).format(**error.values)


def parse_amount(text: str) -> float:
    """``"1e9"``, ``"2.5B"``, ``"300M"``, ``"1,000,000"`` -> float; ValueError otherwise."""
    t = text.strip().replace(",", "").replace("_", "").replace(" ", "").lower()
    scale = 1.0
    if t and t[-1] in _SUFFIX:
        t, scale = t[:-1], _SUFFIX[t[-1]]
    value = float(t) * scale
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def parse_whole(text: str) -> int:
    value = parse_amount(text)
    if not value.is_integer():
        raise ValueError(text)
    return int(value)


def combo_key(combo: QComboBox) -> str:
    """The current item's key; "" when the combo is empty.

    Never asks Qt for an empty QVariant: PySide 6.12 hands such a value back
    as ``None`` without taking a reference, and enough calls free ``None``.
    """
    index = combo.currentIndex()
    return str(combo.itemData(index)) if index >= 0 else ""


def is_invalid(widget: QWidget) -> bool:
    # Checked by name first, for the same PySide 6.12 reason as combo_key.
    names = {bytes(n.data()) for n in widget.dynamicPropertyNames()}
    return b"invalid" in names and widget.property("invalid") == "true"


ERROR_RED = "#d32f2f"
# On the field itself, from its first error on: a style sheet on the whole page made Qt
# polish every widget of it again, 10 ms of the Plan page's start (bench_startup).
INVALID_RULE = '*[invalid="true"] { border: 2px solid ' + ERROR_RED + "; }"


def set_invalid(widget: QWidget, bad: bool) -> None:
    """Toggle the red border (a string property: the field's style sheet matches on it).

    A string, so the selector ``[invalid="true"]`` matches it.
    """
    if is_invalid(widget) != bad:
        if bad and not widget.styleSheet():
            widget.setStyleSheet(INVALID_RULE)
        widget.setProperty("invalid", "true" if bad else "false")
        widget.style().unpolish(widget)
        widget.style().polish(widget)


def paint_error(label: QLabel) -> None:
    """An error message's red, in the label's own palette (no style sheet: see above)."""
    palette = label.palette()
    palette.setColor(QPalette.ColorRole.WindowText, QColor(ERROR_RED))
    label.setPalette(palette)


class PlanForm(Retranslating, QWidget):
    """Every input of the Plan page; ``changed`` fires on each edit."""

    changed = Signal()
    config_requested = Signal()  # "Load config.json…" clicked
    hub_requested = Signal(str)  # "Fetch" clicked (or Enter) with a Hugging Face model id

    def __init__(self, mfu: float = 0.35, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("planForm")
        self._loading = False
        self.edits: dict[str, QLineEdit] = {}
        for name in TEXT_FIELDS:
            edit = QLineEdit(self)
            edit.setObjectName(f"field_{name}")
            edit.textEdited.connect(self._edited)
            edit.textChanged.connect(self._edited_programmatic)
            self.edits[name] = edit
        self.source = self._combo("source", SOURCES)
        self.preset = self._combo("model", tuple(sizing.PRESETS))
        self.mode = self._combo("mode", ("train", "inference"))
        self.precision = self._combo("precision", sizing.PRECISIONS)
        self.optimizer = self._combo("optimizer", sizing.OPTIMIZERS)
        self.zero = self._combo("zero", ("0", "1", "2", "3"))
        self.finetune = self._combo("finetune", finetune.METHODS)
        self.quantize = self._combo("quantize", finetune.QUANTIZATIONS)
        self.fsdp = self._combo("fsdp", sizing.FSDP_MODES)
        self.attention = self._combo("attention", sizing.ATTENTIONS)
        self.grad_checkpointing = self._check("grad_checkpointing")
        self.offload = self._check("offload")
        # "Load config.json…": the page reads the file off the GUI thread and
        # hands the model back through set_config_model().
        self.load_config = QPushButton(self)
        self.load_config.setObjectName("loadConfig")
        # a long model name must not widen the whole form past its panel
        self.load_config.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.config_model: sizing.ModelSpec | None = None
        self.load_config.clicked.connect(self.config_requested)
        # A model id (org/name): the page fetches its config.json from the Hub, off the GUI
        # thread, and hands the model back through set_config_model() as well.
        self.hub = QWidget(self)
        self.hub_id = QLineEdit(self.hub)
        self.hub_id.setObjectName("hubModelId")
        self.fetch_config = QPushButton(self.hub)
        self.fetch_config.setObjectName("fetchConfig")
        hub_row = QHBoxLayout(self.hub)
        hub_row.setContentsMargins(0, 0, 0, 0)
        hub_row.addWidget(self.hub_id, 1)
        hub_row.addWidget(self.fetch_config)
        self.fetch_config.clicked.connect(self._ask_hub)
        self.hub_id.returnPressed.connect(self._ask_hub)
        self.fields: dict[str, QWidget] = {
            **self.edits, "model": self.preset, "source": self.source, "mode": self.mode,
            "precision": self.precision, "optimizer": self.optimizer, "zero": self.zero,
            "tokens": self.edits["work"], "samples": self.edits["work"],
            "finetune": self.finetune, "quantize": self.quantize, "fsdp": self.fsdp,
            "attention": self.attention, "config": self.load_config, "hub": self.hub_id,
        }
        self.form = QFormLayout(self)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.labels: dict[str, QLabel] = {}
        self.error_labels: dict[str, QLabel] = {}
        order = ("source", "model", "hub", "config", "layers", "hidden", "heads", "kv_heads", "ffn",
                 "vocab", "params", "batch", "seq", "image_size", "mode", "gen_tokens",
                 "precision", "finetune", "lora_rank", "lora_alpha", "lora_targets",
                 "quantize", "optimizer", "grad_checkpointing", "attention", "gpus", "zero",
                 "fsdp", "offload", "work", "mfu")
        widgets: dict[str, QWidget] = {
            **self.fields, "grad_checkpointing": self.grad_checkpointing,
            "offload": self.offload, "hub": self.hub}  # the id and its Fetch button
        for name in order:
            label = QLabel(self)
            label.setObjectName(f"label_{name}")
            label.setBuddy(self.fields.get(name, widgets[name]))
            self.labels[name] = label
            self.form.addRow(label, widgets[name])
            # the field's own message, right under it (hidden while it has none)
            error = QLabel(self)
            error.setObjectName(f"error_{name}")
            error.setProperty("fieldError", "true")
            paint_error(error)
            error.setWordWrap(True)
            # a wrapped label asks for its height at its narrowest width: keep that near
            # the field's own width, and the text right under the field
            error.setMinimumWidth(160)
            set_keys(error, alignment="AlignLeft|AlignTop")  # see qt_early
            self.error_labels[name] = error
            self.form.addRow("", error)
            self.form.setRowVisible(error, False)
        self._rows = widgets
        self.preset.setCurrentIndex(self.preset.findData("gpt2"))
        self._fill_shape(sizing.preset("gpt2"))
        defaults = {"params": "7e9", "batch": "8", "seq": "1024", "image_size": "224",
                    "gen_tokens": "256", "gpus": "1", "work": "1e9",
                    "mfu": f"{mfu * 100:g}", "lora_rank": "8", "lora_alpha": "16",
                    "lora_targets": ",".join(finetune.DEFAULT_TARGETS)}
        for name, text in defaults.items():
            self.edits[name].setText(text)
        self.precision.setCurrentIndex(self.precision.findData("amp-bf16"))
        self.optimizer.setCurrentIndex(self.optimizer.findData("adamw"))
        self.attention.setCurrentIndex(self.attention.findData("sdpa"))
        self.retranslate()
        self._update_rows()

    # ----------------------------------------------------------------- building

    def _combo(self, name: str, keys: tuple[str, ...]) -> QComboBox:
        combo = QComboBox(self)
        combo.setObjectName(f"field_{name}")
        for key in keys:
            combo.addItem(key, key)
        combo.currentIndexChanged.connect(lambda _i, n=name: self._combo_changed(n))
        return combo

    def _check(self, name: str) -> QCheckBox:
        box = QCheckBox(self)
        box.setObjectName(f"field_{name}")
        box.toggled.connect(self._edited)
        return box

    def retranslate(self) -> None:
        texts = {
            "source": self.tr("Model source"), "model": self.tr("Preset"),
            "layers": self.tr("Layers"),
            "hidden": self.tr("Hidden size"), "heads": self.tr("Attention heads"),
            "kv_heads": self.tr("KV heads"), "ffn": self.tr("FFN size"),
            "vocab": self.tr("Vocabulary"),
            "params": self.tr("Parameters"), "batch": self.tr("Batch per GPU"),
            "seq": self.tr("Sequence length"), "image_size": self.tr("Image size (px)"),
            "mode": self.tr("Mode"), "gen_tokens": self.tr("Generated tokens"),
            "precision": self.tr("Precision"), "optimizer": self.tr("Optimizer"),
            "grad_checkpointing": self.tr("Checkpointing"), "attention": self.tr("Attention"),
            "gpus": self.tr("GPUs"), "zero": self.tr("ZeRO stage"), "offload": self.tr("Offload"),
            "work": self._work_label(), "mfu": self.tr("MFU (%)"),
            "hub": self.tr("Hugging Face model"), "config": self.tr("Or its config.json"),
            "finetune": self.tr("Fine-tuning"),
            "lora_rank": self.tr("LoRA rank"), "lora_alpha": self.tr("LoRA alpha"),
            "lora_targets": self.tr("LoRA targets"), "quantize": self.tr("Base weights"),
            "fsdp": self.tr("FSDP"),
        }
        for name, text in texts.items():
            self.labels[name].setText(text)
        for i, text in enumerate((self.tr("Preset"), self.tr("Transformer shape"),
                                  self.tr("Parameter count"), self.tr("config.json"))):
            self.source.setItemText(i, text)
        for i, text in enumerate((self.tr("Full fine-tune"), self.tr("LoRA"),
                                  self.tr("QLoRA (4-bit base)"),
                                  self.tr("Head only (frozen backbone)"))):
            self.finetune.setItemText(i, text)
        for i, text in enumerate((self.tr("16-bit (not quantized)"), self.tr("NF4"),
                                  self.tr("NF4 + double quantization"), self.tr("FP4"),
                                  self.tr("int8 (LLM.int8)"))):
            self.quantize.setItemText(i, text)
        for i, text in enumerate((self.tr("None"), self.tr("Full shard"),
                                  self.tr("Shard gradients + optimizer"),
                                  self.tr("Hybrid (shard within a node)"))):
            self.fsdp.setItemText(i, text)
        for i, text in enumerate((self.tr("Eager (keeps the score matrix)"),
                                  self.tr("SDPA (PyTorch default)"),
                                  self.tr("FlashAttention-2"))):
            self.attention.setItemText(i, text)
        self.hub_id.setPlaceholderText(self.tr("org/name, e.g. Qwen/Qwen2-0.5B"))
        self.fetch_config.setText(self.tr("Fetch"))
        self.fetch_config.setToolTip(self.tr(
            "Downloads only the model's config.json (its shape, never the weights) and keeps "
            "it: the next time needs no network."))
        loaded = self.config_model.name if self.config_model is not None else ""
        self.load_config.setText(self.tr("Load config.json…") if not loaded
                                 else self.tr("{name} — load another…").format(name=loaded))
        self.load_config.setToolTip(loaded)  # the whole name, when the button cuts it
        self.edits["lora_targets"].setPlaceholderText(self.tr("q,v or attention or all-linear"))
        self.mode.setItemText(0, self.tr("Train"))
        self.mode.setItemText(1, self.tr("Inference"))
        zero_texts = (self.tr("0 — plain data parallel"), self.tr("1 — shard optimizer"),
                      self.tr("2 — + gradients"), self.tr("3 — + parameters"))
        for i, text in enumerate(zero_texts):
            self.zero.setItemText(i, text)
        for i, key in enumerate(sizing.OPTIMIZERS):
            self.optimizer.setItemText(i, self.tr(OPTIMIZER_NAMES.get(key, key)))
        self.grad_checkpointing.setText(self.tr("Gradient checkpointing"))
        self.offload.setText(self.tr("CPU offload (ZeRO / FSDP)"))
        self.edits["work"].setPlaceholderText(self.tr("e.g. 1e9 or 2.5B"))
        self.edits["params"].setPlaceholderText(self.tr("e.g. 7e9 or 7B"))
        self.edits["mfu"].setToolTip(
            self.tr("Model FLOPs utilisation you expect; 30-50% is typical"))


    # ----------------------------------------------------------------- reactions

    def _edited(self, *_args: object) -> None:
        if not self._loading:
            self.changed.emit()

    def _edited_programmatic(self, *_args: object) -> None:
        # textEdited covers typing; setText (tests, benchmarks, restore) lands here.
        sender = self.sender()
        if isinstance(sender, QLineEdit) and not sender.isModified():
            self._edited()

    def _combo_changed(self, name: str) -> None:
        if self._loading:
            return
        if name in ("model", "source"):
            base = (self.config_model if self.source_key == "config"
                    else sizing.PRESETS.get(combo_key(self.preset)))
            if base is not None and (name == "model" or self.source_key != "shape"):
                self._fill_shape(base)
                # A model brings its framework's attention (sdpa for current torch/HF).
                self.attention.setCurrentIndex(self.attention.findData(base.default_attention))
        self._update_rows()
        self.changed.emit()

    def _fill_shape(self, spec: sizing.ModelSpec) -> None:
        was, self._loading = self._loading, True
        try:
            for name in SHAPE_FIELDS:
                self.edits[name].setText(str(getattr(spec, name)))
            if spec.image_size:
                self.edits["image_size"].setText(str(spec.image_size))
            if spec.kind in ("params", "cnn"):
                self.edits["params"].setText(f"{spec.parameter_count():.4g}")
        finally:
            self._loading = was

    @property
    def source_key(self) -> str:
        return str(combo_key(self.source))

    @property
    def base_model(self) -> sizing.ModelSpec:
        if self.source_key == "config" and self.config_model is not None:
            return self.config_model
        return sizing.PRESETS.get(combo_key(self.preset), sizing.preset("gpt2"))

    def _ask_hub(self) -> None:
        text = self.hub_id.text().strip()
        good = hf_hub.is_model_id(text)
        set_invalid(self.hub_id, not good)
        why = "" if good else self.tr(
            "A Hugging Face model id is org/name, for example Qwen/Qwen2-0.5B.")
        self.hub_id.setToolTip(why)
        self._set_row_error("hub", why)  # a red field always says why, where it is
        if good:
            self.hub_requested.emit(text)

    def set_config_model(self, model: sizing.ModelSpec) -> None:
        """Use a model read from a config.json (the page reads the file in a worker)."""
        self.config_model = model
        was, self._loading = self._loading, True
        try:
            self.source.setCurrentIndex(self.source.findData("config"))
            self.attention.setCurrentIndex(self.attention.findData(model.default_attention))
        finally:
            self._loading = was
        self._fill_shape(model)
        self.retranslate()
        self._update_rows()
        self.changed.emit()

    @property
    def vision(self) -> bool:
        return self.source_key != "params" and self.base_model.kind in ("vit", "cnn")

    def _work_label(self) -> str:
        if combo_key(self.mode) == "inference":
            return self.tr("Tokens to generate")
        return self.tr("Training images") if self.vision else self.tr("Training tokens")

    def _update_rows(self) -> None:
        source, base = self.source_key, self.base_model
        train = combo_key(self.mode) == "train"
        method = combo_key(self.finetune)
        lora = train and method in ("lora", "qlora")
        shape_ok = source == "shape" or (source in ("preset", "config") and base.is_transformer)
        visible = {
            "model": source in ("preset", "shape"), "config": source == "config",
            "hub": source == "config",
            "params": source == "params" or (source == "preset" and not base.is_transformer),
            "seq": not self.vision, "image_size": self.vision,
            "gen_tokens": not train, "optimizer": train, "grad_checkpointing": train,
            "zero": train and combo_key(self.fsdp) == "none", "offload": train,
            "finetune": train, "lora_rank": lora, "lora_alpha": lora, "lora_targets": lora,
            "quantize": not train or method != "full", "fsdp": train,
        }
        for name in SHAPE_FIELDS:
            visible[name] = shape_ok or (source == "params" and name in ("layers", "hidden"))
        if base.kind == "vit" and source != "params":
            visible["vocab"] = False
        for name, widget in self._rows.items():
            shown = visible.get(name, True)
            self.form.setRowVisible(widget, shown)
            error = self.error_labels.get(name)
            if error is not None:
                self.form.setRowVisible(error, shown and bool(error.text()))
        editable = {n: source not in ("preset", "config") for n in SHAPE_FIELDS}
        editable["params"] = source == "params"
        for name, ok in editable.items():
            self.edits[name].setReadOnly(not ok)
        self.labels["work"].setText(self._work_label())

    # ----------------------------------------------------------------- job

    def _int(self, name: str, errors: list[sizing.SizingError], blank: int | None = None) -> int:
        text = self.edits[name].text()
        if blank is not None and not text.strip():
            return blank
        try:
            value = parse_whole(text)
        except ValueError:
            errors.append(sizing.SizingError(name, ERR_WHOLE, example=2048 if name == "seq"
                                             else 8))
            return 1
        minimum = 0 if blank is not None else MINIMUM.get(name, 1)
        if value < minimum:
            errors.append(sizing.SizingError(name, ERR_AT_LEAST, minimum=minimum))
            return max(minimum, 1)
        return value

    def _model(self, errors: list[sizing.SizingError]) -> sizing.ModelSpec:
        source, base = self.source_key, self.base_model
        if source == "config" and self.config_model is None:
            errors.append(sizing.SizingError("hub", ERR_CONFIG))
            return sizing.preset("gpt2")
        if source in ("preset", "config"):
            return base
        if source == "params":
            try:
                params = parse_amount(self.edits["params"].text())
            except ValueError:
                errors.append(sizing.SizingError("params", ERR_AMOUNT))
                params = 1.0
            if params <= 0:
                errors.append(sizing.SizingError("params", ERR_ABOVE_ZERO))
                params = 1.0
            layers = self._int("layers", errors, blank=0)
            hidden = self._int("hidden", errors, blank=0)
            try:
                return sizing.params_model(params, layers=layers, hidden=hidden)
            except sizing.SizingError as exc:
                errors.append(exc)
                return sizing.params_model(1.0)
        shape = {name: self._int(name, errors) for name in SHAPE_FIELDS}
        if base.kind not in ("decoder", "encoder", "vit"):
            base = sizing.preset("gpt2")
        return replace(base, name=self.tr("custom (from {preset})").format(preset=base.name),
                       **shape)  # type: ignore[arg-type]

    def build_job(self) -> tuple[Job | None, list[sizing.SizingError]]:
        """The job the inputs describe, or every error found (first = the one to fix)."""
        errors: list[sizing.SizingError] = []
        model = self._model(errors)
        train = combo_key(self.mode) == "train"
        method = combo_key(self.finetune) if train else "full"
        lora = method in ("lora", "qlora")
        targets = finetune.DEFAULT_TARGETS
        if lora:
            try:
                targets = finetune.parse_targets(self.edits["lora_targets"].text())
            except sizing.SizingError as exc:
                errors.append(exc)
        quantize = combo_key(self.quantize) if (not train or method != "full") else "none"
        setup = sizing.Setup(
            batch=self._int("batch", errors), seq=self._int("seq", errors),
            image_size=self._int("image_size", errors) if self.vision else 0,
            mode="train" if train else "inference",
            precision=combo_key(self.precision),  # type: ignore[arg-type]
            optimizer=combo_key(self.optimizer),  # type: ignore[arg-type]
            grad_checkpointing=self.grad_checkpointing.isChecked(),
            attention=combo_key(self.attention),  # type: ignore[arg-type]
            gpus=self._int("gpus", errors),
            zero=int(combo_key(self.zero)) if train and combo_key(self.fsdp) == "none" else 0,
            offload=self.offload.isChecked() and train,
            gen_tokens=0 if train else self._int("gen_tokens", errors),
            finetune=method,  # type: ignore[arg-type]
            lora_rank=self._int("lora_rank", errors) if lora else 8,
            lora_alpha=self._int("lora_alpha", errors) if lora else 16,
            lora_targets=targets, quantize=quantize,  # type: ignore[arg-type]
            fsdp=combo_key(self.fsdp) if train else "none",  # type: ignore[arg-type]
        )
        try:
            amount = parse_amount(self.edits["work"].text())
        except ValueError:
            errors.append(sizing.SizingError("work", ERR_AMOUNT))
            amount = 0.0
        else:
            if amount <= 0:
                errors.append(sizing.SizingError("work", ERR_ABOVE_ZERO))
        # MFU is typed in percent: checked here, in percent, so the message speaks the
        # field's unit (the core's own check speaks of a fraction between 0 and 1).
        try:
            percent = parse_amount(self.edits["mfu"].text())
        except ValueError:
            percent = math.nan
        if not 1 <= percent <= 100:
            errors.append(sizing.SizingError("mfu", ERR_PERCENT))
            percent = 35.0
        mfu = percent / 100
        if errors:
            return None, errors
        try:
            work = (sizing.Workload(samples=amount, mfu=mfu) if self.vision and train
                    else sizing.Workload(tokens=amount, mfu=mfu))
            sizing.validate(model, setup)
        except sizing.SizingError as exc:
            return None, [exc]
        return Job(model, setup, work), []

    # ----------------------------------------------------------------- errors

    def widget_for(self, field: str) -> QWidget | None:
        return self.fields.get(field)

    def mark_errors(self, fields: set[str]) -> None:
        """Red border on exactly ``fields`` (SizingError field names)."""
        marked = {self.fields[f] for f in fields if f in self.fields}
        for widget in {*self.fields.values()}:
            set_invalid(widget, widget in marked)

    def show_errors(self, errors: list[sizing.SizingError]) -> list[sizing.SizingError]:
        """Each error under its own field, all at once; marks exactly those fields red.

        Returns the errors that have no field on screen (they are said elsewhere)."""
        texts: dict[str, list[str]] = {}
        elsewhere: list[sizing.SizingError] = []
        for e in errors:
            row = ROW_OF.get(e.field, e.field)
            if row in self.error_labels and self.form.isRowVisible(self._rows[row]):
                texts.setdefault(row, []).append(error_message(e))
            else:
                elsewhere.append(e)
        for row in self.error_labels:
            self._set_row_error(row, "\n".join(texts.get(row, [])))
        self.mark_errors({e.field for e in errors if e not in elsewhere})
        return elsewhere

    def _set_row_error(self, row: str, text: str) -> None:
        label = self.error_labels[row]
        if label.text() != text:
            label.setText(text)
        self.form.setRowVisible(label, bool(text) and self.form.isRowVisible(self._rows[row]))

    def field_error(self, row: str) -> str:
        """The message shown under a field ("" when none): for tests and accessibility."""
        label = self.error_labels[row]
        return label.text() if self.form.isRowVisible(label) else ""

    # ----------------------------------------------------------------- persistence

    def inputs(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: edit.text() for name, edit in self.edits.items()}
        combos = {"source": self.source, "preset": self.preset, "mode": self.mode,
                  "precision": self.precision, "optimizer": self.optimizer, "zero": self.zero,
                  "finetune": self.finetune, "quantize": self.quantize, "fsdp": self.fsdp,
                  "attention": self.attention}
        data |= {key: combo_key(combo) for key, combo in combos.items()}
        data |= {"grad_checkpointing": self.grad_checkpointing.isChecked(),
                 "offload": self.offload.isChecked(), "hub_id": self.hub_id.text().strip(),
                 # The loaded config's shape, so a restart needs no file I/O.
                 "config_model": (asdict(self.config_model) if self.config_model is not None
                                  else None)}
        return data

    @staticmethod
    def _config_from(data: object) -> sizing.ModelSpec | None:
        if not isinstance(data, dict):
            return None
        known = {f.name for f in fields(sizing.ModelSpec)}
        try:
            return sizing.ModelSpec(**{k: v for k, v in data.items() if k in known})
        except TypeError:
            return None

    def set_inputs(self, data: dict[str, Any]) -> None:
        """Restore what ``inputs()`` gave; unknown keys and bad values are ignored."""
        self._loading = True
        try:
            combos = {"source": self.source, "preset": self.preset, "mode": self.mode,
                      "precision": self.precision, "optimizer": self.optimizer,
                      "zero": self.zero, "finetune": self.finetune, "quantize": self.quantize,
                      "fsdp": self.fsdp, "attention": self.attention}
            self.config_model = self._config_from(data.get("config_model"))
            if data.get("flash_attention") is True and "attention" not in data:
                data = {**data, "attention": "flash"}  # inputs saved before the choice
            for key, combo in combos.items():
                index = combo.findData(str(data.get(key, "")))
                if index >= 0:
                    combo.setCurrentIndex(index)
            self._fill_shape(self.base_model)  # a preset's shape, unless data overrides
            for key, box in (("grad_checkpointing", self.grad_checkpointing),
                             ("offload", self.offload)):
                if isinstance(data.get(key), bool):
                    box.setChecked(data[key])
            for name, edit in self.edits.items():
                if isinstance(data.get(name), str | int | float):
                    edit.setText(str(data[name]))
            if isinstance(data.get("hub_id"), str):
                self.hub_id.setText(data["hub_id"])
        finally:
            self._loading = False
        self.retranslate()  # the config button names the loaded model
        self._update_rows()
        self.changed.emit()

    def set_job(self, job: Job) -> None:
        """Show a job that came without form inputs (e.g. a plan written by the CLI)."""
        m, s, w = job.model, job.setup, job.work
        preset = sizing.PRESETS.get(m.name)
        # Anything but a preset or a bare count keeps its whole ModelSpec (gated
        # FFN, tied embeddings…) as a loaded config would.
        source = "preset" if preset == m else ("params" if m.kind == "params" else "config")
        data: dict[str, Any] = {
            "source": source, "preset": m.name if preset else "gpt2", "batch": s.batch,
            "seq": s.seq, "mode": s.mode, "precision": s.precision,
            "optimizer": s.optimizer, "zero": str(s.zero), "gpus": s.gpus,
            "grad_checkpointing": s.grad_checkpointing, "attention": s.attention_impl,
            "offload": s.offload, "gen_tokens": s.gen_tokens, "finetune": s.finetune,
            "quantize": s.quantize, "fsdp": s.fsdp, "lora_rank": s.lora_rank,
            "lora_alpha": s.lora_alpha, "lora_targets": ",".join(s.lora_targets),
            "work": f"{w.samples or w.tokens:g}", "mfu": f"{w.mfu * 100:g}",
        }
        if s.image_size:
            data["image_size"] = s.image_size
        if source != "preset":
            data |= {n: getattr(m, n) for n in SHAPE_FIELDS}
            data["params"] = f"{m.parameter_count():g}"
        if source == "config":
            data["config_model"] = asdict(m)
        self.set_inputs(data)
