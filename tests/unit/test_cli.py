"""gallery-app-cli as a person uses it: help everywhere, doctor, models list/verify/use."""

from __future__ import annotations

import argparse
import shutil

import pytest

from gallery_app import __version__
from gallery_app.cli import build_parser, main
from gallery_app.core.models import catalog, sources


def _all_subparsers(parser: argparse.ArgumentParser, path=()):
    """(command path, its parser, its one-line help) for every command and sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), sub, helps.get(name)
                yield from _all_subparsers(sub, path + (name,))


def test_every_command_has_help():
    parser = build_parser()
    commands = list(_all_subparsers(parser))
    assert {" ".join(p) for p, _, _ in commands} >= {"doctor", "models", "models list", "models fetch",
                                                    "models verify", "models use"}
    for path, sub, one_line_help in commands:
        assert sub.description and one_line_help, f"`{' '.join(path)}` has no help"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_doctor_reports_versions_folders_and_models(capsys, app_dirs):
    data, models = app_dirs
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for expected in ("gallery_app", "Python", "SQLite", "sqlite-vec", str(data), str(models),
                     "text-embedder", "clip-text", "clip-vision", "chat-llm", "Everything the app needs works"):
        assert expected in out
    # The offline packages are installed: those models are found and their checksums verified.
    assert "available from installed package" in out and "verified" in out
    # CLIP is not installed anywhere here: doctor says how big it is and how to get it.
    assert "missing" in out and "models fetch clip-vit-b-32-vision" in out


def test_doctor_fails_on_a_damaged_model(capsys):
    spec = catalog.SMOLLM2_135M
    folder = sources.model_folder(spec)
    folder.mkdir(parents=True)
    (folder / "model.gguf").write_bytes(b"\0" * 1024)  # takes precedence over the package copy
    assert main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert "damaged" in err and "models fetch smollm2-135m-instruct-q4_1" in err


def test_models_list_marks_the_model_used_per_role(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    used = [line for line in out.splitlines() if line.startswith(" *")]
    assert len(used) == 4
    assert any("downloadable" in line for line in out.splitlines())


def test_models_verify_and_use(capsys, tmp_path):
    spec = catalog.SMOLLM2_135M
    assert main(["models", "verify"]) == 0
    assert "verified" in capsys.readouterr().out
    package_copy = sources.resolve(spec).path
    copy = tmp_path / "my-model.gguf"
    shutil.copyfile(package_copy, copy)
    assert main(["models", "use", spec.key, str(copy)]) == 0
    assert sources.resolve(spec).source is sources.Source.LOCAL_FILE
    wrong = tmp_path / "wrong.gguf"
    wrong.write_bytes(b"GGUF nonsense")
    assert main(["models", "use", spec.key, str(wrong)]) == 1
    assert "is not SmolLM2" in capsys.readouterr().err


def test_fetch_of_an_available_model_does_nothing(capsys):
    assert main(["models", "fetch", "chat-llm"]) == 0
    assert "already available" in capsys.readouterr().out


def test_unknown_model_is_a_clear_error(capsys):
    assert main(["models", "fetch", "gpt-17"]) == 1
    assert "no model called 'gpt-17'" in capsys.readouterr().err


def test_ctrl_c_in_any_command_ends_with_a_sentence_and_exit_130(capsys, monkeypatch):
    """Before: `chat reindex` and `chat ask` printed a KeyboardInterrupt traceback on Ctrl+C."""
    import gallery_app.cli_chat as cli_chat

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_chat, "cmd_reindex", interrupted)
    assert main(["chat", "reindex"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("Stopped. Whatever was finished is saved")
