"""The real CLIP ViT-B/32 finds the demo photos by their descriptions.

Optional: runs only when ``GALLERY_APP_REAL_MODELS_DIR`` names a models folder holding both
CLIP towers with the catalogue's exact sizes and sha256 (e.g. one filled by
``gallery-app-cli models fetch clip-vit-b-32-text`` and ``... clip-vit-b-32-vision``); skipped
otherwise. The random-weight towers of ``bench/make_random_clip.py`` fail the checksum on purpose.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from gallery_app.core.models import sources
from gallery_app.core.models.catalog import CLIP_B32_TEXT, CLIP_B32_VISION
from gallery_app.core.models.runtimes.clip import ClipTextEncoder, ClipVisionEncoder
from gallery_app.core.photos.decode import decode_image
from gallery_app.core.photos.preparing import DECODE_SIDE, model_input

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REAL_MODELS_ENV = "GALLERY_APP_REAL_MODELS_DIR"
PHOTOS = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"
LABELS: dict[str, str] = json.loads((PHOTOS / "labels.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def clip():
    """(photo names, their unit vectors, the text encoder) from the real, checksum-verified towers."""
    folder = os.environ.get(REAL_MODELS_ENV)
    if not folder or not Path(folder).is_dir():
        pytest.skip(f"set {REAL_MODELS_ENV} to a models folder with the real CLIP ViT-B/32 ONNX files"
                    + (f" ({folder} is not a folder)" if folder else ""))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GALLERY_APP_MODELS_DIR", folder)
        resolved = {}
        for spec in (CLIP_B32_VISION, CLIP_B32_TEXT):
            found = sources.locate(spec)
            if found is None or found.source is not sources.Source.MODELS_FOLDER:
                pytest.skip(f"{REAL_MODELS_ENV}={folder} lacks {spec.key}/ "
                            f"({', '.join(f.name for f in spec.files)})")
            bad = [c.detail for c in sources.check(found, full=True) if not c.status.ok]
            if bad:
                pytest.skip(f"{spec.key} in {folder} is not the real model: {'; '.join(bad)}")
            resolved[spec.key] = found
    names = sorted(LABELS)
    pixels = np.stack([model_input(decode_image(PHOTOS / name, max_side=DECODE_SIDE).rgb) for name in names])
    vision = ClipVisionEncoder(resolved[CLIP_B32_VISION.key], threads=2)
    text = ClipTextEncoder(resolved[CLIP_B32_TEXT.key], threads=2)
    yield names, vision.embed_pixels(pixels), text
    vision.release()
    text.release()


def _ranked(clip, query: str) -> list[str]:
    names, image_vectors, text = clip
    scores = image_vectors @ text.embed_text(query)
    return [names[i] for i in np.argsort(-scores)]


def test_a_cat_ranks_the_cat_photo_first(clip):
    assert _ranked(clip, "a photo of a cat")[0] == "chelsea.png"


@pytest.mark.parametrize("name", sorted(LABELS))
def test_each_description_finds_its_photo_in_the_top_two(clip, name):
    assert name in _ranked(clip, LABELS[name])[:2]
