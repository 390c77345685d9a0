"""llama.cpp's CPU backend, chosen for this CPU and kept away from Intel AMX.

The app's build of llama-cpp-python (scripts/llama-wheel.sh) ships the CPU backend once per x86-64 level
as modules beside libllama.so; ``llama_cpp_module()`` loads the best one this CPU runs, never one that
uses AMX. Whatever the build, a library whose CPU backend offers AMX (a person's own ``-march=native``
build on a Sapphire Rapids Xeon) loads every model without llama.cpp's extra buffer types: those are
where the weights are repacked for AMX, whose matmul segfaults (llama.cpp's ggml_backend_amx_mul_mat).
"""

from __future__ import annotations

import ctypes
import logging
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from gallery_app.core.errors import ModelError

#: CPU backend variants that would use AMX; never loaded, and the build removes them too.
AMX_VARIANTS = ("sapphirerapids",)
#: The CPU flags a person (or doctor) needs to know about for llama.cpp's speed and safety.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")

_AMX_FEATURE = re.compile(r"\bAMX\w*\s*=\s*1\b")


@dataclass(frozen=True)
class BackendState:
    #: The CPU backend module loaded ("haswell", …), or None for a library built with it inside.
    variant: str | None
    #: Variants present but not loaded because they would use AMX.
    refused: tuple[str, ...]
    #: llama.cpp's own line: the instruction sets its CPU backend was built for.
    system_info: str
    #: Whether the CPU backend offers AMX, so every model is loaded without extra buffer types.
    guard_active: bool


def amx_offered(system_info: str) -> bool:
    """Whether llama.cpp's system info says its CPU backend would use AMX ("AMX_INT8 = 1")."""
    return bool(_AMX_FEATURE.search(system_info))


@dataclass(frozen=True)
class CpuInfo:
    model: str
    #: Which of ``CPU_FLAGS`` the CPU has; None where the OS does not say (only Linux's /proc/cpuinfo is read).
    flags: dict[str, bool] | None


def cpu_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    import platform

    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return CpuInfo(platform.processor() or platform.machine(), None)
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
        if not line.strip() and fields:
            break  # the first processor says it for all
    flags = set(fields.get("flags", "").split())
    return CpuInfo(fields.get("model name") or platform.machine(),
                   {flag: flag in flags for flag in CPU_FLAGS} if "flags" in fields else None)


_PREFIX, _SUFFIX = ("", ".dll") if sys.platform == "win32" else ("lib", ".so")


def _library_name(stem: str) -> str:
    return f"{_PREFIX}{stem}{_SUFFIX}"


def choose_variant(lib_dir: Path, score=None) -> tuple[Path | None, tuple[str, ...]]:
    """The best CPU backend module in ``lib_dir`` this CPU runs (llama.cpp's own score), skipping AMX ones.

    ``score(path) -> int`` reads a module's ``ggml_backend_score`` (0: this CPU lacks its instructions).
    Returns (the module or None when there are no modules, the AMX variants that were refused)."""
    score = score or _module_score
    prefix = f"{_PREFIX}ggml-cpu-"
    best, best_score, refused = None, 0, []
    for path in sorted(lib_dir.glob(f"{prefix}*{_SUFFIX}")):
        variant = path.name[len(prefix):-len(_SUFFIX)]
        if variant in AMX_VARIANTS:
            refused.append(variant)
            continue
        points = score(path)
        if points > best_score:
            best, best_score = path, points
    return best, tuple(refused)


def _module_score(path: Path) -> int:
    try:
        module = ctypes.CDLL(str(path))
    except OSError:
        return 0
    function = getattr(module, "ggml_backend_score", None)
    if function is None:
        return 0
    function.restype = ctypes.c_int
    return int(function())


_lock = threading.Lock()
_state: BackendState | None = None


def llama_cpp_module():
    """``llama_cpp``, imported once per process with its CPU backend loaded and the AMX guard in place."""
    global _state
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelError("The llama.cpp runtime (llama-cpp-python) is not installed.",
                         hint="Reinstall the app with its dependencies.") from exc
    with _lock:
        if _state is None:
            _state = load_backend(llama_cpp, _ggml_of_libllama(Path(llama_cpp.__file__).parent / "lib"))
    return llama_cpp


def backend_state() -> BackendState:
    """What ``llama_cpp_module()`` loaded: the variant, llama.cpp's system info and whether the guard is on."""
    llama_cpp_module()
    assert _state is not None
    return _state


def _ggml_of_libllama(lib_dir: Path):
    """The libggml that libllama itself uses, whose backend registry llama.cpp reads.

    A wheel holds libggml.so, libggml.so.0 and libggml.so.0.x as three copies (wheels keep no symlinks), and
    libllama links to its soname, libggml.so.0: opened by path, libggml.so would be a second library with a
    registry of its own. Opened by the soname alone, the dynamic loader returns the one already loaded."""
    sonames = sorted((path.name for path in lib_dir.glob(f"{_PREFIX}ggml{_SUFFIX}.*")
                      if re.fullmatch(rf"{re.escape(_PREFIX)}ggml{re.escape(_SUFFIX)}\.\d+", path.name)))
    for soname in sonames:
        try:
            return ctypes.CDLL(soname)
        except OSError:
            continue
    return ctypes.CDLL(str(lib_dir / _library_name("ggml")))


def load_backend(llama_cpp, ggml) -> BackendState:
    """Loads the best CPU backend module into ``ggml`` (the very libggml libllama uses) unless a backend is
    already there (a library built with it inside), then turns the AMX guard on if that backend offers AMX."""
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
    variant, refused = None, ()
    if ggml.ggml_backend_reg_count() == 0:
        # llama.cpp logs the module it loads to stderr, through llama-cpp-python's logger, unless told not to.
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
        module, refused = choose_variant(lib_dir)
        if module is not None:
            ggml.ggml_backend_load.restype = ctypes.c_void_p
            ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
            if not ggml.ggml_backend_load(str(module).encode()):
                raise ModelError(f"llama.cpp's CPU backend {module.name} could not be loaded.",
                                 hint="Reinstall the app; run: gallery-app-cli doctor")
            variant = module.name[len(f"{_PREFIX}ggml-cpu-"):-len(_SUFFIX)]
    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()
    guard = amx_offered(info)
    if guard:
        install_guard(llama_cpp)
    return BackendState(variant, refused, info, guard)


def install_guard(llama_cpp) -> None:
    """Every model this process loads from now on gets no extra buffer types (no AMX repacking).

    llama-cpp-python's ``Llama`` has no argument for it: it reads ``llama_model_default_params()``,
    which is wrapped here once, for every load in the process (the chat model's child, an embedder)."""
    bindings = llama_cpp.llama_cpp
    original = bindings.llama_model_default_params
    if getattr(original, "amx_guard", False):
        return

    def without_extra_buffer_types():
        params = original()
        params.use_extra_bufts = False
        return params

    without_extra_buffer_types.amx_guard = True
    without_extra_buffer_types.__wrapped__ = original
    bindings.llama_model_default_params = without_extra_buffer_types
