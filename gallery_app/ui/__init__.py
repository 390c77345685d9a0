"""The Qt layer: widgets, item models and workers that call the headless core."""
