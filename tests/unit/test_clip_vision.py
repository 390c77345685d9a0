"""The CLIP vision runtime on a CLIP-shaped test tower whose outputs are known in advance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gallery_app.core.errors import ModelError
from gallery_app.core.models import catalog
from gallery_app.core.models.runtimes.clip import ClipVisionEncoder
from gallery_app.core.models.sources import ResolvedModel, Source
from gallery_app.core.models.specs import ModelFile
from gallery_app.core.photos.clip_preprocess import preprocess
from gallery_app.core.photos.decode import decode_image
from tests.clip_models import build_vision_tower
from tests.conftest import SHARED_FIXTURES

PHOTOS = SHARED_FIXTURES / "photos"


@pytest.fixture(scope="module")
def tower(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "vision_model.onnx"
    weights = build_vision_tower(path)
    spec = dataclasses.replace(catalog.CLIP_B32_VISION, key="clip-test-vision",
                               files=(ModelFile("vision_model.onnx"),))
    encoder = ClipVisionEncoder(ResolvedModel(spec, Source.LOCAL_FILE, {"vision_model.onnx": path}),
                                threads=1, batch_size=4)
    yield encoder, weights
    encoder.release()


def expected(pixels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    raw = pixels.mean(axis=(2, 3)) @ weights
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


@pytest.mark.shared_fixtures
def test_photos_reach_the_model_as_expected(tower):
    encoder, weights = tower
    images = [decode_image(PHOTOS / "skimage" / name, max_side=224).rgb
              for name in ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "camera.png")]
    pixels = preprocess(images)
    vectors = encoder.embed_pixels(pixels)
    assert vectors.shape == (5, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(pixels, weights), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_batching_does_not_change_vectors(tower):
    encoder, _ = tower
    pixels = np.random.default_rng(3).standard_normal((9, 3, 224, 224)).astype(np.float32)
    together = encoder.embed_pixels(pixels)
    one_by_one = np.concatenate([encoder.embed_pixels(pixels[i:i + 1]) for i in range(9)])
    np.testing.assert_allclose(together, one_by_one, atol=1e-6)


@pytest.mark.shared_fixtures
def test_swapped_red_and_blue_give_a_different_vector(tower):
    encoder, _ = tower
    image = decode_image(PHOTOS / "skimage" / "coffee.png", max_side=224).rgb
    pixels = preprocess([image])
    swapped = pixels[:, ::-1].copy()
    assert float(encoder.embed_pixels(pixels)[0] @ encoder.embed_pixels(swapped)[0]) < 0.999


def test_wrong_input_is_refused(tower):
    encoder, _ = tower
    with pytest.raises(ModelError, match="float32"):
        encoder.embed_pixels(np.zeros((1, 224, 224, 3), np.float32))
    assert encoder.embed_pixels(np.zeros((0, 3, 224, 224), np.float32)).shape == (0, 512)
