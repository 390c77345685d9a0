"""The answer model's speed: in this process vs in the app's child process, and one llama.cpp build vs another.

What it measures
    The same prompt (about 400 tokens, the size of a question with its passages) is evaluated and
    continued greedily for ``--tokens`` tokens, and timed to the first piece (TTFT: prompt evaluation)
    and over the rest (tokens/s). Each round runs every variant once, in turn, so they see the same
    machine load; the medians over the rounds are printed, with each variant's ratio to the first.

    * ``in-process``: ``llama_cpp.Llama`` in this interpreter (``open_llama``), as the app did before.
    * ``child``: the app's ``LlamaProcess`` (a spawned child streaming pieces over a pipe), as it asks now.
    * ``--other-python PATH``: ``in-process`` again under another interpreter, e.g. a virtualenv holding
      a ``-march=native`` build, to compare builds side by side in one run.

Run: ``python bench/llm_speed.py`` (about a minute), or
``python bench/llm_speed.py --other-python /tmp/native/bin/python --rounds 7``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

try:
    import gallery_app  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPT = ("Maya: We arrive at the hotel on Friday around six, Daniel booked it.\n"
          "Daniel: I paid for the hotel, you can pay me back later.\n") * 12 + "Question: who paid for the hotel?\nAnswer:"


def _timed(pieces) -> tuple[float, float, int]:
    start = time.perf_counter()
    first = None
    count = 0
    for _ in pieces:
        count += 1
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    rest = max(count - 1, 1)
    return (first or end) - start, rest / max(end - (first or end), 1e-9), count


def run_in_process(model: Path, tokens: int, threads: int) -> dict:
    from gallery_app.core.models.runtimes.llama import open_llama
    from gallery_app.core.models.runtimes.llama_backend import backend_state

    llama = open_llama(model, n_ctx=1024, threads=threads, seed=0)
    try:
        prompt = llama.tokenize(PROMPT.encode(), add_bos=True, special=False)
        llama.create_completion(prompt=prompt[:8], max_tokens=2)  # warm-up: nothing timed pays for first use
        llama.reset()  # no cached prefix: every variant evaluates the whole prompt
        stream = llama.create_completion(prompt=prompt, max_tokens=tokens, temperature=0.0, top_k=1, seed=0,
                                         stream=True)
        ttft, rate, count = _timed(chunk["choices"][0]["text"] for chunk in stream)
    finally:
        llama.close()
    return {"ttft": ttft, "rate": rate, "pieces": count, "info": backend_state().system_info,
            "variant": backend_state().variant}


def run_child(model: Path, tokens: int, threads: int) -> dict:
    from gallery_app.core.models.runtimes.llama_process import LlamaProcess

    process = LlamaProcess(model, n_ctx=1024, threads=threads, seed=0)
    try:
        prompt = process.tokenize(PROMPT.encode(), add_bos=True, special=False)
        list(process.complete(prompt[:8], max_tokens=2))
        # A different first token, so the child's cached prefix is not reused (the in-process run resets).
        list(process.complete(prompt[1:9], max_tokens=1))
        ttft, rate, count = _timed(process.complete(prompt, max_tokens=tokens, temperature=0.0, top_k=1, seed=0))
    finally:
        process.close()
    return {"ttft": ttft, "rate": rate, "pieces": count, "info": process.system_info}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", default="smollm2-135m-instruct-q4_1")
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--other-python", help="another interpreter (another llama.cpp build) to compare")
    parser.add_argument("--one", choices=["in-process"], help=argparse.SUPPRESS)  # a round under --other-python
    parser.add_argument("--model-path", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:
        print(json.dumps(run_in_process(Path(args.model_path), args.tokens, args.threads)))
        return 0

    from gallery_app.core.models.loading import resolve_setting
    from gallery_app.core.models.specs import Role

    model = resolve_setting(Role.CHAT_LLM, args.llm).path
    variants = {"in-process": lambda: run_in_process(model, args.tokens, args.threads),
                "child process": lambda: run_child(model, args.tokens, args.threads)}
    if args.other_python:
        def other() -> dict:
            done = subprocess.run([args.other_python, __file__, "--one", "in-process", "--model-path", str(model),
                                   "--tokens", str(args.tokens), "--threads", str(args.threads)],
                                  capture_output=True, text=True, check=True)
            return json.loads(done.stdout.strip().splitlines()[-1])
        variants[f"in-process, {args.other_python}"] = other
    results: dict[str, list[dict]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, run in variants.items():
            results[name].append(run())
    print(f"{model.name}, {args.tokens} tokens after a {len(PROMPT)}-character prompt, {args.threads} threads, "
          f"{args.rounds} rounds (medians; ratios to the first row)")
    base_ttft = base_rate = None
    for name, runs in results.items():
        ttft = statistics.median(r["ttft"] for r in runs)
        rate = statistics.median(r["rate"] for r in runs)
        base_ttft, base_rate = base_ttft or ttft, base_rate or rate
        variant = runs[0].get("variant")
        print(f"  {name:<28} TTFT {ttft * 1000:7.1f} ms ({ttft / base_ttft:5.3f})   "
              f"{rate:6.1f} tokens/s ({rate / base_rate:5.3f})" + (f"   backend {variant}" if variant else ""))
        print(f"  {'':<28} {runs[0]['info']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
