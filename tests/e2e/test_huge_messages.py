"""A "message" of megabytes (a file pasted into an export) costs seconds, not minutes, and stays whole (issue 23).

Before: 5 MB in one line without spaces took 31 s and 1.6 GB to import, and 5 MB of words over ten
minutes with nothing stored. WhatsApp sends at most 65,536 characters in one message, so only that
much of one is cut into passages; the stored message keeps every character.
"""

from __future__ import annotations

import random
import time

import pytest

from gallery_app.core.chat.chunking import SEARCHED_CHARS_PER_MESSAGE, ChunkInput, chunk_messages
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.whatsapp import parse_chat_text
from gallery_app.core.models.loading import open_text_embedder
from tests.text_embedders import WordHashEmbedder, write_chat

pytestmark = pytest.mark.e2e
FIVE_MB = 5_000_000
WORDS = "we could take the early train to the lake and cook at the cabin on saturday evening".split()


def _bodies() -> dict[str, str]:
    rng = random.Random(5)
    return {"no spaces": "x" * FIVE_MB,
            "words": " ".join(rng.choice(WORDS) for _ in range(FIVE_MB // 4))[:FIVE_MB],
            "base64-like": "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                                   for _ in range(FIVE_MB // 10)) * 10}


@pytest.fixture(scope="module")
def embedder():
    model = open_text_embedder(None, threads=2)
    yield model
    model.release()


@pytest.mark.parametrize("kind", list(_bodies()))
def test_a_five_megabyte_message_is_cut_in_seconds_within_the_budget(embedder, kind):
    body = _bodies()[kind]
    (message,) = parse_chat_text(f"03/04/2024, 10:01 - Bob: {body}\n").messages
    assert len(message.text) == FIVE_MB  # stored whole
    started = time.perf_counter()
    chunks = chunk_messages([ChunkInput(1, message.timestamp, "Bob", message.text)], embedder.count_tokens,
                            max_tokens=embedder.max_tokens)
    took = time.perf_counter() - started
    assert took < 15, f"{kind}: {took:.1f} s"  # was 31 s (no spaces) and over 10 minutes (words)
    assert chunks and all(chunk.tokens <= embedder.max_tokens for chunk in chunks)
    # Long runs are cut into word-sized pieces joined by spaces: count what was in the message.
    searched = sum(len(line[len("Bob: "):].replace(" ", "")) for chunk in chunks for line in chunk.lines)
    assert searched <= SEARCHED_CHARS_PER_MESSAGE


def test_the_import_summary_says_a_message_was_searched_by_its_first_part(tmp_path):
    export = write_chat(tmp_path / "pasted", ["03/04/2024, 10:00 - Ann: hi", f"03/04/2024, 10:01 - Bob: {'x' * 70_000}",
                                              "03/04/2024, 10:02 - Ann: ok"])
    from gallery_app.core.store import open_store

    summary = import_chat(open_store(), export, WordHashEmbedder())
    assert ("1 message is longer than WhatsApp sends and searched by its first 65,536 characters (the chat shows "
            "it whole)") in summary.describe()
