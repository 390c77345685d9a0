"""The photo gallery pane: grid model, search, viewer, duplicates, camera search."""

from gallery_app.ui.photos.camera import CameraDialog
from gallery_app.ui.photos.duplicates import DuplicatesDialog
from gallery_app.ui.photos.grid_model import PhotoGridModel
from gallery_app.ui.photos.pane import PhotoPane
from gallery_app.ui.photos.viewer import PhotoViewer

__all__ = ["CameraDialog", "DuplicatesDialog", "PhotoGridModel", "PhotoPane", "PhotoViewer"]
