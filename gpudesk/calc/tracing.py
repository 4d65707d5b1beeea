""""Trace my model": measure one training step of the user's own model, without a GPU.

The model is built and run under ``torch._subclasses.fake_tensor.FakeTensorMode``:
every tensor has a shape, dtype and device but no data, so nothing is allocated
and no weights are needed. PyTorch's ``MemTracker`` (a private module, pinned to
the torch in ``pyproject.toml``'s ``trace`` extra) sees every storage that the
forward pass, backward pass and optimizer step create and sorts it into
parameters, gradients, optimizer state, activations and temporaries.

The trace runs on (fake) CPU tensors: a CPU build of torch cannot make CUDA
fake tensors nor enter CUDA autocast. Storage sizes are the same as on a GPU,
apart from the CUDA caching allocator rounding each block up to 512 bytes.

torch is imported only inside functions, so importing this module is free; the
window checks :func:`torch_available` before offering the button. Every
failure becomes a :class:`TraceError` whose text a researcher can act on.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpudesk.calc.sizing import Setup

__all__ = ["TraceError", "TraceResult", "parse_input_spec", "torch_available", "trace_model",
           "trace_in_subprocess"]

_FALLBACK = "Use the analytical estimate instead."

_DTYPES: dict[str, str] = {
    "float32": "float32", "float": "float32", "fp32": "float32",
    "float16": "float16", "half": "float16", "fp16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float64": "float64", "double": "float64",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
    "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}
_INT_DTYPES = {"int64", "int32", "int16", "int8", "uint8"}
_SPEC_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[([^\]]*)\]\s*(?:<\s*([^\s]+)\s*)?$")


class TraceError(RuntimeError):
    """A trace that could not run; ``str()`` is one paragraph for the researcher."""

    def __init__(self, step: str, message: str) -> None:
        self.step = step
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class TensorSpec:
    dtype: str
    shape: tuple[int, ...]
    high: int = 0  # integer inputs: values in [0, high)


@dataclass(frozen=True)
class TraceResult:
    """Bytes measured by one traced step; comparable to ``Estimate`` line by line.

    ``weights_bytes``/``gradients_bytes``/``optimizer_bytes``: the model states
    (optimizer state as kept between steps; Adam's 0-d ``step`` counters live on
    the CPU on a GPU run and are left out). ``activations_bytes``: what the step
    holds when the forward pass (and loss) ends - saved-for-backward tensors and
    the input batch. ``temp_bytes``: transient memory at the peak (activation
    gradients, or the optimizer step's scratch). ``peak_bytes``: the highest
    total of a steady-state step (optimizer state present during forward and
    backward), comparable to ``Estimate.allocated_bytes`` and
    ``torch.cuda.max_memory_allocated`` (no CUDA context).
    """

    params: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    temp_bytes: int
    peak_bytes: int
    device: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = list(self.notes)
        return data


def torch_available() -> bool:
    """True if torch can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


# --------------------------------------------------------------------------- parsing


def _spec_error(text: str, why: str) -> TraceError:
    return TraceError(
        "input", f"The example input '{text}' could not be read: {why}. Write each tensor as "
        "dtype[dims], e.g. float32[8,3,224,224] or int64[4,512]<50257 for token ids below "
        f"50257, and separate several tensors with ';'. {_FALLBACK}")


def parse_input_spec(text: str) -> list[TensorSpec]:
    """``"float32[8,3,224,224]"``, ``"int64[4,512]<50257"``; several joined by ``;``."""
    parts = [p for p in (text or "").split(";") if p.strip()]
    if not parts:
        raise _spec_error(text, "it is empty")
    specs: list[TensorSpec] = []
    for part in parts:
        match = _SPEC_RE.match(part)
        if not match:
            raise _spec_error(part.strip(), "expected dtype[dims]")
        name, dims_text, high_text = match.groups()
        dtype = _DTYPES.get(name.lower())
        if dtype is None:
            raise _spec_error(part.strip(), f"unknown dtype '{name}' (choose one of "
                              f"{', '.join(sorted(set(_DTYPES.values())))})")
        dims: list[int] = []
        for d in dims_text.split(","):
            d = d.strip()
            if not d.isdigit() or int(d) < 1:
                raise _spec_error(part.strip(), f"dimension '{d}' is not a whole number above 0")
            dims.append(int(d))
        high = 0
        if high_text is not None:
            if dtype not in _INT_DTYPES:
                raise _spec_error(part.strip(), "an upper bound '<N' is only for integer dtypes")
            if not high_text.isdigit() or int(high_text) < 1:
                raise _spec_error(part.strip(), f"upper bound '{high_text}' is not a whole "
                                  "number above 0")
            high = int(high_text)
        elif dtype in _INT_DTYPES:
            high = 2
        specs.append(TensorSpec(dtype, tuple(dims), high))
    return specs


# --------------------------------------------------------------------------- loading


@contextlib.contextmanager
def _on_path(folder: str) -> Iterator[None]:
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def _load_factory(target: str) -> Callable[[], Any]:
    module_part, sep, func_name = (target or "").strip().rpartition(":")
    if not sep or not module_part or not func_name.isidentifier():
        raise TraceError("load", f"The model '{target}' should be written as "
                         "package.module:function or path/to/file.py:function, naming a "
                         f"function that takes no arguments and returns the model. {_FALLBACK}")
    try:
        if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
            path = Path(module_part).expanduser().resolve()
            if not path.is_file():
                raise TraceError("load", f"The file '{module_part}' does not exist, so the "
                                 f"model could not be loaded. {_FALLBACK}")
            spec = importlib.util.spec_from_file_location(f"_gpudesk_trace_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise TraceError("load", f"'{module_part}' is not a Python file that can be "
                                 f"imported. {_FALLBACK}")
            module = importlib.util.module_from_spec(spec)
            with _on_path(str(path.parent)):
                spec.loader.exec_module(module)
        else:
            with _on_path(os.getcwd()):
                module = importlib.import_module(module_part)
    except TraceError:
        raise
    except ModuleNotFoundError as exc:
        raise TraceError("load", f"Loading the model failed: the module '{exc.name}' was not "
                         f"found while importing '{module_part}'. Check the spelling, and that "
                         "its project folder is the current folder or installed in this "
                         f"Python environment. {_FALLBACK}") from None
    except BaseException as exc:  # the user's module may raise anything, even SystemExit
        raise TraceError("load", f"Importing '{module_part}' failed with "
                         f"{_describe(exc)}. {_FALLBACK}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise TraceError("load", f"'{module_part}' has no function named '{func_name}'. "
                         f"{_FALLBACK}")
    return func  # type: ignore[no-any-return]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0][:300] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _fake_hint(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc)
    if ("DataDependent" in name or "Unsupported" in name or "data-dependent" in text
            or "meta" in text.lower() or "fake" in text.lower()):
        return (" The model uses an operation that cannot run on shape-only (fake) tensors - "
                "for example reading a value with .item(), nonzero(), a custom CUDA kernel, or "
                "nn.TransformerEncoder's fast path.")
    return ""


# --------------------------------------------------------------------------- tracing


def _make_optimizer(torch: Any, name: str, params: list[Any], notes: list[str]) -> Any:
    # foreach=True: what torch picks for CUDA parameters (one list of scratch
    # tensors for all parameters at once); on CPU it would pick the per-tensor loop.
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, foreach=True)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True)
    if name == "adam":
        return torch.optim.Adam(params, foreach=True)
    if name != "adamw":
        notes.append(f"optimizer '{name}' is traced as AdamW (two fp32 moments per parameter)")
    return torch.optim.AdamW(params, foreach=True)


