"""One verdict per role — which model, where it is, whether it can be used — for the dialog, doctor and models list."""

from __future__ import annotations

import shutil

from gallery_app.core.models import catalog, choices, sources
from gallery_app.core.models.specs import Role
from gallery_app.core.models.status import (
    Availability, describe_model, model_status, model_statuses, needs_attention,
)
from gallery_app.core.models.verify import CheckStatus


def test_a_packaged_model_is_ready_and_verified():
    status = model_status(Role.CHAT_LLM)
    assert status.spec is catalog.SMOLLM2_135M
    assert status.availability is Availability.READY and status.usable
    assert status.where == "installed package" and status.origin.startswith("installed package")
    assert status.verdict is CheckStatus.VERIFIED and status.problem is None
    assert describe_model(status, "Answers") == f"Answers: {catalog.SMOLLM2_135M.name}"


def test_a_missing_model_says_its_size_and_how_to_get_it():
    status = model_status(Role.CLIP_VISION)
    assert status.availability is Availability.MISSING and not status.usable
    assert status.where == "not on this computer" and status.origin is None
    assert describe_model(status, "Photo search (images)") == (
        "Photo search (images) needs CLIP ViT-B/32 vision tower (ONNX) (352 MB): Help → Models… or "
        "gallery-app-cli models fetch clip-vit-b-32-vision")


def test_a_damaged_copy_is_damaged_with_what_is_wrong():
    folder = sources.model_folder(catalog.SMOLLM2_135M)
    folder.mkdir(parents=True)
    (folder / "model.gguf").write_bytes(b"\0" * 1024)  # takes precedence over the package copy
    status = model_status(Role.CHAT_LLM)
    assert status.availability is Availability.DAMAGED and status.damaged_files
    assert status.where == "models folder" and "1,024 bytes" in status.problem
    assert needs_attention([status])
    assert "is damaged (model.gguf is 1,024 bytes" in describe_model(status, "Answers")


def test_the_setting_names_the_model_and_the_role_s_name_means_its_default():
    chosen = model_status(Role.CHAT_LLM, catalog.QWEN25_05B.key)
    assert chosen.spec is catalog.QWEN25_05B and chosen.availability is Availability.MISSING
    choices.choose(Role.CHAT_LLM, catalog.QWEN25_05B.key)
    assert model_status(Role.CHAT_LLM).spec is catalog.QWEN25_05B  # None: the person's choice
    assert model_status(Role.CHAT_LLM, Role.CHAT_LLM.value).spec is catalog.SMOLLM2_135M


def test_a_chosen_model_file_is_ready_without_a_published_checksum(tmp_path):
    copy = tmp_path / "my-model.gguf"
    shutil.copyfile(sources.resolve(catalog.SMOLLM2_135M).path, copy)
    status = model_status(Role.CHAT_LLM, str(copy))
    assert status.usable and status.where == "file you chose"
    assert status.verdict is CheckStatus.NO_CHECKSUM and not status.damaged_files


def test_a_setting_that_names_no_usable_model_needs_attention_instead_of_failing(tmp_path):
    for setting in (catalog.CLIP_B32_VISION.key, str(tmp_path / "gone.gguf")):
        status = model_status(Role.CHAT_LLM, setting)
        assert status.spec is catalog.SMOLLM2_135M  # the default, with what is wrong with the setting
        assert status.availability is Availability.DAMAGED and not status.damaged_files
        assert status.problem and needs_attention([status])


def test_every_role_with_a_model_is_checked_with_its_setting_and_progress():
    seen = []
    statuses = model_statuses({Role.CHAT_LLM: catalog.QWEN25_05B.key}.get, progress=lambda *step: seen.append(step))
    assert [status.role for status in statuses] == [Role.TEXT_EMBEDDER, Role.CLIP_TEXT, Role.CLIP_VISION, Role.CHAT_LLM]
    assert statuses[-1].spec is catalog.QWEN25_05B
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert needs_attention(statuses)


def test_each_candidate_says_whether_it_is_on_this_computer():
    """Settings marks its model choices with these (before: it listed names and sizes only)."""
    from gallery_app.core.models.status import candidate_statuses, presence

    by_key = {status.spec.key: status for status in candidate_statuses(Role.CHAT_LLM)}
    assert list(by_key) == [spec.key for spec in catalog.CANDIDATES[Role.CHAT_LLM]]
    assert presence(by_key[catalog.SMOLLM2_135M.key]) == "on this computer"  # the offline package
    assert presence(by_key[catalog.QWEN25_05B.key]) == "not downloaded"
    folder = sources.model_folder(catalog.QWEN25_05B)
    folder.mkdir(parents=True)
    (folder / "model.gguf").write_bytes(b"\0" * 1024)
    (damaged,) = [s for s in candidate_statuses(Role.CHAT_LLM) if s.spec is catalog.QWEN25_05B]
    assert presence(damaged) == "damaged"
