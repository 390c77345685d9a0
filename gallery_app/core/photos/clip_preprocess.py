"""CLIP ViT-B/32 image pre-processing (pure Pillow + numpy, no torch, no Qt).

Reproduces OpenAI CLIP's ``_transform`` (``clip/clip.py``)::

    Compose([Resize(224, interpolation=BICUBIC), CenterCrop(224),
             _convert_image_to_rgb, ToTensor(),
             Normalize((0.48145466, 0.4578275, 0.40821073),
                       (0.26862954, 0.26130258, 0.27577711))])

Exact choices, documented because the reference implementations differ in
small details:

* **Resize** -- torchvision ``Resize(224)`` on a PIL image: the shorter side
  becomes ``size`` and the longer side becomes ``int(size * long / short)``
  (truncation, *not* rounding; see torchvision
  ``_compute_resized_output_size``).  Hugging Face ``CLIPImageProcessor``
  (``shortest_edge=224``) uses ``get_resize_output_image_size`` which also
  truncates with ``int()``, so both agree.  Resampling is Pillow
  ``Image.Resampling.BICUBIC`` (what both torchvision and HF call for PIL
  input).
* **Centre crop** -- torchvision ``CenterCrop``:
  ``top = int(round((h - size) / 2.0))``, ``left = int(round((w - size) / 2.0))``
  with Python's round-half-to-even.  (HF's ``center_crop`` uses floor
  division ``(h - size) // 2``, which can differ by one pixel when the excess
  is odd; we follow the original CLIP / torchvision behaviour.)
* **Extreme aspect ratios** -- an image longer than ``MAX_ASPECT`` times its
  width (or the other way round) is first cut to its central
  ``MAX_ASPECT``:1 strip.  CLIP keeps only the centre square of the resized
  image anyway, but resizing the whole of a 1x20,000 strip would make it
  224x4,480,000 (3 GB) before the crop, and a 1x2,000,000 one would not fit
  in memory.  Images up to ``MAX_ASPECT``:1 (every panorama) are untouched.
* **ToTensor + Normalize** -- ``uint8 / 255`` in float32, then
  ``(x - mean) / std`` per channel in float32, channel-first (CHW).

Input must already be RGB: channel order is never guessed, non-RGB modes
(``RGBA``, ``L``, ``P``, ``CMYK``, ...) raise ``ValueError`` -- the caller is
responsible for ``image.convert("RGB")``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

__all__ = [
    "CLIP_IMAGE_SIZE",
    "CLIP_MEAN",
    "CLIP_STD",
    "resize_and_crop",
    "to_tensor",
    "preprocess",
]

CLIP_IMAGE_SIZE = 224
#: Longest side over shortest side resized as a whole; longer images lose their ends first (see above).
MAX_ASPECT = 20
CLIP_MEAN: tuple[float, float, float] = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD: tuple[float, float, float] = (0.26862954, 0.26130258, 0.27577711)

_MEAN = np.asarray(CLIP_MEAN, dtype=np.float32).reshape(1, 3, 1, 1)
_STD = np.asarray(CLIP_STD, dtype=np.float32).reshape(1, 3, 1, 1)


def _require_rgb(image: object, index: int | None = None) -> Image.Image:
    where = "" if index is None else f" (item {index})"
    if not isinstance(image, Image.Image):
        raise TypeError(f"expected a PIL.Image.Image{where}, got {type(image).__name__}")
    if image.mode != "RGB":
        raise ValueError(
            f"CLIP preprocessing requires an RGB image{where}, got mode {image.mode!r}; "
            "convert it with image.convert('RGB') first (channel order is never guessed)"
        )
    return image


def resized_size(width: int, height: int, size: int = CLIP_IMAGE_SIZE) -> tuple[int, int]:
    """(new_width, new_height) for torchvision ``Resize(size)``: short side = size,
    long side = ``int(size * long / short)`` (truncated)."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image has empty size {width}x{height}")
    if width <= height:
        return size, int(size * height / width)
    return int(size * width / height), size


