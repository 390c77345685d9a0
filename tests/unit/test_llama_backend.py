"""The CPU backend choice and the AMX guard, on fake libraries and on the installed one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gallery_app.core.models.runtimes import llama_backend

SAPPHIRE_RAPIDS_NATIVE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
                          "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
                          "AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |")
PORTABLE_ICELAKE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
                    "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |")


def test_amx_is_read_from_llamas_system_info():
    assert llama_backend.amx_offered(SAPPHIRE_RAPIDS_NATIVE)
    assert not llama_backend.amx_offered(PORTABLE_ICELAKE)
    assert not llama_backend.amx_offered("CPU : AMX_INT8 = 0 | AVX2 = 1 |")


def variants(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / f"libggml-cpu-{name}.so").write_bytes(b"")
    (tmp_path / "libggml-base.so").write_bytes(b"")
    return tmp_path


def test_the_best_variant_this_cpu_runs_is_chosen_but_never_an_amx_one(tmp_path):
    scores = {"x64": 1, "haswell": 30, "icelake": 60, "sapphirerapids": 90, "zen4": 0}
    lib = variants(tmp_path, *scores)
    chosen, refused = llama_backend.choose_variant(lib, score=lambda path: scores[path.stem.split("-", 2)[2]])
    assert chosen == lib / "libggml-cpu-icelake.so"
    assert refused == ("sapphirerapids",)


def test_a_library_without_variant_modules_keeps_its_built_in_backend(tmp_path):
    assert llama_backend.choose_variant(variants(tmp_path), score=lambda path: 1) == (None, ())


class FakeParams:
    use_extra_bufts = True


def fake_library(system_info: str, tmp_path: Path):
    """A llama_cpp module of a static build (its CPU backend inside): what a person's own build looks like."""
    bindings = SimpleNamespace(llama_model_default_params=FakeParams)
    module = SimpleNamespace(__file__=str(tmp_path / "__init__.py"), llama_cpp=bindings,
                             llama_print_system_info=lambda: system_info.encode())
    count = lambda: 1  # noqa: E731  (the built-in backend is registered)
    ggml = SimpleNamespace(ggml_backend_reg_count=count)
    return module, ggml


def test_a_library_that_offers_amx_loads_every_model_without_extra_buffer_types(tmp_path):
    library, ggml = fake_library(SAPPHIRE_RAPIDS_NATIVE, tmp_path)
    state = llama_backend.load_backend(library, ggml)
    assert state.guard_active and state.variant is None
    assert library.llama_cpp.llama_model_default_params().use_extra_bufts is False
    llama_backend.install_guard(library)  # twice: still one wrapper
    assert library.llama_cpp.llama_model_default_params.__wrapped__ is FakeParams


def test_a_library_without_amx_is_left_alone(tmp_path):
    library, ggml = fake_library(PORTABLE_ICELAKE, tmp_path)
    state = llama_backend.load_backend(library, ggml)
    assert not state.guard_active
    assert library.llama_cpp.llama_model_default_params is FakeParams


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C\n"
                       "flags\t\t: fpu sse2 avx2 avx512f avx512_vnni amx_tile amx_int8\n\nprocessor\t: 1\n")
    info = llama_backend.cpu_info(cpuinfo)
    assert info.model == "Intel(R) Xeon(R) Platinum 8481C"
    assert info.flags["amx_tile"] and info.flags["avx512f"] and not info.flags["amx_bf16"]


def test_the_installed_library_has_a_cpu_backend_and_no_amx():
    pytest.importorskip("llama_cpp")
    state = llama_backend.backend_state()
    assert "CPU :" in state.system_info
    assert not llama_backend.amx_offered(state.system_info) or state.guard_active
    if state.variant is not None:  # the app's portable build: a variant was chosen, never an AMX one
        assert state.variant not in llama_backend.AMX_VARIANTS
