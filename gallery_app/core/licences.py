"""Whose software and data the app is built from, and on what terms (Help → Third-party licences…).

In a checkout the list is read from the installed packages' metadata: the app's own requirements,
followed to the packages they need, and the packages that carry its offline models. A bundle has
no package metadata, so ``make package`` writes the same list into it (``write_bundle_notices``)
and the app reads it back from there.

A package that ships no licence text is listed with its licence's name and its home page: the text is
not invented here.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gallery_app.core.resources import resources_dir

APP_DISTRIBUTION = "gallery-app"
BUNDLED_NOTICES = Path("licences") / "third-party-notices.json"
BUNDLED_TEXT = Path("licences") / "THIRD-PARTY-NOTICES.txt"

#: File names that hold licence terms, wherever a package keeps them ("LICENSE.md", "ThirdPartyNotices.txt").
_LICENCE_FILE = re.compile(r"licen[cs]e|copying|notice", re.IGNORECASE)
_CODE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".dll", ".dylib")
#: Data inside a package whose terms its licence file does not state; taken from the package's own README.
_DATA_CREDITS = {
    "simplemma": (
        "simplemma's code is MIT-licensed; its word lists are derived from other projects, under their own "
        "terms: Lemmatization lists by Michal Měchura (Open Database License, "
        "https://github.com/michmech/lemmatization-lists), Wiktionary entries packaged by the Kaikki project "
        "(CC BY-SA, https://kaikki.org/), the FreeLing project, spaCy lookups data, the UniMorph project and "
        "the Wikinflection corpus by Eleni Metheniti (CC BY 4.0). Only the English list is used here."
    ),
}


@dataclass(frozen=True)
class Notice:
    name: str
    version: str
    licence: str
    home_page: str
    #: (file name, text) of every licence file the package ships, then any credit for data inside it.
    texts: tuple[tuple[str, str], ...]

    def describe(self) -> str:
        return f"{self.name} {self.version} · {self.licence}"

    def body(self) -> str:
        """The licence files and credits, each under its name."""
        if not self.texts:
            return "(the package ships no licence text" + (f"; see {self.home_page})" if self.home_page else ")")
        return "\n\n".join(f"--- {name} ---\n{text}" for name, text in self.texts)


def _licence_name(meta: metadata.PackageMetadata) -> str:
    expression = meta.get("License-Expression")
    if expression:
        return expression
    stated = (meta.get("License") or "").strip()
    if stated and "\n" not in stated and len(stated) <= 80:  # some packages paste the whole text here
        return stated
    classifiers = [c.rsplit(" :: ", 1)[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return ", ".join(classifiers) or ("see the licence text" if stated else "not stated")


#: Project-URL labels that name where a project lives, best first (not its changelog or donation page).
_HOME_LABELS = ("homepage", "home", "repository", "source", "source code", "code", "documentation")


def _home_page(meta: metadata.PackageMetadata) -> str:
    labelled = {}
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        labelled.setdefault(label.strip().casefold(), url.strip())
    page = meta.get("Home-page") or ""
    candidates = [page, *(labelled.get(label, "") for label in _HOME_LABELS), *labelled.values()]
    return next((url for url in candidates if url.startswith("http") and "TODO" not in url), "")


def _licence_texts(distribution: metadata.Distribution) -> list[tuple[str, str]]:
    texts = []
    for file in distribution.files or ():
        # PEP 639 puts every licence file in .dist-info/licenses/, under any name ("BUILD_LICENSES/abseil.txt").
        in_licences_folder = ".dist-info/licenses/" in str(file)
        if file.name.endswith(_CODE_SUFFIXES) or not (in_licences_folder or _LICENCE_FILE.search(file.name)):
            continue
        try:
            text = distribution.locate_file(file).read_text("utf-8", errors="replace")
        except OSError:
            continue
        # Inside .dist-info the path is the package's own ("licenses/numpy/…/LICENSE.txt"): keep what follows.
        shown = str(file).split(".dist-info/", 1)[-1]
        texts.append((shown, text.strip()))
    return sorted(texts)


def notice_of(distribution: metadata.Distribution, models: dict[str, list[str]] | None = None) -> Notice:
    """The notice of one installed package; ``models``: the models each model package carries, by package."""
    meta = distribution.metadata
    texts = _licence_texts(distribution)
    credit = _DATA_CREDITS.get(canonicalize_name(meta["Name"]))
    if credit:
        texts.append(("data", credit))
    carried = (models or {}).get(canonicalize_name(meta["Name"]))
    if carried:  # the package's licence covers its packaging; the weights keep their own terms
        texts.append(("model", "Carries the model weights of " + "; ".join(carried) + "."))
    return Notice(meta["Name"], distribution.version, _licence_name(meta), _home_page(meta), tuple(texts))


def _model_packages() -> dict[str, list[str]]:
    """The packages the offline models are read from, each with the models it carries and their licences
    (the models catalog is their one list)."""
    from gallery_app.core.models.catalog import ALL_SPECS

    carried: dict[str, list[str]] = {}
    for spec in ALL_SPECS.values():
        names = {file.distribution for file in spec.package_files.values()}
        if spec.package_assembly is not None:
            names.add(spec.package_assembly.distribution)
        if spec.conversion is not None:
            names.add(spec.conversion.source.distribution)
        for name in names:
            described = f"{spec.name} (licence: {spec.licence})"
            if described not in carried.setdefault(canonicalize_name(name), []):
                carried[canonicalize_name(name)].append(described)
    return carried


def _requirements(distribution: metadata.Distribution) -> Iterable[str]:
    for line in distribution.requires or ():
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        # Extras (tests, packaging, benchmarks) are not part of the app; platform markers are judged here.
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            yield requirement.name


def installed_notices(leave_out_modules: Iterable[str] = (), model_packages: Iterable[str] | None = None) -> list[Notice]:
    """A notice for every package the app runs on, as installed here, sorted by name.

    ``leave_out_modules``: top-level modules kept out of a bundle (PyInstaller's excludes); a package all
    of whose modules are among them is not in the bundle, so it gets no notice there.
    ``model_packages``: the model packages whose files ship (a bundle carries two); None: every one here.
    """
    left_out = set(leave_out_modules)
    modules_of: dict[str, set[str]] = {}
    for module, owners in metadata.packages_distributions().items():
        for owner in owners:
            modules_of.setdefault(canonicalize_name(owner), set()).add(module)

    models = _model_packages()
    if model_packages is not None:
        shipped = {canonicalize_name(name) for name in model_packages}
        models = {key: carried for key, carried in models.items() if key in shipped}
    found: dict[str, metadata.Distribution] = {}
    waiting = [APP_DISTRIBUTION, *sorted(models)]
    while waiting:
        name = waiting.pop()
        if canonicalize_name(name) in found:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional model package that is not installed, or a platform's own package
        found[canonicalize_name(name)] = distribution
        waiting.extend(_requirements(distribution))

    notices = []
    for key, distribution in found.items():
        modules = modules_of.get(key, set()) - {"__editable__"}
        if key == APP_DISTRIBUTION or (modules and modules <= left_out):
            continue
        notices.append(notice_of(distribution, models))
    return sorted(notices, key=lambda notice: notice.name.casefold())


def notices_text(notices: Iterable[Notice]) -> str:
    """Every notice as one plain-text file, for people who look in the bundle's folder."""
    parts = ["Third-party software and data in gallery_app, with the terms they are used under.\n"]
    for notice in notices:
        parts += ["=" * 78, notice.describe(), *([notice.home_page] if notice.home_page else []), "", notice.body(), ""]
    return "\n".join(parts)


def write_bundle_notices(folder: Path, leave_out_modules: Iterable[str] = (),
                         model_packages: Iterable[str] | None = None) -> list[Notice]:
    """Writes the notices for a bundle under ``folder`` (``licences/``, JSON for the app, text for people)."""
    notices = installed_notices(leave_out_modules, model_packages)
    (folder / BUNDLED_NOTICES).parent.mkdir(parents=True, exist_ok=True)
    (folder / BUNDLED_NOTICES).write_text(json.dumps([asdict(notice) for notice in notices], indent=1), "utf-8")
    (folder / BUNDLED_TEXT).write_text(notices_text(notices), "utf-8")
    return notices


def _read_bundled(path: Path) -> list[Notice]:
    rows = json.loads(path.read_text("utf-8"))
    return [Notice(row["name"], row["version"], row["licence"], row["home_page"],
                   tuple((name, text) for name, text in row["texts"])) for row in rows]


def bundled_notices_path() -> Path:
    """Where ``make package`` writes the list into a bundle (absent in a checkout)."""
    return resources_dir() / BUNDLED_NOTICES


def third_party_notices() -> list[Notice]:
    """The bundle's written notices when there are some, else the installed packages' own."""
    bundled = bundled_notices_path()
    return _read_bundled(bundled) if bundled.is_file() else installed_notices()
