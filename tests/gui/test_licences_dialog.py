"""Help → Third-party licences…: the packages listed, one package's terms, the filter, text shown as text."""

from __future__ import annotations

import json

import pytest

from gallery_app.core import paths
from gallery_app.core.licences import BUNDLED_NOTICES
from gallery_app.ui.licences_dialog import LicencesDialog

pytestmark = pytest.mark.timeout(60)


def open_dialog(qtbot, services) -> LicencesDialog:
    dialog = LicencesDialog(services)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.packages.count() > 0, timeout=20_000)
    return dialog


def select(dialog: LicencesDialog, name: str) -> None:
    for row in range(dialog.packages.count()):
        if dialog.packages.item(row).text().startswith(name + " "):
            dialog.packages.setCurrentRow(row)
            return
    raise AssertionError(f"{name} is not listed")


def test_a_package_shows_its_terms_and_the_filter_narrows_the_list(qtbot, services):
    dialog = open_dialog(qtbot, services)
    assert dialog.packages.currentRow() == 0 and dialog.text.toPlainText()  # something is shown at once
    select(dialog, "simplemma")
    assert dialog.heading.text().startswith("simplemma ")
    assert "Open Database License" in dialog.text.toPlainText()

    dialog.filter.setText("lgpl")
    assert dialog.visible_packages() and all(
        name.casefold().startswith(("pyside6", "shiboken6")) for name in dialog.visible_packages())
    assert "LGPL" in dialog.heading.text()  # the selection followed the filter
    dialog.filter.setText("no such licence")
    assert dialog.visible_packages() == []
    assert dialog.heading.text() == "No package matches the filter." and dialog.text.toPlainText() == ""
    dialog.filter.clear()
    assert len(dialog.visible_packages()) == dialog.packages.count()


def test_names_and_texts_from_package_metadata_are_shown_as_written(qtbot, services, tmp_path, monkeypatch):
    (tmp_path / BUNDLED_NOTICES).parent.mkdir(parents=True)
    (tmp_path / BUNDLED_NOTICES).write_text(json.dumps([{
        "name": "<b>bold</b>", "version": "1.0", "licence": "<img src=x>", "home_page": "",
        "texts": [["LICENSE", "<h1>Not a heading</h1>"]]}]), "utf-8")
    monkeypatch.setenv(paths.RESOURCES_DIR_ENV, str(tmp_path))
    dialog = open_dialog(qtbot, services)
    assert dialog.packages.item(0).text() == "<b>bold</b> 1.0"
    assert dialog.heading.text() == "<b>bold</b> 1.0 · <img src=x>"
    assert "<h1>Not a heading</h1>" in dialog.text.toPlainText()
