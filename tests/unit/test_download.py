"""download_file against a real HTTP server on 127.0.0.1 that can misbehave on purpose.

The server lives in this file (rather than a shared module) so the test imports the same way
whether or not ``tests`` becomes a package later.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from gallery_app import __version__
from gallery_app.core.errors import Cancelled, ChecksumMismatch, DownloadError
from gallery_app.core.models import download as download_module
from gallery_app.core.models.download import download_file, sha256_of

pytestmark = pytest.mark.timeout(30)

_SEND_BLOCK = 16 * 1024


# --------------------------------------------------------------------------- test server


@dataclass
class Behaviour:
    """How the server (mis)behaves. "First" options apply to the first ``times`` GETs only."""

    payload: bytes
    drop_after: int | None = None        # close the socket after this many body bytes
    stall_after: int | None = None       # go silent for stall_seconds after this many body bytes
    stall_seconds: float = 0.0
    times: int = 1
    ignore_range: bool = False
    corrupt: bool = False                # same length, some bytes flipped
    advertised_size: int | None = None   # lie about the file's size in the headers
    status: int | None = None            # answer every GET with this status and no file
    first_status: int | None = None
    block_delay: float = 0.0             # slow server: pause between 16 KiB blocks


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0
    body_sent: int = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep pytest output clean

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def _respond(self, *, send_body: bool) -> None:
        seen, get_index = self.server.record(self)
        behaviour = self.server.behaviour
        misbehave = get_index < behaviour.times
        if self.path == "/redirect":
            self._empty(seen, 302, {"Location": "/file"})
            return
        status = behaviour.status or (behaviour.first_status if misbehave else None)
        if status:
            self._empty(seen, status, {})
            return
        data = _corrupted(behaviour.payload) if behaviour.corrupt else behaviour.payload
        start = self._range_start(behaviour)
        if start is not None and start >= len(data):
            self._empty(seen, 416, {"Content-Range": f"bytes */{len(data)}"})
            return
        self._send_file(seen, data, start, send_body=send_body, misbehave=misbehave and send_body)

    def _range_start(self, behaviour: Behaviour) -> int | None:
        header = self.headers.get("Range")
        if behaviour.ignore_range or header is None:
            return None
        match = re.fullmatch(r"bytes=(\d+)-", header.strip())
        return int(match[1]) if match else None

    def _send_file(self, seen: Seen, data: bytes, start: int | None, *, send_body: bool, misbehave: bool) -> None:
        behaviour = self.server.behaviour
        total = behaviour.advertised_size if behaviour.advertised_size is not None else len(data)
        offset = start or 0
        seen.status = 206 if start is not None else 200
        self.send_response(seen.status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(total - offset))
        if start is not None:
            self.send_header("Content-Range", f"bytes {offset}-{total - 1}/{total}")
        self.end_headers()
        if send_body:
            self._send_body(seen, data[offset:], misbehave)

    def _send_body(self, seen: Seen, body: bytes, misbehave: bool) -> None:
        behaviour = self.server.behaviour
        drop_at = behaviour.drop_after if misbehave else None
        stall_at = behaviour.stall_after if misbehave else None
        try:
            for begin in range(0, len(body), _SEND_BLOCK):
                block = body[begin:begin + _SEND_BLOCK]
                if drop_at is not None and seen.body_sent + len(block) >= drop_at:
                    self._write(seen, block[:drop_at - seen.body_sent])
                    self._hang_up()
                    return
                if stall_at is not None and seen.body_sent >= stall_at:
                    stall_at = None
                    time.sleep(behaviour.stall_seconds)
                self._write(seen, block)
                time.sleep(behaviour.block_delay)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (cancel, early reject, timeout)

    def _write(self, seen: Seen, block: bytes) -> None:
        self.wfile.write(block)
        seen.body_sent += len(block)

    def _hang_up(self) -> None:
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _empty(self, seen: Seen, status: int, headers: dict[str, str]) -> None:
        seen.status = status
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _corrupted(payload: bytes) -> bytes:
    damaged = bytearray(payload)
    for index in range(1000, len(damaged), 100_000):
        damaged[index] ^= 0xFF
    return bytes(damaged)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: Behaviour):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = behaviour
        self.seen: list[Seen] = []
        self._gets = 0
        self._lock = threading.Lock()

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), which may ask DNS; these tests stay on loopback.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # hang-ups are part of the tests

    def record(self, handler: _Handler) -> tuple[Seen, int]:
        seen = Seen(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()})
        with self._lock:
            self.seen.append(seen)
            get_index = self._gets
            if handler.command == "GET":
                self._gets += 1
        return seen, get_index

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/file"

    @property
    def gets(self) -> list[Seen]:
        return [seen for seen in self.seen if seen.method == "GET"]


@pytest.fixture
def serve() -> Iterator[Callable[..., _Server]]:
    servers: list[_Server] = []

    def start(payload: bytes, **misbehaviour: object) -> _Server:
        server = _Server(Behaviour(payload, **misbehaviour))
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the environment would route 127.0.0.1 elsewhere; these tests stay on loopback.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def payload() -> bytes:
    return os.urandom(2 * 1024 * 1024 + 12345)  # deliberately not a multiple of any chunk size


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _part(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.calls.append((done, total))

    def assert_sane(self, size: int) -> None:
        dones = [done for done, _ in self.calls]
        assert dones == sorted(dones), "progress went backwards"
        assert self.calls[-1] == (size, size)
        assert len(self.calls) <= size // (64 * 1024) + 4, "progress is not throttled"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- tests


def test_plain_download_reports_progress_to_the_total(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "nested" / "model.onnx"
    progress = _Recorder()

    result = download_file(server.url, dest, size=len(payload), sha256=_sha(payload).upper(), progress=progress)

    assert result == dest
    assert dest.read_bytes() == payload
    assert not _part(dest).exists()
    progress.assert_sane(len(payload))
    assert any(0 < done < len(payload) for done, _ in progress.calls), "no progress while streaming"
    assert server.gets[0].headers["user-agent"] == f"gallery-app/{__version__}"
    assert "range" not in server.gets[0].headers


def test_resumes_after_the_connection_drops_mid_body(serve, payload, tmp_path):
    server = serve(payload, drop_after=700_000)
    dest = tmp_path / "model.bin"
    progress = _Recorder()

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload), progress=progress)

    assert dest.read_bytes() == payload
    first, second = server.gets
    assert "range" not in first.headers
    assert second.headers["range"] == "bytes=700000-"
    assert second.status == 206
    assert second.body_sent == len(payload) - 700_000
    progress.assert_sane(len(payload))


def test_resumes_a_part_left_by_an_earlier_run(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    _part(dest).write_bytes(payload[:1_000_000])
    progress = _Recorder()

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload), progress=progress)

    assert dest.read_bytes() == payload
    (only,) = server.gets
    assert only.headers["range"] == "bytes=1000000-"
    assert only.body_sent == len(payload) - 1_000_000
    assert progress.calls[0][0] == 1_000_000, "progress should start from the resumed bytes"
    progress.assert_sane(len(payload))


def test_server_ignoring_range_still_yields_the_right_file(serve, payload, tmp_path):
    server = serve(payload, ignore_range=True)
    dest = tmp_path / "model.bin"
    _part(dest).write_bytes(payload[:500_000])
    progress = _Recorder()

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload), progress=progress)

    assert dest.read_bytes() == payload
    assert server.gets[0].headers["range"] == "bytes=500000-"
    assert server.gets[0].status == 200
    progress.assert_sane(len(payload))


def test_corrupted_download_is_rejected_and_removed(serve, payload, tmp_path):
    server = serve(payload, corrupt=True)
    dest = tmp_path / "model.bin"

    with pytest.raises(ChecksumMismatch) as caught:
        download_file(server.url, dest, size=len(payload), sha256=_sha(payload))

    message = str(caught.value)
    assert "model.bin" in message and "corrupted" in message and "removed" in message
    assert "try" in message.lower()
    assert not dest.exists()
    assert not _part(dest).exists()
    assert len(server.gets) == 1, "a clean download that fails should not be repeated"


def test_stale_part_that_fails_verification_is_downloaded_again_once(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    _part(dest).write_bytes(b"\0" * len(payload))  # full length but wrong, e.g. an older file

    download_file(server.url, dest, size=None, sha256=_sha(payload))

    assert dest.read_bytes() == payload
    first, second = server.gets
    assert first.status == 416
    assert "range" not in second.headers and second.status == 200


def test_complete_part_is_verified_without_downloading_again(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    _part(dest).write_bytes(payload)

    download_file(server.url, dest, size=None, sha256=_sha(payload))

    assert dest.read_bytes() == payload
    assert [seen.status for seen in server.gets] == [416]
    assert server.gets[0].body_sent == 0


def test_wrong_advertised_size_is_rejected_before_downloading(serve, payload, tmp_path):
    server = serve(payload, block_delay=0.01)  # slow: a full download would take ~1.3 s
    dest = tmp_path / "model.bin"
    progress = _Recorder()
    started = time.monotonic()

    with pytest.raises(ChecksumMismatch) as caught:
        download_file(server.url, dest, size=len(payload) + 1, sha256=_sha(payload), progress=progress)

    assert time.monotonic() - started < 1.0
    assert "different size" in str(caught.value)
    assert progress.calls == []
    assert not dest.exists()
    assert not _part(dest).exists()


def test_server_lying_about_the_size_is_rejected(serve, payload, tmp_path):
    server = serve(payload, advertised_size=len(payload) * 2)
    dest = tmp_path / "model.bin"

    with pytest.raises(ChecksumMismatch):
        download_file(server.url, dest, size=len(payload), sha256=_sha(payload))

    assert not dest.exists() and not _part(dest).exists()


def test_not_found_names_the_url(serve, payload, tmp_path):
    server = serve(payload, status=404)
    dest = tmp_path / "model.bin"

    with pytest.raises(DownloadError) as caught:
        download_file(server.url, dest, size=len(payload), sha256=_sha(payload))

    assert not isinstance(caught.value, ChecksumMismatch)
    assert "not found" in str(caught.value)
    assert server.url in str(caught.value)
    assert len(server.gets) == 1
    assert not dest.exists()


def test_other_http_errors_mention_the_status(serve, payload, tmp_path):
    server = serve(payload, status=403)

    with pytest.raises(DownloadError, match="403"):
        download_file(server.url, tmp_path / "model.bin", size=None, sha256=None)


def test_a_passing_server_error_is_retried(serve, payload, tmp_path):
    server = serve(payload, first_status=503)
    dest = tmp_path / "model.bin"

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload))

    assert dest.read_bytes() == payload
    assert [seen.status for seen in server.gets] == [503, 200]


def test_connection_refused_says_to_check_the_connection(tmp_path):
    dest = tmp_path / "model.bin"
    started = time.monotonic()

    with pytest.raises(DownloadError) as caught:
        download_file(f"http://127.0.0.1:{_closed_port()}/model.bin", dest, size=10, sha256=None)

    message = str(caught.value)
    assert "could not reach the model server" in message.lower()
    assert "internet connection" in message
    assert "continue where it stopped" in message
    assert time.monotonic() - started < 1.0, "being offline should be reported at once"
    assert not dest.exists()


def test_cancel_keeps_the_part_and_a_later_call_resumes(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    checks = iter(range(1000))

    with pytest.raises(Cancelled) as caught:
        download_file(server.url, dest, size=len(payload), sha256=_sha(payload),
                      cancel=lambda: next(checks) >= 5)

    assert "cancelled" in str(caught.value)
    kept = _part(dest).stat().st_size
    assert 0 < kept < len(payload)
    assert not dest.exists()

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload), cancel=lambda: False)

    assert dest.read_bytes() == payload
    assert server.gets[-1].headers["range"] == f"bytes={kept}-"
    assert not _part(dest).exists()


def test_existing_verified_dest_makes_no_request(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    dest.write_bytes(payload)
    progress = _Recorder()

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload), progress=progress)

    assert server.seen == []
    assert progress.calls == [(len(payload), len(payload))]


def test_existing_wrong_dest_is_replaced(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    dest.write_bytes(b"old version")

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload))

    assert dest.read_bytes() == payload
    assert len(server.gets) == 1


def test_read_timeout_mid_body_is_retried_with_resume(serve, payload, tmp_path):
    server = serve(payload, stall_after=300_000, stall_seconds=1.0)
    dest = tmp_path / "model.bin"

    download_file(server.url, dest, size=len(payload), sha256=_sha(payload), timeout=0.3)

    assert dest.read_bytes() == payload
    assert len(server.gets) == 2
    assert server.gets[1].headers["range"].startswith("bytes=")
    assert int(server.gets[1].headers["range"][6:-1]) >= 300_000


def test_gives_up_after_max_attempts_and_keeps_the_part(serve, payload, tmp_path):
    server = serve(payload, drop_after=100_000, times=99)
    dest = tmp_path / "model.bin"

    with pytest.raises(DownloadError) as caught:
        download_file(server.url, dest, size=len(payload), sha256=_sha(payload), max_attempts=3)

    assert "interrupted" in str(caught.value)
    assert len(server.gets) == 3
    assert _part(dest).stat().st_size == 300_000
    assert not dest.exists()


def test_follows_redirects_with_a_given_client_and_leaves_it_open(serve, payload, tmp_path):
    server = serve(payload)
    dest = tmp_path / "model.bin"
    redirecting_url = server.url.replace("/file", "/redirect")

    with httpx.Client(trust_env=False) as client:
        download_file(redirecting_url, dest, size=len(payload), sha256=_sha(payload), client=client)
        assert not client.is_closed

    assert dest.read_bytes() == payload
    assert [seen.path for seen in server.seen] == ["/redirect", "/file"]
    assert all(seen.headers["user-agent"] == f"gallery-app/{__version__}" for seen in server.seen)


def test_full_disk_is_reported_with_the_folder(serve, payload, tmp_path, monkeypatch):
    server = serve(payload)
    dest = tmp_path / "models" / "model.bin"

    def disk_full(self, fh, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(download_module._Part, "add", disk_full)

    with pytest.raises(DownloadError) as caught:
        download_file(server.url, dest, size=len(payload), sha256=_sha(payload))

    message = str(caught.value)
    assert "disk is full" in message
    assert str(dest.parent) in message
    assert not dest.exists()


def test_sha256_of_matches_hashlib(tmp_path, payload):
    path = tmp_path / "blob"
    path.write_bytes(payload)

    assert sha256_of(path, chunk_size=4096) == _sha(payload)


class _EndlessChunks(BaseHTTPRequestHandler):
    """A body with no length that never ends (chunked), as a broken or hostile hub may send."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        block = b"\0" * _SEND_BLOCK
        try:
            while True:
                self.wfile.write(f"{len(block):x}\r\n".encode() + block + b"\r\n")
        except OSError:
            pass  # the client hung up: what it should do


def test_a_body_without_length_stops_at_the_expected_size_and_nothing_is_kept(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EndlessChunks)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        dest = tmp_path / "model.onnx"
        size = 10 * _SEND_BLOCK
        with pytest.raises(ChecksumMismatch, match="more than"):
            download_file(f"http://127.0.0.1:{server.server_address[1]}/model.onnx", dest, size=size,
                          sha256="0" * 64)
        assert not dest.exists() and not Path(f"{dest}.part").exists()
    finally:
        server.shutdown()
        server.server_close()
