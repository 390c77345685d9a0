"""How much memory a model takes on this machine, and whether the machine has it right now.

The numbers are estimates made before a runtime loads anything, so that a model too big for the
computer gets a sentence instead of an out-of-memory kill:

- a GGUF chat model: its file (llama.cpp maps it and reads all of it for every token), its KV cache
  (keys and values in f16 for every layer and every token of the context), and its compute buffer
  (dominated by the logits of a 512-token batch: 4 bytes per vocabulary entry per token). For
  SmolLM2-135M at 4,096 tokens llama.cpp reports 92 + 90 + 99 MiB; this estimate gives 94 + 90 + 96.
- an ONNX model: twice its file (the weights, then ONNX Runtime's arena and activations).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gallery_app.core.errors import ModelNotAvailable
from gallery_app.core.models.specs import LlmShape, ModelSpec, Runtime
from gallery_app.core.units import MiB, describe_size

#: The runtime's own code and bookkeeping, beside a model's weights and buffers.
RUNTIME_OVERHEAD = 64 * MiB
#: llama.cpp evaluates a prompt in batches of this many tokens.
BATCH_TOKENS = 512
#: The context the chat model is asked for unless the settings say otherwise (AskOptions.context_tokens).
CONTEXT_TOKENS = 4096
#: The smallest context the app lowers to when memory is short: a prompt of a few passages and an answer.
MIN_CONTEXT = 1024


@dataclass(frozen=True)
class Machine:
    total_ram: int
    available_ram: int
    cores: int


def this_machine() -> Machine:
    """Total and available RAM (what can be used without swapping) and the physical cores of this computer."""
    import psutil

    memory = psutil.virtual_memory()
    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    return Machine(total_ram=int(memory.total), available_ram=int(memory.available), cores=int(cores))


def kv_cache_bytes(shape: LlmShape, n_ctx: int) -> int:
    return 2 * shape.layers * n_ctx * shape.kv_heads * shape.head_dim * 2


def llm_bytes(file_size: int, shape: LlmShape, n_ctx: int) -> int:
    return file_size + kv_cache_bytes(shape, n_ctx) + BATCH_TOKENS * 4 * shape.vocab + RUNTIME_OVERHEAD


def onnx_bytes(file_size: int) -> int:
    return 2 * file_size + RUNTIME_OVERHEAD


def ram_needed(spec: ModelSpec, n_ctx: int = CONTEXT_TOKENS, *, file_size: int | None = None,
               shape: LlmShape | None = None) -> int | None:
    """The memory ``spec`` takes with a context of ``n_ctx`` tokens; None when its size is not known."""
    size = file_size if file_size is not None else spec.size
    if size is None:
        return None
    if spec.runtime is Runtime.GGUF:
        shape = shape or spec.shape
        return None if shape is None else llm_bytes(size, shape, min(n_ctx, spec.max_tokens))
    return onnx_bytes(size)


class ModelTooBig(ModelNotAvailable):
    """The model needs more memory than this computer has free; nothing was loaded."""


def too_big(name: str, needed: int, available: int) -> ModelTooBig:
    return ModelTooBig(
        f"{name} needs about {describe_size(needed)} of memory and this computer has "
        f"{describe_size(available)} free, so it was not loaded.",
        hint="Close other programs, or use a smaller model (gallery-app-cli models recommend lists what fits).")


def refuse_if_too_big(name: str, needed: int, machine: Machine | None = None) -> None:
    """Raises ``ModelTooBig`` before a runtime reads a model that needs more than the free memory."""
    machine = machine or this_machine()
    if needed > machine.available_ram:
        raise too_big(name, needed, machine.available_ram)


def fit_context(spec: ModelSpec, file_size: int, shape: LlmShape, n_ctx: int,
                machine: Machine | None = None) -> int:
    """The context to load a chat model with: ``n_ctx``, or less when that is what fits in free memory.

    Halves down to ``MIN_CONTEXT``; a model that does not fit even then raises ``ModelTooBig``.
    """
    machine = machine or this_machine()
    wanted = context = min(n_ctx, spec.max_tokens)
    while llm_bytes(file_size, shape, context) > machine.available_ram:
        if context <= MIN_CONTEXT:
            raise too_big(spec.name, llm_bytes(file_size, shape, wanted), machine.available_ram)
        context = max(MIN_CONTEXT, context // 2)
    return context
