"""gallery_app: your own chats and photos, searchable by meaning, entirely on your machine."""

__version__ = "0.1.0"
