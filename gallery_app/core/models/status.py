"""Which model a role would use, where it is, and whether it can be used: one verdict for every place that
shows it (the Models dialog, the window's status bar, ``doctor`` and ``models list``).

Finding a model never downloads or converts anything. Checking it hashes its files, and hashes are
cached by (size, mtime), so only the first check of a big file takes seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from gallery_app.core.errors import ModelError
from gallery_app.core.models import choices, loading, sources
from gallery_app.core.models.catalog import ALL_SPECS, CANDIDATES
from gallery_app.core.models.specs import ModelSpec, Role
from gallery_app.core.models.verify import CheckStatus
from gallery_app.core.units import describe_size


class Availability(str, Enum):
    READY = "ready"
    MISSING = "missing"
    DAMAGED = "damaged"


@dataclass(frozen=True)
class ModelStatus:
    role: Role
    spec: ModelSpec
    #: The copy that would be loaded; None: the model is not on this computer.
    found: sources.ResolvedModel | None
    #: Why the copy found cannot be used: its damaged files, or a setting that names no usable model.
    problem: str | None = None
    #: How its files compared with the spec: the first failure, else the first file's verdict.
    verdict: CheckStatus | None = None

    @property
    def usable(self) -> bool:
        return self.found is not None and self.problem is None

    @property
    def availability(self) -> Availability:
        if self.found is None:
            return Availability.MISSING
        return Availability.DAMAGED if self.problem else Availability.READY

    @property
    def damaged_files(self) -> bool:
        return self.verdict is not None and not self.verdict.ok

    @property
    def origin(self) -> str | None:
        return self.found.origin() if self.found is not None else None

    @property
    def where(self) -> str:
        if self.found is None:
            return "not on this computer"
        if self.found.source in (sources.Source.PACKAGE, sources.Source.LOCAL_FILE):
            return self.found.source.value
        return sources.Source.MODELS_FOLDER.value  # a model made from a package is written there


def _status_of_setting(role: Role, setting: str | None) -> ModelStatus:
    if setting == role.value:
        setting = ""  # the role's own name: its default, whatever was chosen
    elif setting is None:
        setting = choices.chosen(role)
    if setting and setting not in ALL_SPECS:
        # A model file or folder the person named: it has no published checksum to compare with.
        resolved = loading.resolve_setting(role, setting)
        return ModelStatus(role, resolved.spec, resolved, verdict=CheckStatus.NO_CHECKSUM)
    spec = sources.choose_spec(role, setting or "")
    found = sources.locate(spec)
    if found is None:
        return ModelStatus(role, spec, None)
    checks = sources.check(found)
    failed = [check for check in checks if not check.status.ok]
    problem = "; ".join(check.detail for check in failed) or None
    return ModelStatus(role, spec, found, problem, (failed or checks)[0].status)


def model_status(role: Role, setting: str | None = None) -> ModelStatus:
    """The model ``role`` would use with ``setting`` and whether it is intact.

    ``setting`` is read as ``loading.resolve_setting`` reads it: a model key, a model file or folder, the
    role's name for its default, or None for the person's choice (``models.choices``), else the default.
    A setting that names no usable model gives the default's status with that as its problem, so the
    role shows as needing attention rather than the check failing.
    """
    try:
        return _status_of_setting(role, setting)
    except ModelError as exc:
        default = _status_of_setting(role, "")
        return replace(default, problem=default.problem or str(exc))


def model_statuses(setting_of: Callable[[Role], str | None] = lambda role: None, *,
                   progress: Callable[[int, int], None] | None = None) -> list[ModelStatus]:
    """``model_status`` of every role the catalog has a model for, with ``setting_of(role)`` as its setting."""
    roles = [role for role in Role if CANDIDATES.get(role)]
    statuses = []
    for done, role in enumerate(roles, start=1):
        statuses.append(model_status(role, setting_of(role)))
        if progress is not None:
            progress(done, len(roles))
    return statuses


def candidate_statuses(role: Role) -> list[ModelStatus]:
    """The status of each of ``role``'s catalog models as if it were chosen, best first: which of them are
    on this computer (Settings marks its choices with ``presence``)."""
    return [model_status(role, spec.key) for spec in CANDIDATES.get(role, ())]


def presence(status: ModelStatus) -> str:
    """A few words for a list of models: "on this computer", "not downloaded", "damaged"."""
    if status.availability is Availability.READY:
        return "on this computer"
    if status.availability is Availability.DAMAGED:
        return "damaged"
    return "not downloaded" if status.spec.downloadable else "not on this computer"


def needs_attention(statuses: list[ModelStatus]) -> bool:
    """True when a role has no usable model (missing or damaged): the window offers the Models dialog."""
    return any(not status.usable for status in statuses)


def describe_model(status: ModelStatus | None, what: str) -> str:
    """One line for a person about the model behind ``what`` ("Message search"), and how to get it if missing."""
    if status is None:
        return f"{what}: no model known"
    if status.problem:
        return f"{what}: {status.spec.name} is damaged ({status.problem})"
    if status.found is None:
        return (f"{what} needs {status.spec.name} ({describe_size(status.spec.size)}): Help → Models… or "
                f"gallery-app-cli models fetch {status.spec.key}")
    return f"{what}: {status.spec.name}"
