"""One error hierarchy whose messages are written for the person using the app.

The UI and the CLI show ``str(error)`` as it is, so every message says what went
wrong and, where there is one, what the person can do about it.
"""

from __future__ import annotations


class AppError(Exception):
    """Base of every error a user can see."""

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message


class StoreError(AppError):
    """The database could not be opened, migrated or written."""


class StoreDamaged(StoreError):
    """The database file is damaged, or is not a gallery_app database at all; it is left exactly as it is."""


class StoreUnwritable(StoreError):
    """The data folder or the database file cannot be written (permissions, a read-only disk)."""


class StoreFull(StoreError):
    """The disk holding the database is full: the write that met it was rolled back, nothing else changed."""


class VectorModelMismatch(StoreError):
    """A vector from one model was offered to a table made by another (or has the wrong size)."""


class ModelError(AppError):
    """A model is missing, broken, or could not be run."""


class ModelNotAvailable(ModelError):
    """No source (models folder, installed package, download) can provide the model right now."""


class DownloadError(ModelError):
    """A model download failed (network, server, disk)."""


class ChecksumMismatch(DownloadError):
    """A file's size or sha256 is not what its model spec says."""


class Cancelled(AppError):
    """The person cancelled a long operation."""

    def __init__(self, message: str = "Cancelled.", **kwargs):
        super().__init__(message, **kwargs)
