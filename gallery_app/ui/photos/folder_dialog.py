"""*Add folder…*'s folder chooser, in which a typed hidden folder (``~/.photos``) can be chosen.

Where the desktop offers no native dialog (openbox, Xvfb) Qt shows its own, and that one enables Choose only
for a typed path its file model lists: hidden entries are left out of the model, so Choose stayed greyed
for ``/home/x/.photos`` while Enter took it. Here the model keeps hidden entries (any typed path checks out)
and a proxy leaves them out of the listing, as before, until the person turns *Show hidden files* on.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QDir, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QFileSystemModel, QWidget

#: Qt's own right-click action of its dialog (the object name Qt gives it).
_SHOW_HIDDEN = "qt_show_hidden_action"


class _HiddenOutOfSight(QSortFilterProxyModel):
    """Lists no entry whose name starts with a dot, except the folders the dialog is in (it may be opened
    inside one), while ``showing_hidden`` is off."""

    def __init__(self, current_folder: Callable[[], str], parent=None):
        super().__init__(parent)
        self.current_folder = current_folder
        self.showing_hidden = False

    def filterAcceptsRow(self, row: int, parent: QModelIndex | QPersistentModelIndex) -> bool:
        model = self.sourceModel()
        index = model.index(row, 0, parent)
        if self.showing_hidden or not isinstance(model, QFileSystemModel) or not model.fileName(index).startswith("."):
            return True
        path = model.filePath(index).rstrip("/")
        here = self.current_folder().rstrip("/")
        return here == path or here.startswith(path + "/")


def folder_dialog(parent: QWidget | None, title: str, start: str) -> QFileDialog:
    """A folder chooser like ``QFileDialog.getExistingDirectory``'s; ``open()`` it and read ``fileSelected``."""
    dialog = QFileDialog(parent, title, start)
    dialog.setFileMode(QFileDialog.FileMode.Directory)
    dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
    # Qt's own dialog only: a native one checks typed paths itself (and would take Hidden as "list them").
    show_hidden = dialog.findChild(QAction, _SHOW_HIDDEN)
    if show_hidden is None:
        return dialog
    proxy = _HiddenOutOfSight(lambda: dialog.directory().absolutePath(), dialog)
    dialog.setFilter(dialog.filter() | QDir.Filter.Hidden)
    dialog.setProxyModel(proxy)
    dialog.directoryEntered.connect(lambda _folder: proxy.invalidateFilter())

    def toggled(checked: bool) -> None:
        # Qt's slot (connected first) has just dropped Hidden from the model's filter or added it; the
        # model keeps it either way, and the listing follows the person's choice.
        proxy.showing_hidden = checked
        dialog.setFilter(dialog.filter() | QDir.Filter.Hidden)
        proxy.invalidateFilter()
        show_hidden.setChecked(checked)

    show_hidden.setChecked(False)  # setFilter checked it: nothing hidden is listed yet
    show_hidden.triggered.connect(toggled)
    return dialog
