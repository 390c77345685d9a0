"""Keyword search (FTS5 on ``chunks_fts``, BM25) fused into the ranking finds what the embedder cannot see."""

from __future__ import annotations

import re

import pytest

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.retrieval import ChatRetriever
from tests.chat_helpers import DEMO_CHAT, HashEmbedder

QUESTION = "4418?"


class BlindToNumbers(HashEmbedder):
    """Small embedders blur digits: this one cannot see them at all, so "4418" means nothing to it."""

    model_key = "test-blind-to-numbers"

    def _vector(self, text: str):
        return super()._vector(re.sub(r"\d", "", text))


@pytest.fixture
def chat_store(store):
    import_chat(store, DEMO_CHAT, BlindToNumbers())
    return store


def test_the_embedder_alone_misses_the_code(chat_store):
    found = ChatRetriever(chat_store, BlindToNumbers()).retrieve(QUESTION, k=3)
    assert found.matches and not any("4418" in match.text for match in found.matches)


def test_keyword_fusion_finds_the_passage_with_the_exact_code(chat_store):
    found = ChatRetriever(chat_store, BlindToNumbers(), use_keywords=True).retrieve(QUESTION, k=3)
    assert "Daniel: Margaret sent the key safe code: 4418" in found.matches[0].text
