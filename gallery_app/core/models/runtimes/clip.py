"""CLIP's two towers as ONNX graphs: photos → vectors and text → vectors, in one space.

The graphs follow the Xenova export of ViT-B/32: the vision tower takes ``pixel_values``
float32 (n, 3, 224, 224) and returns ``image_embeds`` (n, 512); the text tower takes
``input_ids`` int64 (n, 77) and returns ``text_embeds`` (n, 512). Neither normalises its
output, so both are L2-normalised here: a dot product is then the cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gallery_app.core.errors import ModelError
from gallery_app.core.models.runtimes.embedders import l2_normalise
from gallery_app.core.models.runtimes.onnx_encoder import OnnxEncoder
from gallery_app.core.models.runtimes.vector_model import VectorModel
from gallery_app.core.models.sources import ResolvedModel
from gallery_app.core.models.specs import Role

VISION_INPUT, VISION_OUTPUT = "pixel_values", "image_embeds"
TEXT_INPUT, TEXT_OUTPUT = "input_ids", "text_embeds"
DEFAULT_BATCH = 16


class _ClipTower(VectorModel):
    output: str

    def __init__(self, resolved: ResolvedModel, model_file: str, *, threads: int | None = None,
                 batch_size: int = DEFAULT_BATCH):
        super().__init__(resolved)
        self.batch_size = batch_size
        self._encoder = OnnxEncoder(resolved.paths[model_file], threads=threads, name=resolved.spec.name)

    def _run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        (output,) = self._encoder.run(feeds, [self.output])
        output = np.asarray(output, dtype=np.float32)
        if output.ndim != 2 or output.shape[1] != self.dims:
            raise ModelError(f"{self.spec.name} returned shape {output.shape}; expected (n, {self.dims}).")
        return l2_normalise(output)

    def release(self) -> None:
        self._encoder.release()


class ClipVisionEncoder(_ClipTower):
    role = Role.CLIP_VISION
    output = VISION_OUTPUT

    def __init__(self, resolved: ResolvedModel, **kwargs):
        super().__init__(resolved, resolved.spec.files[0].name, **kwargs)

    def embed_pixels(self, pixel_values: np.ndarray) -> np.ndarray:
        """Vectors for already pre-processed images: (n, 3, 224, 224) float32 → (n, dims), unit length."""
        pixel_values = np.asarray(pixel_values)
        if pixel_values.ndim != 4 or pixel_values.shape[1] != 3 or pixel_values.dtype != np.float32:
            raise ModelError(f"Photos must reach CLIP as float32 (n, 3, H, W); got {pixel_values.dtype} "
                             f"{pixel_values.shape}.")
        if not len(pixel_values):
            return np.zeros((0, self.dims), np.float32)
        parts = [self._run({VISION_INPUT: np.ascontiguousarray(pixel_values[i:i + self.batch_size])})
                 for i in range(0, len(pixel_values), self.batch_size)]
        return np.concatenate(parts)


class ClipTextEncoder(_ClipTower):
    role = Role.CLIP_TEXT
    output = TEXT_OUTPUT

    def __init__(self, resolved: ResolvedModel, **kwargs):
        model_file = next(f.name for f in resolved.spec.files if f.name.endswith(".onnx"))
        super().__init__(resolved, model_file, **kwargs)
        # Imported here, so the photo modules that import this one load `tokenizers` only for a text tower.
        from gallery_app.core.models.runtimes.clip_tokenizer import ClipTokenizer

        self.tokenizer = ClipTokenizer(resolved.paths["tokenizer.json"])

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), np.float32)
        parts = [self._run({TEXT_INPUT: self.tokenizer.encode_batch(texts[i:i + self.batch_size])})
                 for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def embed_text(self, text: str) -> np.ndarray:
        return self.embed_texts([text])[0]