def _loss_of(torch: Any, out: Any) -> Any:
    """The scalar to call backward on, from whatever the model returned."""
    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    if isinstance(out, dict):
        if isinstance(out.get("loss"), torch.Tensor):
            return out["loss"]
        out = next((v for v in out.values() if isinstance(v, torch.Tensor)), None)
    elif isinstance(out, (tuple, list)):
        out = next((v for v in out if isinstance(v, torch.Tensor)), None)
    elif not isinstance(out, torch.Tensor) and isinstance(getattr(out, "logits", None),
                                                          torch.Tensor):
        out = out.logits
    if not isinstance(out, torch.Tensor):
        raise TypeError("the model returned no tensor to compute a loss from")
    return out if out.numel() == 1 else out.float().mean()


def _snap(mt: Any, kind: str) -> dict[str, int]:
    """MemTracker's snapshot summed over devices, keyed PARAM/GRAD/.../Total."""
    total: dict[str, int] = {}
    for dev_snap in mt.get_tracker_snapshot(kind).values():
        for key, value in dev_snap.items():
            name = getattr(key, "name", str(key))
            total[name] = total.get(name, 0) + int(value)
    return total


def _storage_bytes(tensors: list[Any]) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        st = t.untyped_storage()
        key = int(st._cdata)  # the StorageImpl's address: one per real allocation
        if key not in seen:
            seen.add(key)
            total += st.nbytes()
    return total


