"""The settings dialog: what it shows, what OK saves (QSettings round trip), when models are released."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from gallery_app.core.models.specs import Role
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from gallery_app.ui.settings_dialog import AUTOMATIC, SettingsDialog

pytestmark = pytest.mark.timeout(40)


def make_dialog(qtbot, services):
    dialog = SettingsDialog(services)
    qtbot.addWidget(dialog)
    return dialog


def test_shows_the_current_settings_with_automatic_models(qtbot):
    services = Services(Settings(cpu_threads=2, passages=6))
    dialog = make_dialog(qtbot, services)
    assert dialog.model_combos[Role.CHAT_LLM].currentText() == AUTOMATIC
    keys = [dialog.model_combos[Role.CHAT_LLM].itemData(i) for i in range(dialog.model_combos[Role.CHAT_LLM].count())]
    assert keys[0] == "" and "smollm2-135m-instruct-q4_1" in keys and "qwen2.5-0.5b-instruct-q4_k_m" in keys
    assert dialog.cpu_threads.value() == 2 and dialog.passages.value() == 6
    dialog.cpu_threads.setValue(0)
    assert dialog.cpu_threads.text() == AUTOMATIC
    from PySide6.QtWidgets import QLabel
    assert any("after you restart" in label.text() for label in dialog.findChildren(QLabel))


def test_ok_saves_through_qsettings_and_releases_models_when_they_changed(qtbot, tmp_path):
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    combo = dialog.model_combos[Role.CHAT_LLM]
    combo.setCurrentIndex(combo.findData("smollm2-135m-instruct-q4_1"))
    dialog.data_folder.setText(str(tmp_path / "elsewhere"))
    dialog.cpu_threads.setValue(1)
    dialog.llm_context.setValue(2048)
    dialog.answer_tokens.setValue(200)
    dialog.passages.setValue(7)
    with qtbot.waitSignal(services.models_reset, timeout=2000):
        dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    loaded = Settings.load()
    assert loaded == Settings(data_folder=str(tmp_path / "elsewhere"), chat_llm="smollm2-135m-instruct-q4_1",
                              cpu_threads=1, llm_context=2048, answer_tokens=200, passages=7)
    assert services.settings == loaded  # the shared object is updated in place


def test_only_answer_settings_changed_keeps_the_models(qtbot):
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    dialog.answer_tokens.setValue(64)
    dialog.passages.setValue(3)
    released = []
    services.models_reset.connect(lambda: released.append(True))
    dialog.accept()
    assert not released
    assert Settings.load().answer_tokens == 64 and Settings.load().passages == 3


def test_cancel_saves_nothing_and_defaults_can_be_restored(qtbot):
    Settings(passages=9, chat_llm="smollm2-135m-instruct-q4_1").save()
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    assert dialog.model_combos[Role.CHAT_LLM].currentData() == "smollm2-135m-instruct-q4_1"
    dialog.restore_defaults()
    assert dialog.chosen() == Settings()
    dialog.reject()
    assert Settings.load().passages == 9


def test_a_model_path_set_elsewhere_stays_selectable(qtbot, tmp_path):
    path = str(tmp_path / "my-model.gguf")
    services = Services(Settings(chat_llm=path))
    dialog = make_dialog(qtbot, services)
    assert dialog.model_combos[Role.CHAT_LLM].currentData() == path
    assert dialog.chosen().chat_llm == path


def test_the_chosen_data_folder_is_used_at_the_next_start(monkeypatch, tmp_path):
    """Before: the data folder was saved but never applied, so the app kept using the default folder."""
    from gallery_app.core import paths
    from gallery_app.ui.settings import Settings

    monkeypatch.delenv("GALLERY_APP_DATA_DIR")
    chosen = tmp_path / "on the usb stick"
    Settings(data_folder=str(chosen)).save()
    Settings.load().apply_data_folder()  # what gallery-app does before it opens anything
    assert paths.data_dir() == chosen and paths.database_path().parent == chosen


def test_the_answer_length_can_never_take_the_prompts_room(qtbot):
    """Before: context 512 with answer 512 could be chosen, and every question then looped for ever."""
    from gallery_app.core.chat.prompting import MIN_PROMPT_TOKENS, budget_problem

    services = Services(Settings(llm_context=4096, answer_tokens=1024))
    dialog = make_dialog(qtbot, services)
    assert dialog.answer_tokens.value() == 1024
    dialog.llm_context.setValue(512)
    assert dialog.answer_tokens.maximum() == 512 - MIN_PROMPT_TOKENS == dialog.answer_tokens.value()
    dialog.answer_tokens.setValue(512)
    assert dialog.answer_tokens.value() == 512 - MIN_PROMPT_TOKENS
    chosen = dialog.chosen()
    assert budget_problem(chosen.llm_context, chosen.answer_tokens) is None
    dialog.llm_context.setValue(1024)
    assert dialog.answer_tokens.maximum() == 1024 - MIN_PROMPT_TOKENS
    assert dialog.llm_context.minimum() == 512 and dialog.passages.minimum() == 1


def test_a_settings_file_out_of_range_is_held_to_what_works():
    from gallery_app.core.chat.prompting import MIN_PROMPT_TOKENS, budget_problem

    Settings(llm_context=10, answer_tokens=512, passages=0).save()  # hand-edited, or from another version
    loaded = Settings.load()
    assert (loaded.llm_context, loaded.answer_tokens, loaded.passages) == (512, 512 - MIN_PROMPT_TOKENS, 1)
    assert budget_problem(loaded.llm_context, loaded.answer_tokens) is None


def test_the_window_asks_with_the_core_defaults():
    """Before: the window's answer length was 160 tokens, the CLI's and the core's 96."""
    from gallery_app.core.chat.ask_options import AskOptions

    assert Settings().ask_options == AskOptions()
    assert Settings.load().ask_options == AskOptions()  # nothing saved yet
    chosen = Settings(llm_context=2048, answer_tokens=64, passages=3).ask_options
    assert (chosen.context_tokens, chosen.answer_tokens, chosen.passages) == (2048, 64, 3)


