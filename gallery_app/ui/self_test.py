"""``gallery-app --self-test``: open the window, ask one chat question and run one photo search on the demo data.

Meant for a freshly built bundle (``dist/gallery-app/gallery-app --self-test``) and for CI. It works in a
temporary data folder (the person's chats and photos are never touched) with the person's models
folder and settings, and drives the core through ``Services`` in workers while the window is open,
exactly as the panes do. Each part reports PASS, FAIL or SKIP (a part that cannot run on this machine,
e.g. photo search without a CLIP model, and why); the exit status is 0 when every part that could run
passed and at least the chat ran.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

QUESTION = "Who ended up paying for the hotel?"
EXPECTED_NAME = "daniel"  # resources/demo/questions.jsonl, q01 (a small LLM may still miss it: reported, not required)
PHOTO_QUERY = "a close-up of a cat's face"
EXPECTED_PHOTO = "chelsea.png"
TIME_LIMIT_S = 900


def prepare_environment() -> Path:
    """Before the QApplication exists: offscreen without a display, and a throw-away data folder."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gallery_app.core import paths

    data = Path(tempfile.mkdtemp(prefix="gallery-app-self-test-"))
    paths.use_data_dir(data, over_environment=True)
    return data


@dataclass
class Part:
    name: str
    status: str = "PENDING"  # PASS | FAIL | SKIP
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Outcome:
    status: str
    lines: list[str]


def _part(context, function, services):
    """A part's log lines as they come, then its outcome (a generator's return value would be lost)."""
    status, lines = yield from function(context, services)
    yield _Outcome(status, lines)


class SelfTest:
    """Runs the parts one after another on the window's worker pool; ``finished(int)`` carries the exit code."""

    def __init__(self, window, services, *, log: Callable[[str], None] | None = None):
        from PySide6.QtCore import QTimer

        self.window = window
        self.services = services
        self.log = log or (lambda text: print(text, flush=True))
        self.parts: list[Part] = []
        self.started = time.perf_counter()
        self.exit_code: int | None = None
        self._on_done: Callable[[int], None] | None = None
        self._watchdog = QTimer()
        self._watchdog.setSingleShot(True)
        self._watchdog.timeout.connect(self._timed_out)
        self._current = None

    def start(self, on_done: Callable[[int], None]) -> None:
        from PySide6.QtGui import QGuiApplication

        from gallery_app import __version__
        from gallery_app.core import paths

        self._on_done = on_done
        frozen = "bundle" if getattr(sys, "frozen", False) else "source"
        self.log(f"self-test: gallery_app {__version__} ({frozen}, Python {sys.version.split()[0]})")
        self.log(f"self-test: data folder {paths.data_dir()} (temporary); models folder {paths.models_dir()}")
        part = Part("window")
        self.parts.append(part)
        shown = self.window.isVisible()
        part.status = "PASS" if shown else "FAIL"
        self._report(part, f"opened on the '{QGuiApplication.platformName()}' platform, "
                           f"{self.window.width()}×{self.window.height()}" if shown else "the window did not open")
        part = Part("licences")
        self.parts.append(part)
        part.status, line = _licences_part()
        self._report(part, line)
        self._watchdog.start(TIME_LIMIT_S * 1000)
        self._run("chat", _chat_part, self._photos)

    # --- parts ---------------------------------------------------------------------------------
    def _photos(self) -> None:
        self._run("photos", _photo_part, self._finish)

    def _run(self, name: str, function, then: Callable[[], None]) -> None:
        from gallery_app.ui.workers import Worker

        part = Part(name)
        self.parts.append(part)
        self.log(f"self-test: {name}: running…")
        worker = Worker(_part, function, self.services)
        worker.signals.yielded.connect(lambda item: self._part_result(part, (item.status, item.lines))
                                       if isinstance(item, _Outcome) else self.log(f"self-test: {name}:   {item}"))
        worker.signals.error.connect(lambda error: self._part_result(part, ("FAIL", [str(error)])))
        worker.signals.cancelled.connect(lambda: self._part_result(part, ("FAIL", ["cancelled (time limit)"])))
        worker.signals.finished.connect(lambda: self._part_ended(part, then))
        self._current = worker
        self.services.run(worker, f"Self-test: {name}")

    def _part_ended(self, part: Part, then: Callable[[], None]) -> None:
        if part.status == "PENDING":
            part.status = "FAIL"
            self._report(part, "ended without an outcome")
        then()

    def _part_result(self, part: Part, outcome: tuple[str, list[str]]) -> None:
        part.status, lines = outcome
        self._report(part, *lines)

    def _report(self, part: Part, *lines: str) -> None:
        part.lines.extend(lines)
        for line in lines or ("",):
            self.log(f"self-test: {part.name}: {part.status} {line}".rstrip())

    def _timed_out(self) -> None:
        self.log(f"self-test: time limit of {TIME_LIMIT_S} s reached; cancelling")
        if self._current is not None:
            self._current.cancel()

    def _finish(self) -> None:
        self._watchdog.stop()
        ran = [p for p in self.parts if p.status != "SKIP"]
        chat_ran = any(p.name == "chat" and p.status == "PASS" for p in self.parts)
        ok = all(p.status == "PASS" for p in ran) and chat_ran
        summary = ", ".join(f"{p.name} {p.status}" for p in self.parts)
        self.log(f"self-test: {summary} — {time.perf_counter() - self.started:.1f} s")
        self.log("self-test: OK" if ok else "self-test: FAILED")
        self.exit_code = 0 if ok else 1
        if self._on_done is not None:
            self._on_done(self.exit_code)


