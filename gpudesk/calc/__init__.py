"""The calculator: GPU memory and time-to-finish maths for one job, and where its inputs come from.

``model`` (a model's published shape, the input error), ``finetune`` (LoRA,
QLoRA, quantized weights), ``sizing`` (the estimate, presets, batch and GPU
counts, FLOPs), ``hf_config`` (a Hugging Face ``config.json`` into a model),
``hf_hub`` (that file fetched from the Hub and cached) and ``tracing`` (one
training step of the user's own model under PyTorch's fake tensors; torch is
imported only inside its functions). Each imports only the ones before it.

May import: the standard library, ``gpudesk.i18n_marks`` and ``services.core``
(``hf_hub``'s cache folder and atomic write). Never Qt, never another room of
``gpudesk.services``: the planner, the CLI and the window all import this.
"""
