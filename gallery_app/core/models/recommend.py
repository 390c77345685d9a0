"""Which model of each role fits this computer best, and why.

The memory a person can give the app is what is left after the system and their other programs:
a third of the RAM, at least 2 GB, stays theirs. The embedder and CLIP come first (imports and photo
search need them; they are small), and the chat model gets the rest. Speed is the other limit: on CPU
a model reads all its weights for every word it writes, so few cores cap the size that still answers
in seconds rather than minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gallery_app.core.models import sources
from gallery_app.core.models.catalog import CANDIDATES
from gallery_app.core.models.memory import CONTEXT_TOKENS, Machine, ram_needed
from gallery_app.core.models.specs import ModelSpec, Role
from gallery_app.core.units import GiB, describe_size

#: The largest chat model (billions of parameters) worth its wait on up to this many physical cores: the
#: work per token grows with the parameters, and a prompt of a few passages is a thousand tokens or more.
LLM_PARAMETERS_FOR_CORES = ((2, 1.6), (4, 4.0))
#: The same for the text embedder, which embeds every message of every chat imported.
EMBEDDER_PARAMETERS_FOR_CORES = ((2, 0.15), (4, 0.3))
#: Below this much RAM the small embedder stays, whatever the cores.
STRONG_EMBEDDER_RAM = 8 * GiB
#: The roles the window offers a better model for (CLIP has no alternative in the catalog).
OFFERED_UPGRADES = (Role.CHAT_LLM, Role.TEXT_EMBEDDER)

Locate = Callable[[ModelSpec], sources.ResolvedModel | None]


@dataclass(frozen=True)
class Recommendation:
    role: Role
    current: ModelSpec
    recommended: ModelSpec
    reason: str

    @property
    def differs(self) -> bool:
        return self.recommended.key != self.current.key

    @property
    def command(self) -> str:
        fetch = f"gallery-app-cli models fetch {self.recommended.key}"
        if self.role is Role.TEXT_EMBEDDER:  # every chat is embedded again with it, then search switches
            return f"{fetch} && gallery-app-cli chat reindex --embedder {self.recommended.key}"
        return fetch


def spare_memory(machine: Machine) -> int:
    """What the app may use: the RAM minus a third (at least 2 GB) for the system and other programs."""
    return max(0, machine.total_ram - max(2 * GiB, machine.total_ram // 3))


def parameter_cap(cores: int, caps: tuple[tuple[int, float], ...]) -> float | None:
    for most_cores, cap in caps:
        if cores <= most_cores:
            return cap
    return None


def _locating_once() -> Locate:
    """``sources.locate`` asked once per spec: each lookup walks the models folder and the installed packages."""
    found: dict[str, sources.ResolvedModel | None] = {}

    def locate(spec: ModelSpec) -> sources.ResolvedModel | None:
        if spec.key not in found:
            found[spec.key] = sources.locate(spec)
        return found[spec.key]
    return locate


def memory_needed(spec: ModelSpec, locate: Locate = sources.locate) -> int:
    """What ``spec`` takes at the app's context; a model made on this machine is measured by its files."""
    need = ram_needed(spec, CONTEXT_TOKENS)
    if need is None and (found := locate(spec)) is not None:
        size = sum(path.stat().st_size for path in found.paths.values() if path.is_file())
        need = ram_needed(spec, CONTEXT_TOKENS, file_size=size)
    return need or 0


def _offered(spec: ModelSpec, locate: Locate) -> bool:
    """A model the app can get on its own (download or an installed package), meant for everyone."""
    return spec.languages == "multilingual" and spec.prompt_style == "chat" and (
        spec.downloadable or locate(spec) is not None)


def _strength(spec: ModelSpec) -> tuple[float, float]:
    """What ranks a role's models: a text embedder's search measured on real chats first (an unmeasured one
    after every measured one), then the parameters."""
    return spec.real_chat_recall or 0.0, spec.parameters or 0.0