def _optimizer_state_tensors(torch: Any, optimizer: Any) -> list[Any]:
    out = []
    for state in optimizer.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and not (key == "step" and value.dim() == 0):
                out.append(value)
    return out


def _step_name(step: str) -> str:
    return {"build": "building the model", "forward": "forward pass",
            "backward": "backward pass", "optimizer": "optimizer step",
            "inputs": "creating the example input"}.get(step, step)


def trace_model(target: str, input_spec: str, setup: Setup, *,
                batch_from_input: bool = False) -> TraceResult:
    """Trace one step of ``target`` (a no-argument function returning the model).

    ``setup.batch`` replaces each input's first dimension, and a note says so
    when that changes a shape the user typed; with ``batch_from_input`` the
    shapes are kept as typed (``gpudesk trace`` without ``--batch``).
    Raises TraceError (never anything else) with a message for the researcher.
    """
    specs = parse_input_spec(input_spec)
    extra: list[str] = []
    if not batch_from_input:
        if setup.batch < 1:
            raise TraceError("input", f"The batch size must be at least 1. {_FALLBACK}")
        typed = sorted({s.shape[0] for s in specs if s.shape[0] != setup.batch})
        if typed:
            extra.append(f"batch {setup.batch} (from --batch) replaces the first dimension "
                         f"{', '.join(map(str, typed))} of the input as typed")
        specs = [TensorSpec(s.dtype, (setup.batch, *s.shape[1:]), s.high) for s in specs]
    if setup.precision in ("int8", "int4"):
        raise TraceError("precision", f"Tracing runs fp32, amp-bf16, amp-fp16, fp16 or bf16; "
                         f"{setup.precision} quantised weights need their own kernels. "
                         f"{_FALLBACK}")
    if not torch_available():
        raise TraceError("torch", "Tracing needs PyTorch, which is not installed in the Python "
                         "that runs gpudesk (pip install 'gpudesk[trace]'). " + _FALLBACK)
    factory = _load_factory(target)
    try:
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.distributed._tools.mem_tracker import MemTracker
    except BaseException as exc:
        raise TraceError("torch", "This PyTorch has no memory tracker "
                         "(torch.distributed._tools.mem_tracker, tested with torch 2.13): "
                         f"{_describe(exc)}. {_FALLBACK}") from None
    step = "build"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _trace(torch, FakeTensorMode, MemTracker, factory, specs, setup, target)
            return replace(result, notes=(*extra, *result.notes))
    except TraceError:
        raise
    except BaseException as exc:
        step = getattr(exc, "_gpudesk_step", step)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise TraceError(step, f"Tracing {target} failed during the {_step_name(step)}: "
                         f"{_describe(exc)}.{_fake_hint(exc)} {_FALLBACK}") from None


