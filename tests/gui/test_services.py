"""Models shared by the window's jobs: released while in use, they stay alive until the job ends."""

from __future__ import annotations

from gallery_app.core.models.specs import Role
from gallery_app.ui.services import Services
from gallery_app.ui.workers import Worker


def stream_answer(context, services, seen):
    llm = services.chat_llm()
    prompt, stops = llm.render_chat([{"role": "user", "content": "Tell a long story about a lighthouse keeper."}])
    for piece in llm.stream_completion(llm.tokenize(prompt), max_tokens=64, stop=stops):
        seen.append(piece)
        yield piece


def test_releasing_models_while_a_job_generates_does_not_crash_it(qtbot):
    """Before: release_models() closed the llama.cpp model under the running job: a segmentation fault."""
    services = Services()
    seen: list[str] = []
    worker = Worker(stream_answer, services, seen)
    with qtbot.waitSignal(worker.signals.finished, timeout=120_000):
        services.run(worker)
        qtbot.waitUntil(lambda: len(seen) >= 2, timeout=60_000)
        services.release_models()  # e.g. a download finished, or the settings changed the model
        assert not services.loaded(Role.CHAT_LLM)
    assert len(seen) > 2  # the job carried on with the model it had
    services.shutdown()
