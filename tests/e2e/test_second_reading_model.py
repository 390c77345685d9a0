"""The second reading's model for real: Gemma 3 270M (joined from its packages) in a child process.

Its likelihoods equal llama.cpp's own logits read the plain way, and a reader that crashes leaves the
question answered in the first order, and the next question gets a fresh reader.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from gallery_app.core.chat.second_reading import PROMPT, SecondReading, open_second_reading, question_likelihoods
from gallery_app.core.models.runtimes.llama_backend import llama_cpp_module

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

QUESTION = "How much did Daniel's new walking boots cost?"
MESSAGES = ["Daniel: New boots! Proper ones. Waterproof", "Maya: Look at you! Very serious walker",
            "Daniel: £79 in the sale"]


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # module-wide, so before the per-test folders exist
        patch.setenv("GALLERY_APP_MODELS_DIR", str(tmp_path_factory.mktemp("reader-models")))
        reading = open_second_reading()
    assert reading is not None, "Gemma 3 270M's packages are installed by the test command"
    yield reading
    reading.release()


def plain_mean_log_likelihood(path, prompt: str, continuation: str) -> float:
    """What llama-cpp-python gives with every logit kept (``logits_all``), in this process."""
    llama = llama_cpp_module().Llama(model_path=str(path), n_ctx=512, logits_all=True, verbose=False, n_threads=2)
    try:
        head = llama.tokenize(prompt.encode(), add_bos=True, special=False)
        tail = llama.tokenize(continuation.encode(), add_bos=False, special=False)
        llama.eval(head + tail)
        rows = np.asarray(llama.scores[len(head) - 1:len(head) + len(tail) - 1], dtype=np.float64)
        rows -= rows.max(axis=1, keepdims=True)
        log_probs = rows - np.log(np.exp(rows).sum(axis=1, keepdims=True))
        return float(log_probs[np.arange(len(tail)), tail].mean())
    finally:
        llama.close()


def test_the_childs_likelihoods_are_llama_cpps_own(reading):
    found = question_likelihoods(reading.model, MESSAGES, QUESTION)
    expected = [plain_mean_log_likelihood(reading.model.resolved.path, PROMPT.format(passage=m), " " + QUESTION)
                for m in MESSAGES]
    # Not to the last digit: the prompt is read in other batches than the plain way reads it, and the 4-bit
    # kernels round by batch shape (0.025 apart on an AVX2-only EPYC). A logit row off by one token is
    # whole nats away.
    assert np.allclose(found, expected, atol=0.05), (found, expected)
    # Read in another order, each passage gets the same value: nothing of one prompt is left for the next.
    assert np.allclose(question_likelihoods(reading.model, MESSAGES[::-1], QUESTION)[::-1], found, atol=0.02)


def test_a_second_continuation_reads_the_prompt_once_and_is_what_it_is_alone(reading):
    """The calibrated reading asks two questions after each excerpt; the second must not see the first's tokens."""
    other = "What did they say?"
    both = question_likelihoods(reading.model, MESSAGES, QUESTION, other)
    assert both.shape == (len(MESSAGES), 2)
    assert np.allclose(both[:, 0], question_likelihoods(reading.model, MESSAGES, QUESTION), atol=0.02)
    assert np.allclose(both[:, 1], question_likelihoods(reading.model, MESSAGES, other), atol=0.02)
    swapped = question_likelihoods(reading.model, MESSAGES, other, QUESTION)
    assert np.allclose(swapped[:, ::-1], both, atol=0.02)


def test_a_crashed_reader_leaves_the_order_and_the_next_question_gets_a_fresh_one(reading):
    scores = np.array([2.0, 1.0, 0.5])
    assert reading.reorder(scores, MESSAGES, QUESTION) is not None
    os.kill(reading.model.process_id, signal.SIGSEGV)
    assert SecondReading(reading.model).reorder(scores, MESSAGES, QUESTION) is None
    assert reading.reorder(scores, MESSAGES, QUESTION) is not None