TRACE_TIMEOUT_S = 600.0


def trace_in_subprocess(target: str, input_spec: str, setup: Setup,
                        cancel: threading.Event | None = None,
                        timeout: float = TRACE_TIMEOUT_S) -> TraceResult:
    """:func:`trace_model` in a child ``gpudesk trace`` process; blocks until done.

    The window uses this, not an in-process call: the researcher's code and
    torch (hundreds of MB) stay out of the GUI process, a crash or hang in
    their model cannot take the window down, and cancelling kills the child.
    """
    parse_input_spec(input_spec)  # refuse a bad spec before starting anything
    argv = [sys.executable, "-m", "gpudesk", "trace", target, "--input", input_spec,
            "--batch", str(setup.batch), "--mode", setup.mode,
            "--precision", setup.precision, "--optimizer", setup.optimizer, "--json"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as proc:
        deadline = time.monotonic() + timeout
        while True:
            try:
                out, err = proc.communicate(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if (cancel is not None and cancel.is_set()) or time.monotonic() > deadline:
                    proc.kill()
                    proc.communicate()
                    why = ("cancelled" if cancel is not None and cancel.is_set()
                           else f"stopped after {timeout:.0f} s")
                    raise TraceError("run", f"Tracing {target} was {why}. {_FALLBACK}") from None
    if proc.returncode != 0:
        message = err.strip().removeprefix("gpudesk: error: ").strip()
        raise TraceError("run", message or f"Tracing {target} failed (exit status "
                         f"{proc.returncode}). {_FALLBACK}")
    try:
        data = json.loads(out)
        data["notes"] = tuple(data.get("notes", ()))
        return TraceResult(**data)
    except (ValueError, TypeError) as exc:
        raise TraceError("run", f"Tracing {target} printed no result ({exc}). "
                         f"{_FALLBACK}") from None


class _NoHook:
    def remove(self) -> None:
        pass


def _skip_frozen_grad_hooks(tracker: Any, params: list[Any]) -> None:
    """Let a LoRA/PEFT model (frozen base weights) trace like any other.

    MemTracker hooks every parameter's gradient, and torch refuses a hook on a
    parameter that does not require one, so frozen parameters are entered in
    the tracker's hook table (a private attribute) as hooked already; they
    never get a gradient, so nothing is missed. Without that table (another
    torch), nothing is done and the trace reports its own error.
    """
    handles = getattr(tracker, "_param_to_grad_hook_handles", None)
    if handles is None:
        return
    for p in params:
        if not p.requires_grad:
            handles[p] = (_NoHook(), _NoHook())


class _Steps:
    """Remembers which step is running so an exception can say where it happened."""

    def __init__(self) -> None:
        self.step = "build"

    @contextlib.contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        self.step = step
        try:
            yield
        except BaseException as exc:
            with contextlib.suppress(AttributeError, TypeError):
                exc._gpudesk_step = step  # type: ignore[attr-defined]
            raise


def _trace(torch: Any, fake_mode_cls: Any, tracker_cls: Any, factory: Callable[[], Any],
           specs: list[TensorSpec], setup: Setup, target: str) -> TraceResult:
    notes = ["traced on fake CPU tensors: sizes match a GPU's, less the CUDA allocator's "
             "512-byte rounding per block"]
    train = setup.mode == "train"
    amp = setup.precision.startswith("amp")
    low = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16, "bf16": torch.bfloat16,
           "fp16": torch.float16}.get(setup.precision)
    if amp:
        notes.append("autocast traced with CPU autocast; CUDA's autocast op lists differ "
                     "slightly")
    if setup.grad_checkpointing:
        notes.append("gradient checkpointing is not applied: the model is traced as the "
                     "function builds it")
    if setup.gpus > 1 or setup.zero:
        notes.append("traced for one GPU without DDP/ZeRO sharding")
    steps = _Steps()
    with fake_mode_cls(allow_non_fake_inputs=True):
        with steps("build"):
            default_dtype = torch.get_default_dtype()
            if low is not None and not amp:
                torch.set_default_dtype(low)  # pure 16-bit: build the weights in it
            try:
                model = factory()
            finally:
                torch.set_default_dtype(default_dtype)
            if not isinstance(model, torch.nn.Module):
                raise TraceError("build", f"{target} returned {type(model).__name__}, not a "
                                 f"torch.nn.Module. Return the model itself. {_FALLBACK}")
            if any(p.is_meta for p in model.parameters()):
                model = model.to_empty(device="cpu")
            if low is not None and not amp:
                with torch.no_grad():
                    for t in (*model.parameters(), *model.buffers()):
                        if t.is_floating_point() and t.dtype != low:
                            t.data = t.data.to(low)
            model.train(train)
        params = list(dict.fromkeys(model.parameters()))
        n_params = sum(p.numel() for p in params)
        optimizer = None
        if train:
            optimizer = _make_optimizer(torch, setup.optimizer,
                                        [p for p in params if p.requires_grad], notes)
        mt = tracker_cls()
        _skip_frozen_grad_hooks(mt, params)
        mt.track_external(model, *([optimizer] if optimizer is not None else []))
        autocast = (torch.autocast("cpu", dtype=low) if amp else contextlib.nullcontext())
        grad_mode = contextlib.nullcontext() if train else torch.no_grad()
        with mt:
            with steps("inputs"):
                inputs = []
                for s in specs:
                    dtype = getattr(torch, s.dtype)
                    if s.dtype in _INT_DTYPES:
                        inputs.append(torch.randint(0, s.high, s.shape, dtype=dtype))
                    elif s.dtype == "bool":
                        inputs.append(torch.zeros(s.shape, dtype=torch.bool))
                    else:
                        inputs.append(torch.randn(s.shape, dtype=low if low and not amp
                                                  else dtype))
            with steps("forward"), grad_mode:
                with autocast:
                    out = model(*inputs)
                    loss = _loss_of(torch, out) if train else None
                del out
            after_fw = _snap(mt, "current")
            if train:
                with steps("backward"):
                    assert loss is not None
                    loss.backward()
                del loss
        fwbw_peak = _snap(mt, "peak")
        after_bw = _snap(mt, "current")
        opt_peak: dict[str, int] = {}
        opt_state = 0
        if optimizer is not None:
            with mt, steps("optimizer"):
                optimizer.step()
            opt_peak = _snap(mt, "peak")
            opt_state = _storage_bytes(_optimizer_state_tensors(torch, optimizer))
        buffers = after_fw.get("BUFFER", 0)
    weights = after_fw.get("PARAM", 0)
    grads = after_bw.get("GRAD", 0) if train else 0
    acts = after_fw.get("ACT", 0)
    # A steady-state step (2, 3, ...) has the optimizer state live during forward
    # and backward; the first traced step does not, so add it to that phase.
    fwbw_total = fwbw_peak.get("Total", 0) + opt_state
    opt_total = opt_peak.get("Total", 0)
    if fwbw_total >= opt_total:
        peak, temp = fwbw_total, fwbw_peak.get("TEMP", 0)
    else:
        peak = opt_total
        temp = opt_peak.get("TEMP", 0) + max(0, opt_peak.get("OPT", 0) - opt_state)
        notes.append("the peak is in the optimizer step (its scratch tensors count as temp)")
    if buffers:
        notes.append(f"buffers (e.g. BatchNorm statistics): {buffers} bytes, in the peak "
                     "but not in weights")
    if not train:
        notes.append("inference: forward pass only, under torch.no_grad")
        acts = fwbw_peak.get("ACT", 0)
    return TraceResult(params=n_params, weights_bytes=weights, gradients_bytes=grads,
                       optimizer_bytes=opt_state, activations_bytes=acts, temp_bytes=temp,
                       peak_bytes=peak, device="cpu (fake tensors)", notes=tuple(notes))
