"""CLIP ViT-B/32 text tokenizer (``tokenizers`` library, numpy; no torch, no Qt).

At runtime the app tokenizes with the model's own ``tokenizer.json`` (for
ViT-B/32 that is Xenova/clip-vit-base-patch32's, produced by Hugging Face's
``convert_slow_tokenizer.CLIPConverter``).  :func:`build_clip_tokenizer`
builds an equivalent ``tokenizers.Tokenizer`` from OpenAI CLIP's BPE file
``bpe_simple_vocab_16e6.txt.gz`` so the pipeline can be tested offline.

:class:`ClipTokenizer` turns texts into the text tower's ``input_ids``
(``int64``, shape ``[batch, 77]``) exactly like OpenAI CLIP's ``clip.tokenize``
with ``truncate=True``:

* text cleaning: ``html.unescape`` twice, strip, collapse runs of whitespace
  to one space, strip (``basic_clean`` + ``whitespace_clean`` of
  ``simple_tokenizer.py``).  **ftfy is not used** (it is not available);
  OpenAI CLIP runs ``ftfy.fix_text`` first, which only matters for mojibake
  and similar broken text.  Its NFC normalisation is covered by the
  tokenizer's NFC normalizer; lower-casing is done by the normalizer too.
* ``[<|startoftext|>] + tokens + [<|endoftext|>]``; if longer than the
  context length it is cut to ``context_length`` tokens and the last one is
  replaced by ``<|endoftext|>`` (so EOT is always present and last).
* padding with ``0`` (what OpenAI CLIP pads with).  The text tower pools the
  features at the EOT position, found as ``argmax(input_ids)`` -- EOT (49407)
  is the largest id, so the pad value must be smaller; 0 is.  (Hugging Face's
  CLIP tokenizer pads with ``<|endoftext|>`` instead, which would break argmax
  pooling; any padding configured in a ``tokenizer.json`` is therefore
  switched off and padding is done here.)
"""

from __future__ import annotations

import gzip
import html
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE

CONTEXT_LENGTH = 77
SOT_TOKEN = "<|startoftext|>"
EOT_TOKEN = "<|endoftext|>"
SOT_ID = 49406
EOT_ID = 49407
PAD_ID = 0

#: OpenAI CLIP's pre-tokenization pattern (``simple_tokenizer.py``).
CLIP_PATTERN = (
    r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
)

_WHITESPACE = re.compile(r"\s+")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2 / CLIP reversible byte -> printable unicode character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs), strict=True))


def read_clip_merges(bpe_vocab_gz: Path) -> list[tuple[str, str]]:
    """The BPE merges, read exactly as CLIP's ``SimpleTokenizer`` reads them."""
    with gzip.open(bpe_vocab_gz) as fh:
        lines = fh.read().decode("utf-8").split("\n")
    lines = lines[1 : 49152 - 256 - 2 + 1]
    merges = [tuple(line.split()) for line in lines]
    bad = [m for m in merges if len(m) != 2]
    if bad:
        raise ValueError(f"{bpe_vocab_gz}: malformed merge line(s), e.g. {bad[0]!r}")
    return merges  # type: ignore[return-value]


