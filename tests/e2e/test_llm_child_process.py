"""The chat model runs in a child process: a native crash there is one sentence, and the next question works."""

from __future__ import annotations

import signal

import pytest

from gallery_app.core.models import catalog, sources
from gallery_app.core.models.runtimes.llama import ChatLLM
from gallery_app.core.models.runtimes.llama_process import LanguageModelCrashed
from tests.llm_crash import crash_in_the_next_answer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def smollm():
    model = ChatLLM(sources.resolve(catalog.SMOLLM2_135M), n_ctx=512, threads=2)
    yield model
    model.release()


def complete(llm: ChatLLM, prompt: str, tokens: int = 24) -> str:
    return "".join(llm.stream_completion(llm.tokenize(prompt), max_tokens=tokens))


@pytest.mark.parametrize("sig, said", [(signal.SIGSEGV, "signal 11, SIGSEGV"),
                                       (signal.SIGKILL, "signal 9, SIGKILL: killed, perhaps for lack of memory"),
                                       (signal.SIGABRT, "signal 6, SIGABRT")])
def test_a_child_that_dies_mid_answer_is_one_sentence_and_the_next_answer_starts_a_fresh_one(
        smollm, monkeypatch, sig, said):
    killed = crash_in_the_next_answer(monkeypatch, sig)
    pieces: list[str] = []
    with pytest.raises(LanguageModelCrashed) as crash:
        for piece in smollm.stream_completion(smollm.tokenize("The capital of France is"), max_tokens=24):
            pieces.append(piece)
    assert len(pieces) == 1  # the piece read before the crash reached the caller
    assert str(crash.value).startswith(f"The language model stopped unexpectedly ({said}). Your chats are safe. "
                                       "Ask again to restart SmolLM2")
    assert not smollm.loaded and smollm.process_id is None

    again = complete(smollm, "The capital of France is")
    assert again.strip() and smollm.process_id not in (None, killed[0])


def test_the_child_answers_as_the_library_would_in_process(smollm):
    """Same tokens, same greedy text as llama.cpp in this process (the child changes where, not what)."""
    from gallery_app.core.models.runtimes.llama import open_llama

    prompt = "The capital of France is"
    in_child = complete(smollm, prompt)
    llama = open_llama(smollm.resolved.path, n_ctx=512, threads=2, seed=0)
    try:
        tokens = llama.tokenize(prompt.encode(), add_bos=True, special=False)
        assert tokens == smollm.tokenize(prompt)
        here = llama.create_completion(prompt=tokens, max_tokens=24, temperature=0.0, top_k=1, seed=0,
                                       repeat_penalty=1.1)["choices"][0]["text"]
    finally:
        llama.close()
    assert in_child == here


def test_a_stopped_answer_leaves_the_child_ready_for_the_next(smollm):
    from gallery_app.core.errors import Cancelled

    asked = iter([False, True])
    with pytest.raises(Cancelled):
        for _ in smollm.stream_completion(smollm.tokenize("Once upon a time"), max_tokens=200,
                                          cancel=lambda: next(asked, True)):
            pass
    pid = smollm.process_id
    assert complete(smollm, "The capital of France is").strip()
    assert smollm.process_id == pid  # the same child: stopping is not a crash


def test_a_released_model_ends_its_child(smollm):
    import psutil

    complete(smollm, "Hello")
    child = psutil.Process(smollm.process_id)
    smollm.release()
    child.wait(10)
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
