"""The chat pane: imported chats on the left, a conversation about them on the right.

``ChatPane`` is what the main window embeds; ``ChatViewer`` shows one whole chat scrolled to a passage.
All database and model work runs in ``ui.workers`` workers (``jobs.py``); the widgets only paint and react.
"""

from gallery_app.ui.chat.pane import ChatPane
from gallery_app.ui.chat.viewer import ChatViewer

__all__ = ["ChatPane", "ChatViewer"]
