"""A model too big for the free memory is refused with a sentence, or loaded with a smaller context."""

from __future__ import annotations

import pytest

from gallery_app.core.models import catalog, memory, sources
from gallery_app.core.models.memory import Machine, ModelTooBig, fit_context, kv_cache_bytes
from gallery_app.core.models.runtimes import llama as llama_runtime
from gallery_app.core.models.runtimes.onnx_encoder import OnnxEncoder
from gallery_app.core.units import GiB, MiB

SMOLLM2 = catalog.SMOLLM2_135M


def machine(free_mib: float) -> Machine:
    return Machine(total_ram=8 * GiB, available_ram=int(free_mib * MiB), cores=2)


def test_the_kv_cache_estimate_is_what_llama_cpp_allocates():
    # llama.cpp, loading SmolLM2-135M at 4,096 tokens: "KV buffer size = 90.00 MiB".
    assert kv_cache_bytes(SMOLLM2.shape, 4096) == 90 * MiB


def test_a_model_that_fits_keeps_its_context_and_one_that_almost_fits_gets_a_smaller_one():
    size = SMOLLM2.size
    assert fit_context(SMOLLM2, size, SMOLLM2.shape, 4096, machine(4000)) == 4096
    assert fit_context(SMOLLM2, size, SMOLLM2.shape, 4096, machine(300)) == 2048
    assert fit_context(SMOLLM2, size, SMOLLM2.shape, 4096, machine(280)) == 1024


def test_a_model_that_does_not_fit_at_all_is_refused_with_what_it_needs_and_what_is_free():
    with pytest.raises(ModelTooBig) as refused:
        fit_context(SMOLLM2, SMOLLM2.size, SMOLLM2.shape, 4096, machine(100))
    assert "SmolLM2-135M-Instruct" in refused.value.message
    assert "105 MB free" in refused.value.message and "needs about 361 MB" in refused.value.message  # 100, 344 MiB
    assert "models recommend" in refused.value.hint


@pytest.fixture
def short_of_memory(monkeypatch):
    def set_free(free_mib: float) -> None:
        monkeypatch.setattr(memory, "this_machine", lambda: machine(free_mib))
    return set_free


@pytest.mark.e2e
def test_the_chat_model_is_refused_before_llama_cpp_reads_it(short_of_memory, monkeypatch):
    """Before: llama.cpp was asked to load whatever the person chose; on a full machine the OS killed the app."""
    short_of_memory(100)
    monkeypatch.setattr(llama_runtime, "open_llama", lambda *a, **k: pytest.fail("llama.cpp was asked to load it"))
    with pytest.raises(ModelTooBig):
        llama_runtime.ChatLLM(sources.resolve(SMOLLM2), n_ctx=4096)


@pytest.mark.e2e
def test_with_little_free_memory_the_chat_model_loads_with_a_smaller_context_and_says_so(short_of_memory):
    short_of_memory(300)
    llm = llama_runtime.ChatLLM(sources.resolve(SMOLLM2), n_ctx=4096, threads=2)
    try:
        assert llm.n_ctx == 2048
        assert "2,048 tokens of context instead of 4,096" in llm.context_notice
        assert llm.count_tokens("hello there") > 0  # it really runs with that context
        assert llm._model().n_ctx() == 2048
    finally:
        llm.release()


def test_an_onnx_model_bigger_than_the_free_memory_is_refused_before_onnx_runtime_reads_it(tmp_path, short_of_memory):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\0" * (60 * MiB))
    short_of_memory(100)
    with pytest.raises(ModelTooBig) as refused:
        OnnxEncoder(model, name="A big embedder").session
    assert refused.value.message.startswith("A big embedder needs about 193 MB")  # 184 MiB
