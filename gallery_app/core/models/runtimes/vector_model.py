"""What every model that makes vectors shares: its resolved files, its key and its vector size."""

from __future__ import annotations

from gallery_app.core.errors import ModelError
from gallery_app.core.models.sources import ResolvedModel
from gallery_app.core.models.specs import Role


class VectorModel:
    role: Role

    def __init__(self, resolved: ResolvedModel):
        if resolved.spec.role is not self.role:
            raise ModelError(f"{resolved.spec.name} is not a {self.role.value} model.")
        self.resolved = resolved
        self.spec = resolved.spec

    @property
    def model_key(self) -> str:
        """The key vector tables are named after: vectors of different keys never mix.

        CLIP's two towers share one key, since a text vector is searched against photo vectors.
        """
        return self.spec.vector_space or self.spec.key

    @property
    def dims(self) -> int:
        return int(self.spec.dims)
