"""A lazily created ONNX Runtime session with the app's thread setting, released on demand."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gallery_app.core.errors import ModelError
from gallery_app.core.models.memory import onnx_bytes, refuse_if_too_big
from gallery_app.core.models.runtimes.lazy import Lazy


class OnnxEncoder:
    """One ``.onnx`` graph. The session is built on first use (seconds for big models) and can be dropped."""

    def __init__(self, path: Path, *, threads: int | None = None, name: str | None = None):
        self.path = Path(path)
        self.name = name or self.path.name
        self.threads = threads
        self._session = Lazy(self._create_session)

    @property
    def session(self):
        return self._session.get()

    def _create_session(self):
        import onnxruntime as ort

        refuse_if_too_big(self.name, onnx_bytes(self.weights_size))
        options = ort.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = int(self.threads)
            options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(self.path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own unrelated exception types
            raise ModelError(
                f"The model file {self.path.name} could not be loaded by ONNX Runtime: {exc}",
                hint="The file may be damaged or not an ONNX model; run: gallery-app-cli models verify",
            ) from exc

    @property
    def weights_size(self) -> int:
        """Bytes of the graph and of the external weights files beside it (``model_q4.onnx_data`` for ``model.onnx``):
        a graph over 2 GB, or one quantised by some exporters, keeps its weights out of the ``.onnx`` file."""
        stem = self.path.name.split(".")[0]
        beside = [p for p in self.path.parent.glob(f"{stem}*") if p.name.endswith((".onnx_data", ".onnx.data"))]
        return self.path.stat().st_size + sum(p.stat().st_size for p in beside)

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.session.get_inputs()]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.session.get_outputs()]

    def run(self, feeds: dict[str, np.ndarray], outputs: list[str] | None = None) -> list[np.ndarray]:
        wanted = {name: value for name, value in feeds.items() if name in self.input_names}
        try:
            return self.session.run(outputs, wanted)
        except Exception as exc:
            raise ModelError(f"Running {self.path.name} failed: {exc}") from exc

    @property
    def loaded(self) -> bool:
        return self._session.loaded

    def release(self) -> None:
        self._session.release()