def center_crop_box(width: int, height: int, size: int = CLIP_IMAGE_SIZE) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of torchvision ``CenterCrop(size)``."""
    top = int(round((height - size) / 2.0))
    left = int(round((width - size) / 2.0))
    return left, top, left + size, top + size


def resize_and_crop(image: Image.Image, size: int = CLIP_IMAGE_SIZE) -> Image.Image:
    """Resize shortest side to ``size`` (bicubic) then centre-crop ``size``x``size``.

    RGB in, RGB ``size``x``size`` out.
    """
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    image = _central_strip(_require_rgb(image))
    new_w, new_h = resized_size(image.width, image.height, size)
    if (new_w, new_h) != image.size:
        image = image.resize((new_w, new_h), Image.Resampling.BICUBIC)
    # After the resize the short side equals ``size`` and the long side is
    # >= size, so the crop box always lies inside the image (no padding).
    return image.crop(center_crop_box(new_w, new_h, size))


def _central_strip(image: Image.Image, max_aspect: int = MAX_ASPECT) -> Image.Image:
    """The middle of ``image`` at most ``max_aspect`` times as long as it is wide (the image itself if it fits)."""
    width, height = image.size
    if width > height * max_aspect:
        keep = height * max_aspect
        left = (width - keep) // 2
        return image.crop((left, 0, left + keep, height))
    if height > width * max_aspect:
        keep = width * max_aspect
        top = (height - keep) // 2
        return image.crop((0, top, width, top + keep))
    return image


def to_tensor(images: Sequence[Image.Image] | np.ndarray) -> np.ndarray:
    """Stack already-cropped RGB images and normalise them with CLIP mean/std.

    ``images`` is a sequence of RGB PIL images of one common square size, or a
    ``uint8`` array of shape ``(n, H, W, 3)`` (RGB order).  Returns a
    C-contiguous float32 array ``(n, 3, H, W)`` (``(n, 3, 224, 224)`` for CLIP).
    The normalisation is a single broadcast over the whole batch.
    """
    if isinstance(images, np.ndarray):
        batch = images
        if batch.ndim != 4 or batch.shape[-1] != 3:
            raise ValueError(f"expected a (n, H, W, 3) RGB array, got shape {batch.shape}")
        if batch.dtype != np.uint8:
            raise ValueError(f"expected a uint8 array, got dtype {batch.dtype}")
    else:
        images = list(images)
        if not images:
            return np.empty((0, 3, CLIP_IMAGE_SIZE, CLIP_IMAGE_SIZE), dtype=np.float32)
        checked = [_require_rgb(im, i) for i, im in enumerate(images)]
        sizes = {im.size for im in checked}
        if len(sizes) != 1:
            raise ValueError(
                f"all images must share one size (run resize_and_crop first), got {sorted(sizes)}"
            )
        batch = np.stack([np.asarray(im, dtype=np.uint8) for im in checked])
    x = batch.astype(np.float32)
    x /= np.float32(255.0)
    x = x.transpose(0, 3, 1, 2)  # NHWC -> NCHW (view)
    out = (x - _MEAN) / _STD
    return np.ascontiguousarray(out, dtype=np.float32)


def preprocess(images: Sequence[Image.Image], size: int = CLIP_IMAGE_SIZE) -> np.ndarray:
    """Full CLIP pipeline: resize/crop each RGB image, then batch-normalise.

    Returns float32 ``(n, 3, size, size)``, C-contiguous.
    """
    if isinstance(images, Image.Image):
        raise TypeError("preprocess expects a sequence of images; wrap a single image in a list")
    images = list(images)
    if not images:
        return np.empty((0, 3, size, size), dtype=np.float32)
    for i, im in enumerate(images):
        _require_rgb(im, i)
    return to_tensor([resize_and_crop(im, size) for im in images])