def test_the_model_chosen_in_the_window_is_the_one_the_cli_uses(qtbot, capsys):
    """Before: the window kept its choice in QSettings, which the CLI never read."""
    from PySide6.QtCore import QSettings

    from gallery_app.cli import main
    from gallery_app.core.errors import ModelNotAvailable
    from gallery_app.core.models import loading, sources

    services = Services(Settings())
    dialog = make_dialog(qtbot, services)
    combo = dialog.model_combos[Role.CHAT_LLM]
    combo.setCurrentIndex(combo.findData("qwen2.5-0.5b-instruct-q4_k_m"))
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    assert QSettings().value("chat_llm") is None  # one place for it, not two
    assert Settings.load().chat_llm == "qwen2.5-0.5b-instruct-q4_k_m"
    assert sources.choose_spec(Role.CHAT_LLM).key == "qwen2.5-0.5b-instruct-q4_k_m"
    with pytest.raises(ModelNotAvailable, match="Qwen2.5-0.5B"):  # not downloaded here: the CLI says so
        loading.resolve_setting(Role.CHAT_LLM)
    # --llm on the command line overrides it for that call only.
    assert loading.resolve_setting(Role.CHAT_LLM, "smollm2-135m-instruct-q4_1").spec.key == "smollm2-135m-instruct-q4_1"
    assert main(["models", "list"]) == 0
    marked = [line for line in capsys.readouterr().out.splitlines() if line.startswith(" * ")]
    assert any("qwen2.5-0.5b-instruct-q4_k_m" in line for line in marked)


def test_a_model_chosen_by_an_older_version_in_qsettings_is_kept():
    from PySide6.QtCore import QSettings

    from gallery_app.core.models import choices

    QSettings().setValue("chat_llm", "smollm2-135m-instruct-q4_1")
    assert Settings.load().chat_llm == "smollm2-135m-instruct-q4_1"
    assert choices.chosen(Role.CHAT_LLM) == "smollm2-135m-instruct-q4_1"


def test_each_model_choice_says_whether_it_is_on_this_computer(qtbot):
    """Before: the choices named each model and its size only, so which one works offline was a guess."""
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    qtbot.waitUntil(lambda: dialog.presence_check is None, timeout=20_000)
    combo = dialog.model_combos[Role.CHAT_LLM]
    texts = {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}
    assert texts[""] == AUTOMATIC
    assert texts["smollm2-135m-instruct-q4_1"].endswith(" — on this computer")  # the offline package
    assert texts["qwen2.5-0.5b-instruct-q4_k_m"] == "Qwen2.5-0.5B-Instruct (Q4_K_M GGUF) — 491 MB — not downloaded"
    vision = dialog.model_combos[Role.CLIP_VISION]
    assert vision.itemText(1).endswith(" — not downloaded")
    dialog.accept()
    assert Settings.load().chat_llm == ""  # the marks are not part of what is saved


def test_the_second_reading_can_be_turned_off_and_stays_off(qtbot):
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    assert dialog.read_again.isChecked()  # on by default, as the core asks
    dialog.read_again.setChecked(False)
    dialog.accept()
    # Saved as text in the settings file and read back as off (bool("false") would be True).
    loaded = Settings.load()
    assert loaded.read_again is False and loaded.ask_options.read_again is False
    assert services.settings.read_again is False
    assert services.second_reading() is None  # no reader is started for the window's questions
    dialog = make_dialog(qtbot, services)
    assert not dialog.read_again.isChecked()
    dialog.restore_defaults()
    assert dialog.read_again.isChecked()
