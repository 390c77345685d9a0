"""A model hub on 127.0.0.1 for download tests: serves PAYLOAD at any path, 64 KiB at a time with a pause between
blocks, and honours Range (so a cancelled download can be seen to resume)."""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
BLOCK = 64 * 1024


class SlowHub:
    """Serves PAYLOAD at any path, 64 KiB at a time with a pause between blocks; honours Range."""

    def __init__(self, delay: float):
        self.delay = delay
        self.ranges: list[str | None] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                requested = self.headers.get("Range")
                hub.ranges.append(requested)
                start = 0
                match = re.match(r"bytes=(\d+)-", requested or "")
                if match:
                    start = int(match.group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(PAYLOAD) - start))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if not body:
                    return
                try:
                    for offset in range(start, len(PAYLOAD), BLOCK):
                        self.wfile.write(PAYLOAD[offset:offset + BLOCK])
                        self.wfile.flush()
                        time.sleep(hub.delay)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"
