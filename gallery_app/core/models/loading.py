"""Turning a model setting into a running model.

A setting is a role's default (None), a model key from the catalog, or a path: a GGUF file,
or a folder holding ``model.onnx`` + ``tokenizer.json`` (and optionally ``spec.json`` with
``dims``, ``pooling``, ``query_prefix``, ``passage_prefix``, ``max_tokens``). Paths let a
person (or ``bench/chat_eval.py``) try a model file without any code change.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from gallery_app.core.errors import ModelError
from gallery_app.core.models import choices, sources
from gallery_app.core.models.catalog import ALL_SPECS
from gallery_app.core.models.memory import CONTEXT_TOKENS
from gallery_app.core.models.specs import ModelFile, ModelSpec, Role, Runtime


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48]


def _gguf_spec(path: Path, role: Role) -> tuple[ModelSpec, dict[str, Path]]:
    spec = ModelSpec(key=f"local-{_slug(path.stem)}-{path.stat().st_size}", role=role, name=path.name,
                     runtime=Runtime.GGUF, files=(ModelFile("model.gguf"),), licence="see the model's card",
                     dims=None, pooling="mean", max_tokens=32_768 if role is Role.CHAT_LLM else 512)
    return spec, {"model.gguf": path}


def _onnx_folder_spec(folder: Path, role: Role) -> tuple[ModelSpec, dict[str, Path]]:
    model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
    if not (model.is_file() and tokenizer.is_file()):
        raise ModelError(f"{folder} needs model.onnx and tokenizer.json to be used as a text embedder.")
    overrides = {}
    if (folder / "spec.json").is_file():
        overrides = json.loads((folder / "spec.json").read_text("utf-8"))
    is_e5 = "e5" in folder.name.lower()
    spec = ModelSpec(key=f"local-{_slug(folder.name)}-{model.stat().st_size}", role=role, name=folder.name,
                     runtime=Runtime.ONNX, files=(ModelFile("model.onnx"), ModelFile("tokenizer.json")),
                     licence="see the model's card", dims=overrides.get("dims"),
                     pooling=overrides.get("pooling", "mean"),
                     query_prefix=overrides.get("query_prefix", "query: " if is_e5 else ""),
                     passage_prefix=overrides.get("passage_prefix", "passage: " if is_e5 else ""),
                     max_tokens=int(overrides.get("max_tokens", 512)))
    return spec, {"model.onnx": model, "tokenizer.json": tokenizer}


def resolve_setting(role: Role, setting: str | None = None) -> sources.ResolvedModel:
    """The model for ``role``: ``setting`` if given (a key, a file, a folder; the role's name means its
    default, whatever was chosen), else the person's choice (``models.choices``), else the role's default."""
    if setting == role.value:
        return sources.resolve_role(role, "")  # "": the default, not the choice
    setting = setting or choices.chosen(role)
    if not setting or setting in ALL_SPECS:
        return sources.resolve_role(role, setting or None)
    path = Path(setting).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        spec, files = _gguf_spec(path, role)
    elif path.is_dir() and role is Role.TEXT_EMBEDDER:
        spec, files = _onnx_folder_spec(path, role)
    else:
        raise ModelError(f"{setting!r} is neither a known {role.value} model nor a model file or folder.",
                         hint="See: gallery-app-cli models list")
    return sources.ResolvedModel(spec, sources.Source.LOCAL_FILE, files)


def notices(model) -> list[str]:
    """What a person should hear about a loaded model: a damaged copy passed over, a context lowered to fit."""
    found = [getattr(getattr(model, "resolved", None), "notice", ""), getattr(model, "context_notice", "")]
    return [notice for notice in found if notice]


def open_text_embedder(setting: str | None = None, *, threads: int | None = None):
    from gallery_app.core.models.runtimes.embedders import load_text_embedder

    resolved = resolve_setting(Role.TEXT_EMBEDDER, setting)
    embedder = load_text_embedder(resolved, threads=threads)
    if resolved.spec.dims is None:
        # A model brought by the person: its size is whatever it outputs.
        dims = int(embedder._embed_batch(["dimension probe"], False).shape[-1])
        embedder = load_text_embedder(replace(resolved, spec=replace(resolved.spec, dims=dims)), threads=threads)
    return embedder


def open_chat_llm(setting: str | None = None, *, n_ctx: int = CONTEXT_TOKENS, threads: int | None = None):
    from gallery_app.core.models.runtimes.llama import ChatLLM

    return ChatLLM(resolve_setting(Role.CHAT_LLM, setting), n_ctx=n_ctx, threads=threads)


def open_clip_vision(setting: str | None = None, *, threads: int | None = None):
    from gallery_app.core.models.runtimes.clip import ClipVisionEncoder

    return ClipVisionEncoder(resolve_setting(Role.CLIP_VISION, setting), threads=threads)


def open_clip_text(setting: str | None = None, *, threads: int | None = None):
    from gallery_app.core.models.runtimes.clip import ClipTextEncoder

    return ClipTextEncoder(resolve_setting(Role.CLIP_TEXT, setting), threads=threads)
