"""Text from chats, files, photos and model files is data, never markup: how it reaches a widget.

Qt guesses: a QLabel in its default format, and every tooltip, draws text that starts like a tag
(``<img src=…>`` in a chat's name) as rich text. So such text goes into labels made ``plain_label``
(or ``set_plain``), into rich text only through ``escape``, and into tooltips through ``tooltip``.
"""

from __future__ import annotations

import html

from PySide6.QtGui import Qt  # QtGui's Qt namespace also has convertFromPlainText
from PySide6.QtWidgets import QLabel, QWidget


def escape(text: object) -> str:
    """``text`` for a place that is rich text (a bold chat title in a header, a line of a card)."""
    return html.escape(str(text), quote=False)  # never put into an attribute, only between tags


def tooltip(text: str) -> str:
    """A tooltip that shows ``text`` as it is: rich text with every character escaped, lines kept."""
    return Qt.convertFromPlainText(text, Qt.WhiteSpaceMode.WhiteSpaceNormal) if text else ""


def set_plain(label: QLabel) -> QLabel:
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    return set_plain(QLabel(text, parent))