def clip_vocab(merges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """CLIP's vocabulary: bytes, bytes + ``</w>``, each merge, SOT, EOT."""
    vocab = list(bytes_to_unicode().values())
    vocab = vocab + [v + "</w>" for v in vocab]
    vocab.extend("".join(m) for m in merges)
    vocab.extend([SOT_TOKEN, EOT_TOKEN])
    encoder = {tok: i for i, tok in enumerate(vocab)}
    if len(encoder) != len(vocab):
        raise ValueError("duplicate entries in the CLIP vocabulary")
    return encoder


def build_clip_tokenizer(bpe_vocab_gz: Path) -> Tokenizer:
    """Build CLIP's byte-level BPE tokenizer the way HF's ``CLIPConverter`` does.

    The result encodes ``text`` as ``[49406, ..., 49407]`` (the post-processor
    adds SOT/EOT).  Save it with ``tokenizer.save(path)``; see
    :func:`save_clip_tokenizer_json`.
    """
    merges = read_clip_merges(Path(bpe_vocab_gz))
    vocab = clip_vocab(merges)
    sot_id, eot_id = vocab[SOT_TOKEN], vocab[EOT_TOKEN]

    tokenizer = Tokenizer(
        BPE(
            vocab=vocab,
            merges=list(merges),
            dropout=None,
            continuing_subword_prefix="",
            end_of_word_suffix="</w>",
            fuse_unk=False,
            unk_token=EOT_TOKEN,
        )
    )
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Lowercase()]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            # Keep only the pattern's matches (invert=True), drop the rest (whitespace).
            pre_tokenizers.Split(Regex(CLIP_PATTERN), behavior="removed", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{SOT_TOKEN} $A {EOT_TOKEN}",
        pair=f"{SOT_TOKEN} $A {EOT_TOKEN} $B {EOT_TOKEN}",
        special_tokens=[(SOT_TOKEN, sot_id), (EOT_TOKEN, eot_id)],
    )
    # As in the HF CLIP tokenizer: SOT/EOT appearing in text map to their ids.
    tokenizer.add_special_tokens([SOT_TOKEN, EOT_TOKEN])
    return tokenizer


def save_clip_tokenizer_json(bpe_vocab_gz: Path, out_json: Path) -> Path:
    """Build the tokenizer from ``bpe_vocab_gz`` and save it as ``tokenizer.json``."""
    out_json = Path(out_json)
    build_clip_tokenizer(bpe_vocab_gz).save(str(out_json))
    return out_json


def clean_text(text: str) -> str:
    """CLIP's ``basic_clean`` + ``whitespace_clean`` minus ftfy (unavailable)."""
    text = html.unescape(html.unescape(text)).strip()
    return _WHITESPACE.sub(" ", text).strip()


def eot_positions(ids: np.ndarray) -> np.ndarray:
    """Index of the EOT token in each row: ``argmax`` (EOT is the largest id)."""
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"expected a 2-D [batch, context] array, got shape {ids.shape}")
    return ids.argmax(axis=-1)


class ClipTokenizer:
    """Tokenize text for CLIP's text tower from a ``tokenizer.json``."""

    def __init__(self, tokenizer_json: Path, context_length: int = CONTEXT_LENGTH) -> None:
        if context_length < 2:
            raise ValueError("context_length must be at least 2 (SOT + EOT)")
        self.context_length = context_length
        self._tokenizer = Tokenizer.from_file(str(tokenizer_json))
        # Padding and truncation are done here (pad 0, EOT kept last).
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        sot = self._tokenizer.token_to_id(SOT_TOKEN)
        eot = self._tokenizer.token_to_id(EOT_TOKEN)
        if sot is None or eot is None:
            raise ValueError(f"{tokenizer_json}: vocabulary lacks {SOT_TOKEN} / {EOT_TOKEN}")
        if eot != self._tokenizer.get_vocab_size(with_added_tokens=True) - 1 or PAD_ID >= eot:
            # argmax pooling needs EOT to be the largest id.
            raise ValueError(f"{tokenizer_json}: {EOT_TOKEN} (id {eot}) is not the largest token id")
        self.sot_id = sot
        self.eot_id = eot
        self.pad_id = PAD_ID

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def encode_tokens(self, text: str) -> list[int]:
        """Content token ids of ``text`` (no SOT/EOT, no truncation)."""
        return self._tokenizer.encode(clean_text(text), add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """``int64`` array ``[len(texts), context_length]``: SOT, tokens, EOT, 0-padding."""
        if isinstance(texts, str):
            raise TypeError("encode_batch expects a sequence of strings, not a single string")
        n = self.context_length
        out = np.full((len(texts), n), self.pad_id, dtype=np.int64)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([clean_text(t) for t in texts], add_special_tokens=False)
        for row, enc in enumerate(encodings):
            tokens = [self.sot_id, *enc.ids, self.eot_id]
            if len(tokens) > n:
                tokens = tokens[:n]
                tokens[-1] = self.eot_id
            out[row, : len(tokens)] = tokens
        return out

    def eot_positions(self, ids: np.ndarray) -> np.ndarray:
        return eot_positions(ids)
