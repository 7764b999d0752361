"""A local HTTP file server for storage tests: serves files from a dict with an ETag, counts the GETs
of each path, and can truncate a response or hold it back; takes files by PUT as a WebDAV server
does (stdlib ThreadingHTTPServer in a thread)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Served:
    body: bytes
    truncated: bool = False  # announce more bytes than are sent, then close the connection
    delay: float = 0.0  # seconds between the headers and the body of a GET
    etag: bool = True  # without one, a Last-Modified header


@dataclass
class FileServer:
    url: str
    files: dict[str, Served] = field(default_factory=dict)
    gets: Counter[str] = field(default_factory=Counter)
    refuse: bool = False  # answer every request 403, as a store does to unknown credentials
    failing: int = 0  # a status (5xx) to answer every request with, as a store that is down does
    #: Each PUT taken: its path, its query string and the length it announced (None: chunked).
    puts: list[tuple[str, str, int | None]] = field(default_factory=list)

    def put(
        self, path: str, body: bytes, truncated: bool = False, delay: float = 0.0, etag: bool = True
    ) -> str:
        """Serve ``body`` at ``path``; its URL."""
        self.files[path] = Served(body, truncated, delay, etag)
        return f"{self.url}{path}"


def _handler(server: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def do_GET(self) -> None:
            server.gets[self.path] += 1
            self._answer(with_body=True)

        def do_PUT(self) -> None:
            length = self.headers.get("Content-Length")
            body = self.rfile.read(int(length)) if length is not None else b""
            if server.refuse or server.failing:
                self.send_error(server.failing or 403)
                return
            path, _, query = self.path.partition("?")
            server.puts.append((path, query, None if length is None else int(length)))
            server.files[path] = Served(body)
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _answer(self, with_body: bool) -> None:
            served = server.files.get(self.path)
            if server.refuse or server.failing:
                self.send_error(server.failing or 403)
                return
            if served is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(served.body) + (100 if served.truncated else 0)))
            if served.etag:
                self.send_header("ETag", f'"{hashlib.md5(served.body).hexdigest()}"')
            else:
                self.send_header("Last-Modified", "Wed, 25 Nov 2026 10:00:00 GMT")
            self.end_headers()
            if with_body:
                time.sleep(served.delay)
                self.wfile.write(served.body)
                self.close_connection = served.truncated

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def file_server() -> Iterator[FileServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state := FileServer("")))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
