"""A second reading of the best passages: how likely is the question, written after each of them?

The embedder compares a question and a passage as two points; a language model reading the passage can
say how well the question follows from it (query likelihood, as in "Improving Passage Retrieval with
Zero-Shot Question Generation", Sachan et al. 2022). A small base model is enough to reorder the first
stage's best few passages: with Gemma 3 270M (offline, 140 languages) over the six real chats, mean R@3
0.70 -> 0.71, R@1 0.52 -> 0.54, evidence@1 0.34 -> 0.37, no set down (docs/chat.md). The English-only
SmolLM2-135M moved nothing. An excerpt that makes any question likely is seen through for the first place by
calibrating the reading with a question that asks nothing in particular (``calibrated_order``).

The model runs in a child process like the chat model (``ChatLLM``): if it crashes, the question is
answered from the first stage's order and says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from gallery_app.core.errors import ModelError, ModelNotAvailable
from gallery_app.core.z_scores import z_scores

#: The first stage's best this many passages are read again. 15 rather than 10 (session 44): over the six real
#: chats mean R@3 0.77 -> 0.78, worst set 0.65 -> 0.70, R@1 0.52 -> 0.54, evidence@1 0.40 -> 0.42, for about
#: 4.4 s a question on 2 cores instead of 3.0 (docs/chat.md).
READ_AGAIN_DEPTH = 15
#: How much the reading counts, in standard deviations of those passages' scores (the first stage's
#: z-scores weigh 1).
READ_AGAIN_WEIGHT = 0.5
#: A passage's excerpt is cut to this many characters, so that it and the question fit the reader's context.
PASSAGE_CHARACTERS = 1500
#: A question longer than this many characters is cut (one pass holds it with the passage's last token).
QUESTION_CHARACTERS = 400
PROMPT = "Passage: {passage}\nPlease write a question based on this passage.\nQuestion:"
#: Which passage comes first is decided among the reading's best CALIBRATED_HEAD by the reading calibrated
#: (Zhao et al. 2021, "Calibrate Before Use"): minus CALIBRATION x how likely a question that asks nothing in
#: particular is after the same excerpt, so an excerpt that makes any question likely (a long broadcast, a
#: message that asks something itself) does not come first for that alone. Over the whole reading it lifted
#: R@1 and evidence@1 but lost the third place of other questions (Nigerian 0.74 -> 0.61 at 1.0). Among the
#: best three only, over the six real chats: R@3 unchanged on every set, R@1 0.54 -> 0.56 and evidence@1 0.42 ->
#: 0.44 (Spanish loses one question of each, three sets gain). Each excerpt is read once; the content-free
#: question's tokens after it make the reading 1.19 x as long (3.9 -> 4.6 s for 15 excerpts, side by side; docs/chat.md).
CALIBRATION = 1.0
CALIBRATED_HEAD = 3
CONTENT_FREE_QUESTION = "What did they say?"
#: The model that reads: a base model (no chat template), shipped offline.
READER_MODEL = "gemma-3-270m-q4_k_m"
#: Its context: a prompt and a question fit, and its logits for one question stay small.
READER_CONTEXT = 1024

log = logging.getLogger(__name__)


class LikelihoodModel(Protocol):
    def continuation_likelihoods(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[list[float]]: ...


def question_likelihoods(model: LikelihoodModel, passages: Sequence[str], question: str,
                         *others: str) -> np.ndarray:
    """Per passage (rows), the mean log-probability of the question's tokens written after it (column 0), and of
    each of ``others`` (the next columns)."""
    prompts = [PROMPT.format(passage=passage[:PASSAGE_CHARACTERS]) for passage in passages]
    continuations = [" " + text.strip()[:QUESTION_CHARACTERS] for text in (question, *others)]
    found = np.asarray(model.continuation_likelihoods(prompts, continuations), dtype=np.float64)
    return found[:, 0] if not others else found


def reread_order(scores: np.ndarray, likelihoods: np.ndarray, weight: float) -> np.ndarray:
    """The order (indexes into ``scores``) of passages by their first-stage score and the reading together."""
    combined = z_scores(scores) + weight * z_scores(likelihoods)
    return np.argsort(-combined, kind="stable")


def calibrates() -> bool:
    """Whether the first place is chosen by the calibrated reading (read when asked, so a bench's --constant
    reaches it); when not, the content-free question is not asked at all (with CALIBRATION 0 or a head of one,
    ``calibrated_order`` would keep the plain order anyway)."""
    return bool(CALIBRATION) and CALIBRATED_HEAD >= 2


def calibrated_order(scores: np.ndarray, likelihoods: np.ndarray, content_free: np.ndarray | None,
                     weight: float) -> np.ndarray:
    """``reread_order``, with the one of its best CALIBRATED_HEAD that the calibrated reading ranks highest first;
    the rest keep their order (the calibrated reading was measured better at the first place only)."""
    order = reread_order(scores, likelihoods, weight)
    if content_free is None:
        return order
    place = np.empty(len(order), dtype=int)
    place[reread_order(scores, likelihoods - CALIBRATION * content_free, weight)] = np.arange(len(order))
    head = order[:CALIBRATED_HEAD]
    first = head[np.argmin(place[head])]
    return np.concatenate([[first], order[order != first]])


class SecondReading:
    """Reorders a ranking's first passages by a language model's reading; keeps the ranking on failure."""

    def __init__(self, model: LikelihoodModel):
        self.model = model

    @property
    def depth(self) -> int:
        return READ_AGAIN_DEPTH  # read when asked, so that a bench's --constant reaches it

    def reorder(self, scores: np.ndarray, passages: Sequence[str], question: str) -> np.ndarray | None:
        """The new order of ``passages`` (best first, scored ``scores``), or None when the model failed."""
        if len(passages) < 2 or not question.strip():
            return np.arange(len(passages))
        try:
            if calibrates():
                read = question_likelihoods(self.model, passages, question, CONTENT_FREE_QUESTION)
                likelihoods, content_free = read[:, 0], read[:, 1]
            else:
                likelihoods, content_free = question_likelihoods(self.model, passages, question), None
        except ModelError as error:
            log.warning("The second reading was skipped: %s", error.message)
            return None
        return calibrated_order(np.asarray(scores, dtype=np.float64), likelihoods, content_free, READ_AGAIN_WEIGHT)

    def release(self) -> None:
        release = getattr(self.model, "release", None)
        if release is not None:
            release()


def reader_model():
    """The reader's model file (a ``ResolvedModel``), joined from its installed packages on first use."""
    from gallery_app.core.models import sources
    from gallery_app.core.models.catalog import spec_by_key

    spec = spec_by_key(READER_MODEL)
    try:
        return sources.resolve(spec)
    except ModelNotAvailable:
        if not sources.can_assemble(spec):
            raise
        return sources.fetch(spec)


def open_second_reading() -> SecondReading | None:
    """The second reading with its offline model, or None (the first search's order) when that model is not
    installed or does not fit in memory. Its parts ship as packages: the first use joins them into the models
    folder (about 250 MB, no download)."""
    from gallery_app.core.models.runtimes.llama import ChatLLM

    try:
        return SecondReading(ChatLLM(reader_model(), n_ctx=READER_CONTEXT))
    except ModelError as error:
        log.warning("Passages are not read a second time: %s", error.message)
        return None