def _ranked(role: Role, locate: Locate) -> list[ModelSpec]:
    """The role's offered models, strongest first (``_strength``; the catalog's order breaks ties)."""
    specs = [spec for spec in CANDIDATES[role] if _offered(spec, locate)]
    return sorted(specs, key=lambda spec: tuple(-value for value in _strength(spec)))


def _pick_embedder(machine: Machine, used: ModelSpec, locate: Locate) -> tuple[ModelSpec, str]:
    cap = parameter_cap(machine.cores, EMBEDDER_PARAMETERS_FOR_CORES)
    ranked = _ranked(Role.TEXT_EMBEDDER, locate)
    if machine.total_ram >= STRONG_EMBEDDER_RAM:
        for spec in ranked:
            if cap is None or (spec.parameters or 0) <= cap:
                if _strength(spec) > _strength(used):
                    return spec, f"finds more of the right messages; imports take longer, which {machine.cores} cores carry"
                break
    small = used if _offered(used, locate) else min(ranked, key=lambda spec: spec.parameters or 0, default=used)
    return small, (f"the stronger ones have 2-5 times its parameters, and a long chat takes that much longer "
                   f"to import on {machine.cores} cores")


def _pick_llm(machine: Machine, others: int, locate: Locate) -> tuple[ModelSpec, str]:
    budget = spare_memory(machine) - others
    cap = parameter_cap(machine.cores, LLM_PARAMETERS_FOR_CORES)
    ranked = _ranked(Role.CHAT_LLM, locate)
    for spec in ranked:
        if cap is not None and (spec.parameters or 0) > cap:
            continue
        if memory_needed(spec, locate) <= budget:
            limits = [f"fits the {describe_size(budget)} this computer can spare for it"]
            if cap is not None:
                limits.append(f"is within the {cap:g}B parameters {machine.cores} cores run at a usable speed")
            return spec, " and ".join(limits)
    smallest = min(ranked, key=lambda spec: memory_needed(spec, locate), default=CANDIDATES[Role.CHAT_LLM][0])
    return smallest, f"the smallest; even it leaves little room in {describe_size(machine.total_ram)}"


def _recommend(machine: Machine, current: dict[Role, ModelSpec] | None, locate: Locate) -> list[Recommendation]:
    used = {role: (current or {}).get(role) or sources.choose_spec(role, lookup=locate) for role in CANDIDATES}
    picks: dict[Role, tuple[ModelSpec, str]] = {
        Role.TEXT_EMBEDDER: _pick_embedder(machine, used[Role.TEXT_EMBEDDER], locate)}
    for role in (Role.CLIP_TEXT, Role.CLIP_VISION):
        picks[role] = (CANDIDATES[role][0], "the photo search model")
    others = sum(memory_needed(spec, locate) for spec, _ in picks.values())
    picks[Role.CHAT_LLM] = _pick_llm(machine, others, locate)
    recommendations = []
    for role in (Role.CHAT_LLM, Role.TEXT_EMBEDDER, Role.CLIP_TEXT, Role.CLIP_VISION):
        spec, why = picks[role]
        need = memory_needed(spec, locate)
        size = f"{describe_size(spec.size)} download, about {describe_size(need)} in use" if spec.size else ""
        reason = "; ".join(part for part in (spec.summary, size, why) if part)
        recommendations.append(Recommendation(role, used[role], spec, reason))
    return recommendations


def recommend(machine: Machine, current: dict[Role, ModelSpec] | None = None) -> list[Recommendation]:
    """Per role: the model used now, the one that fits ``machine`` best, and why."""
    return _recommend(machine, current, _locating_once())


def upgrades(machine: Machine, current: dict[Role, ModelSpec] | None = None) -> list[Recommendation]:
    """The roles where a model that fits ``machine`` better than the one used now can be downloaded
    (one not on this computer yet): what the Models dialog and the first start offer."""
    locate = _locating_once()
    return [advice for advice in _recommend(machine, current, locate)
            if advice.differs and advice.role in OFFERED_UPGRADES and advice.recommended.downloadable
            and locate(advice.recommended) is None]
