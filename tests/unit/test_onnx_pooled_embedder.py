"""An ONNX text embedder whose graph pools itself (EmbeddingGemma's export): the app reads the graph's
``sentence_embedding``, not a mean of its hidden states, and counts the weights kept in a file beside it.

The graph here is tiny and exact: hidden states are rows of a table E (one per token id), and the pooled
output is the masked sum of those rows times a projection P, of another size. So a test can compute what
the app must return, and a mean of the hidden states (what the app did before) is told apart at once.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers

from gallery_app.core.models.runtimes.embedders import POOLED_OUTPUT, OnnxTextEmbedder
from gallery_app.core.models.runtimes.onnx_encoder import OnnxEncoder
from gallery_app.core.models.sources import ResolvedModel, Source
from gallery_app.core.models.specs import ModelFile, ModelSpec, Role, Runtime

WORDS = ["[UNK]", "task", "query", "title", "text", "none", "search", "result", "|", ":", "when", "is", "the",
         "exam", "monday", "pizza", "friday"]
HIDDEN, POOLED = 8, 6
#: The name EmbeddingGemma's 4-bit graph gives its weights file; the graph finds the weights by it.
WEIGHTS_FILE = "model_q4.onnx_data"


def _write_model(folder) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    table = rng.standard_normal((len(WORDS), HIDDEN)).astype(np.float32)
    projection = rng.standard_normal((HIDDEN, POOLED)).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["last_hidden_state"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_float", "last_axis"], ["mask_column"]),
        helper.make_node("Mul", ["last_hidden_state", "mask_column"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "token_axis"], ["summed"], keepdims=0),
        helper.make_node("MatMul", ["summed", "P"], [POOLED_OUTPUT]),
    ]
    graph = helper.make_graph(
        nodes, "pooled_text_test",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN]),
         helper.make_tensor_value_info(POOLED_OUTPUT, TensorProto.FLOAT, ["batch", POOLED])],
        [numpy_helper.from_array(table, "E"), numpy_helper.from_array(projection, "P"),
         numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
         numpy_helper.from_array(np.array([1], dtype=np.int64), "token_axis")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=WEIGHTS_FILE, size_threshold=64)
    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    return table, projection


def _embedder(folder, *, pooling: str, dims: int) -> OnnxTextEmbedder:
    files = (ModelFile("model.onnx"), ModelFile(WEIGHTS_FILE), ModelFile("tokenizer.json"))
    spec = ModelSpec(key=f"test-pooled-{pooling}", role=Role.TEXT_EMBEDDER, name="pooled test", runtime=Runtime.ONNX,
                     files=files, licence="test only", dims=dims, pooling=pooling,
                     query_prefix="task: search result | query: ", passage_prefix="title: none | text: ")
    return OnnxTextEmbedder(ResolvedModel(spec, Source.MODELS_FOLDER, {f.name: folder / f.name for f in files}),
                            threads=1)


def _ids(text: str) -> list[int]:
    return [WORDS.index(word) if word in WORDS else 0 for word in text.replace("|", " | ").replace(":", " :").split()]


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


@pytest.fixture()
def model_folder(tmp_path):
    return tmp_path, *_write_model(tmp_path)


def test_a_graph_that_pools_itself_gives_its_pooled_output_with_the_models_prompts(model_folder):
    folder, table, projection = model_folder
    embedder = _embedder(folder, pooling="none", dims=POOLED)
    passages = ["the exam is monday", "pizza friday"]
    got = embedder.embed_passages(passages)
    for row, text in zip(got, passages):
        expected = _unit(table[_ids("title: none | text: " + text)].sum(axis=0) @ projection)
        np.testing.assert_allclose(row, expected, rtol=1e-5, atol=1e-6)
    query = embedder.embed_query("when is the exam")
    np.testing.assert_allclose(query, _unit(table[_ids("task: search result | query: when is the exam")].sum(axis=0)
                                            @ projection), rtol=1e-5, atol=1e-6)
    # The passage that shares the question's words is the nearer one.
    assert float(got[0] @ query) > float(got[1] @ query)


def test_a_batch_cut_into_slices_gives_the_same_pooled_rows(model_folder):
    folder, _table, _projection = model_folder
    texts = [" ".join(WORDS[1 + i % 10: 2 + i % 10 + i % 4]) for i in range(21)]
    one_by_one = np.stack([_embedder(folder, pooling="none", dims=POOLED).embed_passages([t])[0] for t in texts])
    sliced = OnnxTextEmbedder(_embedder(folder, pooling="none", dims=POOLED).resolved, threads=2).embed_passages(texts)
    np.testing.assert_allclose(sliced, one_by_one, rtol=1e-5, atol=1e-6)


def test_a_spec_that_pools_by_mean_still_pools_the_hidden_states(model_folder):
    folder, table, _projection = model_folder
    got = _embedder(folder, pooling="mean", dims=HIDDEN).embed_passages(["pizza friday"])[0]
    np.testing.assert_allclose(got, _unit(table[_ids("title: none | text: pizza friday")].mean(axis=0)),
                               rtol=1e-5, atol=1e-6)


def test_the_memory_check_counts_the_weights_beside_the_graph(model_folder):
    folder, _table, _projection = model_folder
    encoder = OnnxEncoder(folder / "model.onnx")
    weights = (folder / WEIGHTS_FILE).stat().st_size
    assert weights > (folder / "model.onnx").stat().st_size
    assert encoder.weights_size == (folder / "model.onnx").stat().st_size + weights


def test_the_catalogs_embeddinggemma_downloads_its_weights_under_the_name_its_graph_records():
    """The graph finds its weights by the file name it was exported with; saved under another, it cannot load."""
    from gallery_app.core.models.catalog import EMBEDDINGGEMMA_300M_Q4 as spec

    assert spec.downloadable and spec.pooling == "none" and spec.dims == 768
    weights = [f for f in spec.files if f.name.endswith(".onnx_data")]
    assert [f.name for f in weights] == ["model_q4.onnx_data"]
    assert weights[0].repo_path.rsplit("/", 1)[-1] == weights[0].name
    assert spec.file("model.onnx").repo_path == "onnx/model_q4.onnx"
    assert all(f.size and len(f.sha256) == 64 for f in spec.files) and len(spec.revision) == 40
    assert spec.download_url(weights[0]).endswith(f"/{spec.hf_repo}/resolve/{spec.revision}/onnx/model_q4.onnx_data")
    assert spec.query_prefix == "task: search result | query: " and spec.passage_prefix == "title: none | text: "