def _origin(services, role) -> str:
    from gallery_app.core.models import loading

    resolved = loading.resolve_setting(role, services.settings.model_setting(role))
    where = f" ({resolved.path.parent})" if resolved.source is not resolved.source.MODELS_FOLDER else ""
    return f"{resolved.spec.name} from the {resolved.origin()}{where}"


def _licences_part() -> tuple[str, str]:
    """Help → Third-party licences… has its list: in a bundle, the one ``make package`` wrote into it."""
    from gallery_app.core.licences import bundled_notices_path, third_party_notices

    written = bundled_notices_path().is_file()
    if getattr(sys, "frozen", False) and not written:
        return "FAIL", f"the bundle carries no third-party licences ({bundled_notices_path()} is missing)"
    notices = third_party_notices()
    if not notices:
        return "FAIL", "no third-party licences could be listed"
    return "PASS", f"{len(notices)} packages listed ({'written into the bundle' if written else 'from their metadata'})"


def _chat_part(context, services):
    """Import the demo chat, ask the question, require passages and a non-empty answer (a generator: log lines)."""
    from gallery_app.core import resources
    from gallery_app.core.chat.events import Answer, MatchesFound
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.chat.session import ChatSession
    from gallery_app.core.models.specs import Role

    demo = resources.resources_dir() / "demo" / "chats" / "weekend_away" / "_chat.txt"
    if not demo.is_file():
        return "FAIL", [f"the demo chat is missing: {demo}"]
    yield f"message search model: {_origin(services, Role.TEXT_EMBEDDER)}"
    yield f"answer model: {_origin(services, Role.CHAT_LLM)}"
    embedder = services.text_embedder()
    started = time.perf_counter()
    with services.connect() as conn:
        summary = import_chat(conn, demo, embedder, cancel=lambda: context.cancelled)
        yield f"imported the demo chat in {time.perf_counter() - started:.1f} s: {summary.describe()}"
        llm = services.chat_llm()
        session = ChatSession(conn, embedder, llm, services.settings.ask_options)
        started = time.perf_counter()
        answer = None
        matches = 0
        for event in session.ask(QUESTION, cancel=lambda: context.cancelled):
            if isinstance(event, MatchesFound):
                matches = len(event.retrieval.matches)
                yield f"question: {QUESTION!r} → {matches} passages"
            elif isinstance(event, Answer):
                answer = event
    if context.cancelled:
        return "FAIL", ["cancelled"]
    text = (answer.text if answer else "").strip()
    seconds = time.perf_counter() - started
    named = "names Daniel, as expected" if EXPECTED_NAME in text.lower() else "does not name Daniel (small model)"
    if matches and text:
        return "PASS", [f"answer in {seconds:.1f} s ({named}): {text[:160]!r}"]
    return "FAIL", [f"passages: {matches}, answer: {text!r}"]


def _photo_part(context, services):
    """Index the demo photos; search them by words when a CLIP model is here, else say why not."""
    from gallery_app.core import resources
    from gallery_app.core.errors import ModelError
    from gallery_app.core.photos.indexer import PhotoIndexer
    from gallery_app.core.photos.library import count_photos
    from gallery_app.core.models.specs import Role
    from gallery_app.core.photos.search import PhotoSearch

    folder = resources.resources_dir() / "demo" / "photos"
    expected = len(resources.demo_photo_files())
    if not expected:
        return "FAIL", [f"no demo photos in {folder}"]
    missing = []
    try:
        vision = services.clip_vision()
    except ModelError as exc:
        vision, missing = None, [exc]
    try:
        text_model = services.clip_text() if vision is not None else None
    except ModelError as exc:
        text_model, missing = None, [exc]
    started = time.perf_counter()
    with services.connect() as conn:
        summary = PhotoIndexer(conn, vision, cancel=lambda: context.cancelled).add_folder(folder)
        recorded = count_photos(conn)
        yield f"indexed the demo photos in {time.perf_counter() - started:.1f} s: {summary.describe()}"
        if recorded != expected:
            return "FAIL", [f"{recorded} of {expected} demo photos recorded"]
        if vision is None or text_model is None:
            reason = missing[0].message if missing else "no CLIP model"
            return "SKIP", [f"{recorded} photos recorded without vectors; search by meaning not run: {reason} "
                            "Get it with Help → Models… (or gallery-app-cli models fetch clip-vision clip-text)."]
        yield f"photo models: {_origin(services, Role.CLIP_VISION)}; {_origin(services, Role.CLIP_TEXT)}"
        results = PhotoSearch(conn, vision=vision, text=text_model).by_text(PHOTO_QUERY, k=5)
    if not results.hits:
        return "FAIL", [f"{PHOTO_QUERY!r}: no results"]
    top = results.hits[0].photo.name
    verdict = "as expected" if top == EXPECTED_PHOTO else f"expected {EXPECTED_PHOTO}: is this the real CLIP?"
    return "PASS", [f"{PHOTO_QUERY!r}: {results.describe()}; top hit {top} ({results.hits[0].similarity:.3f}, {verdict})"]


def run(window, services=None) -> int:
    """Run the self-test in the running application's event loop; returns the exit code."""
    from PySide6.QtCore import QEventLoop, QTimer

    if services is None:
        services = getattr(window, "services", None)
    if services is None:
        from gallery_app.ui.services import Services
        from gallery_app.ui.settings import Settings

        services = Services(Settings.load())
    test = SelfTest(window, services)
    loop = QEventLoop()
    QTimer.singleShot(0, lambda: test.start(lambda code: loop.quit()))
    loop.exec()
    services.workers.wait(30_000)
    services.shutdown()
    return test.exit_code if test.exit_code is not None else 1
