"""The CLIP text runtime: tokenizer.json + text tower, on a test tower whose output is known."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gallery_app.core.models import catalog
from gallery_app.core.models.runtimes.clip import ClipTextEncoder
from gallery_app.core.models.runtimes.clip_tokenizer import EOT_ID, SOT_ID, save_clip_tokenizer_json
from gallery_app.core.models.sources import ResolvedModel, Source
from gallery_app.core.models.specs import ModelFile
from tests.clip_models import build_text_tower, clip_vocab_file


@pytest.fixture(scope="module")
def text_tower(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip-text")
    weights = build_text_tower(folder / "text_model.onnx")
    save_clip_tokenizer_json(clip_vocab_file(), folder / "tokenizer.json")
    spec = dataclasses.replace(catalog.CLIP_B32_TEXT, key="clip-test-text",
                               files=(ModelFile("text_model.onnx"), ModelFile("tokenizer.json")))
    paths = {"text_model.onnx": folder / "text_model.onnx", "tokenizer.json": folder / "tokenizer.json"}
    encoder = ClipTextEncoder(ResolvedModel(spec, Source.LOCAL_FILE, paths), threads=1, batch_size=2)
    yield encoder, weights
    encoder.release()


def test_text_reaches_the_model_as_clip_token_ids(text_tower):
    encoder, weights = text_tower
    ids = np.zeros(77, np.int64)
    ids[:6] = [SOT_ID, 320, 1125, 539, 320, 2368]  # "a photo of a cat"
    ids[6] = EOT_ID
    expected = ids.astype(np.float32) @ weights
    np.testing.assert_allclose(encoder.embed_text("A  photo of a CAT "), expected / np.linalg.norm(expected),
                               atol=1e-5)


def test_batches_of_any_size_give_the_same_vectors(text_tower):
    encoder, _ = text_tower
    texts = ["snowy mountains", "a dog on a beach", "coffee", "a red rocket at night", "x " * 200]
    together = encoder.embed_texts(texts)
    alone = np.stack([encoder.embed_text(text) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)
    assert encoder.embed_texts([]).shape == (0, 512)
