"""Photo indexing throughput against raw model throughput, and reduced-size JPEG decoding.

Pipeline efficiency
    ``PhotoIndexer.add_folder`` end to end as the app runs it (scan, read, hash, decode with EXIF
    orientation, thumbnail written to the cache, CLIP pre-processing, vision model, rows and vectors
    committed in batches) into a fresh store, in images per second, against the vision model alone on
    the same photos already turned into tensors, measured in the same run, alternating, median of
    ``--repeat``. Efficiency = end to end / raw. Both use the random-weight ViT-B/32 of
    ``bench/make_random_clip.py`` (``make random-clip``) so the compute costs are the real model's.

    Corpora: ``whatsapp`` is ``--count`` photos the size WhatsApp sends (longer side 1600, JPEG q80) made
    from the real iPhone photos among the fixtures; ``12mp`` is ``--count`` 12 MP camera JPEGs from the same
    photos (4032×3024); ``mixed`` is every photo the shared fixtures and the demo hold that decodes (phone HEICs,
    camera JPEGs, PNG, WebP, GIF, TIFF, …, 8×8 to 12 MP), each copied ``--copies`` times with a few
    unique bytes appended so every copy is new content (same decoding cost, new hash). Pass ``--photos DIR``
    to measure your own folder.

    On 2 cores the model and the decoding share the same CPUs, so no pipeline can beat
    ``model CPU / (model CPU + preparation CPU)``; the table prints that bound from CPU times measured in
    the same run, and how close the pipeline gets to it.

Reduced-size decode
    A 12-megapixel JPEG (a real iPhone photo) brought to the size the app needs (shorter side 256, upright,
    RGB) two ways: decoding every pixel and then scaling down, and (as the app does) asking the JPEG
    decoder for the smallest 1/2–1/8 scale that still covers the thumbnail and the 224-pixel model input.

Run: ``make random-clip && python bench/photos_index.py`` (about two minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gallery_app.core.photos.decode import decode_image  # noqa: E402
from gallery_app.core.photos.preparing import DECODE_SIDE, is_photo_file, prepare_photo  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures" / "photos"
DEMO = REPO / "resources" / "demo" / "photos"
TWELVE_MP_SOURCES = [FIXTURES / "pillow_heif" / "heif_other" / name for name in ("pug.heic", "arrow.heic")]


def camera_jpeg(path: Path, seed: int) -> None:
    """A real 12 MP phone photo (the iPhone HEICs of the fixtures) saved as a camera JPEG, varied per seed.

    Real sensor content matters: JPEG decoding time follows the entropy of the picture, and synthetic
    images (flat, or with artificial noise) compress and decode quite differently from photos.
    """
    source = TWELVE_MP_SOURCES[seed % len(TWELVE_MP_SOURCES)]
    with Image.open(source) as image:
        picture = ImageOps.exif_transpose(image).convert("RGB")
    if seed // len(TWELVE_MP_SOURCES) % 2:
        picture = ImageOps.mirror(picture)
    picture.save(path, "JPEG", quality=90 + seed % 5, exif=Image.Exif().tobytes())


def mixed_corpus(folder: Path, copies: int) -> list[Path]:
    sources = [p for root in (FIXTURES, DEMO) for p in sorted(root.rglob("*")) if p.is_file() and is_photo_file(p)]
    sources = [p for p in sources if prepare_photo(p).skipped is None]
    written = []
    for copy in range(copies):
        for number, source in enumerate(sources):
            target = folder / f"{copy:02d}-{number:03d}{source.suffix.lower()}"
            # Trailing bytes after the image data change the hash, not the pixels or the decoding work.
            target.write_bytes(source.read_bytes() + f"copy {copy}".encode())
            written.append(target)
    return written


def whatsapp_corpus(folder: Path, count: int) -> list[Path]:
    """Photos as WhatsApp sends them (longer side 1600, JPEG quality 80), from the real 12 MP phone photos."""
    paths = []
    for i in range(count):
        paths.append(folder / f"IMG-2024{i:04d}-WA0001.jpg")
        with Image.open(TWELVE_MP_SOURCES[i % len(TWELVE_MP_SOURCES)]) as image:
            picture = ImageOps.exif_transpose(image).convert("RGB")
        picture.thumbnail((1600, 1600), Image.Resampling.LANCZOS)
        if i // len(TWELVE_MP_SOURCES) % 2:
            picture = ImageOps.mirror(picture)
        picture.rotate(i % 7 - 3, resample=Image.Resampling.BILINEAR).save(paths[-1], "JPEG", quality=80)
    return paths


def twelve_mp_corpus(folder: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        paths.append(folder / f"IMG_{i:04d}.jpg")
        camera_jpeg(paths[-1], i)
    return paths


def raw_inference(vision, tensors: np.ndarray) -> tuple[float, float]:
    """(images/s, CPU seconds per image) of the model alone."""
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(tensors), 32):
        vision.embed_pixels(tensors[start:start + 32])
    return len(tensors) / (time.perf_counter() - started), (time.process_time() - cpu) / len(tensors)


def preparing_cpu(paths: list[Path]) -> float:
    """CPU seconds per photo of everything but the model (read, hash, decode, thumbnail, pre-process)."""
    data = Path(tempfile.mkdtemp(prefix="bench-photos-prepare-"))
    previous = os.environ.get("GALLERY_APP_DATA_DIR")
    os.environ["GALLERY_APP_DATA_DIR"] = str(data)
    try:
        cpu = time.process_time()
        for path in paths:
            prepare_photo(path)
        return (time.process_time() - cpu) / len(paths)
    finally:
        shutil.rmtree(data, ignore_errors=True)
        if previous is not None:
            os.environ["GALLERY_APP_DATA_DIR"] = previous


def end_to_end(vision, folder: Path, workers: int | None) -> tuple[float, object]:
    from gallery_app.core.photos.indexer import PhotoIndexer
    from gallery_app.core.store import open_store

    data = Path(tempfile.mkdtemp(prefix="bench-photos-data-"))
    os.environ["GALLERY_APP_DATA_DIR"] = str(data)
    conn = open_store()
    try:
        started = time.perf_counter()
        summary = PhotoIndexer(conn, vision, workers=workers).add_folder(folder)
        rate = summary.embedded / (time.perf_counter() - started)
    finally:
        conn.close()
        shutil.rmtree(data, ignore_errors=True)
    return rate, summary


def measure_corpus(name: str, vision, folder: Path, repeat: int, workers: int | None) -> tuple[float, float]:
    paths = sorted(p for p in folder.iterdir() if is_photo_file(p))
    prepared = [prepare_photo(p) for p in paths]  # also fills the page cache for both sides equally
    tensors = np.stack([p.pixel_values for p in prepared if p.pixel_values is not None])
    raw_inference(vision, tensors[:32])  # warm-up: first runs allocate
    raws, e2es, model_cpu, prepare_cpu = [], [], [], []
    for _ in range(repeat):
        rate, cpu = raw_inference(vision, tensors)
        raws.append(rate)
        model_cpu.append(cpu)
        prepare_cpu.append(preparing_cpu(paths))
        rate, summary = end_to_end(vision, folder, workers)
        e2es.append(rate)
    raw, e2e = statistics.median(raws), statistics.median(e2es)
    model, prepare = statistics.median(model_cpu), statistics.median(prepare_cpu)
    # With every core busy, the best a pipeline can do is the model's share of all the CPU work.
    bound = model / (model + prepare)
    print(f"{name:<9} {len(tensors):>6} {raw:>9.1f} {e2e:>11.1f} {100 * e2e / raw:>10.1f}%  {model * 1000:>8.1f} "
          f"{prepare * 1000:>10.1f} {100 * bound:>7.1f}% {100 * e2e / raw / bound:>8.1f}%   "
          f"(raw {', '.join(f'{r:.1f}' for r in raws)}; end to end {', '.join(f'{r:.1f}' for r in e2es)})")
    return raw, e2e


def decode_timing(folder: Path, repeat: int) -> None:
    path = folder / "decode-12mp.jpg"
    camera_jpeg(path, 0)
    full, reduced = [], []
    for _ in range(repeat):
        for target, reduce in ((full, False), (reduced, True)):
            started = time.perf_counter()
            decode_image(path, max_side=DECODE_SIDE, reduced_decode=reduce)
            target.append(time.perf_counter() - started)
    f, r = statistics.median(full) * 1000, statistics.median(reduced) * 1000
    with Image.open(path) as image:
        size = f"{image.width}×{image.height}, {path.stat().st_size / 1e6:.1f} MB"
    print(f"\nDecode of a 12 MP JPEG ({size}), median of {repeat}, interleaved:")
    print(f"  every pixel decoded, then scaled to {DECODE_SIDE}     {f:7.1f} ms")
    print(f"  JPEG decoder asked for ≥ {DECODE_SIDE} (1/8 scale) {r:7.1f} ms   → {f / r:.1f}× faster")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=Path, default=REPO / ".cache" / "random-clip",
                        help="models folder with the random-weight CLIP (make random-clip)")
    parser.add_argument("--photos", type=Path, help="measure this folder instead of the built-in corpora")
    parser.add_argument("--copies", type=int, default=2, help="copies of the mixed corpus")
    parser.add_argument("--count", type=int, default=48, help="12 MP photos")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="model threads (default: ONNX Runtime's)")
    parser.add_argument("--workers", type=int, default=None, help="decoding threads (default: the app's)")
    args = parser.parse_args()
    if not (args.models / "clip-vit-b-32-vision" / "vision_model.onnx").is_file():
        print(f"No CLIP model in {args.models}; run: make random-clip", file=sys.stderr)
        return 2
    os.environ["GALLERY_APP_MODELS_DIR"] = str(args.models)
    from gallery_app.core.models.loading import open_clip_vision

    import onnxruntime

    vision = open_clip_vision(threads=args.threads)
    print(f"python {platform.python_version()} | onnxruntime {onnxruntime.__version__} | cpus {os.cpu_count()} | "
          f"model {args.models} (random weights: speed only)")
    print("efficiency = end to end / raw; model / prepare = CPU ms per photo (all threads); bound = model /"
          " (model + prepare), the best possible when both compete for the same cores; of bound = efficiency / bound")
    print(f"{'corpus':<9} {'photos':>6} {'raw img/s':>9} {'end-to-end':>11} {'efficiency':>11} {'model ms':>8} "
          f"{'prepare ms':>10} {'bound':>8} {'of bound':>9}")
    with tempfile.TemporaryDirectory(prefix="bench-photos-") as tmp:
        tmp = Path(tmp)
        if args.photos:
            measure_corpus("yours", vision, args.photos, args.repeat, args.workers)
        else:
            for name, build in (("whatsapp", lambda d: whatsapp_corpus(d, args.count)),
                                ("12mp", lambda d: twelve_mp_corpus(d, args.count)),
                                ("mixed", lambda d: mixed_corpus(d, args.copies))):
                folder = tmp / name
                folder.mkdir()
                build(folder)
                measure_corpus(name, vision, folder, args.repeat, args.workers)
        decode_timing(tmp, max(5, args.repeat * 3))
    vision.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
