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


def test_a_damaged_model_copy_passed_over_is_said_in_the_window(qtbot):
    """Before: the notice about a damaged copy reached only the CLI's stderr; the window said nothing."""
    from gallery_app.core.models import catalog, sources

    folder = sources.model_folder(catalog.SMOLLM2_135M)
    folder.mkdir(parents=True)
    (folder / "model.gguf").write_bytes(b"GGUF\x03\x00 not a model, the download broke off")
    services = Services()
    worker = Worker(lambda context: services.chat_llm() and None)
    with qtbot.waitSignal(services.message, timeout=60_000) as said:
        services.run(worker)
    assert f"{folder}/model.gguf is damaged" in said.args[0] and "installed package" in said.args[0]
    services.shutdown()
