"""A loopback HTTP server for the download tests: every request logged, `files_app` serving files with
chosen replies."""

import contextlib
import dataclasses
import http.server
import re
import threading
import time


MAX_REQUESTS = 300
MAX_SECONDS = 120


@dataclasses.dataclass
class Reply:
    """What the server answers: `cut` closes the connection after half the body; `throttle` sleeps per 16 KiB
    chunk; `stall` sleeps before answering; `stall_body` sleeps after the headers, before the body."""

    status: int = 200
    body: bytes = b""
    headers: dict = dataclasses.field(default_factory=dict)
    cut: bool = False
    throttle: float = 0.0
    stall: float = 0.0
    stall_body: float = 0.0


class Server:
    """A threaded HTTP server on 127.0.0.1 that answers with `app(method, path, headers, body) -> Reply`, logs
    every request (header names in lower case), refuses more than `MAX_REQUESTS` and shuts itself down after `MAX_SECONDS`."""

    def __init__(self, app):
        self.app, self.log, self._lock, self._connections = app, [], threading.Lock(), []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                del args

            def setup(self):
                super().setup()
                with outer._lock:
                    outer._connections.append(self.connection)

            def _serve(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with outer._lock:
                    outer.log.append((method, self.path, {k.lower(): v for k, v in self.headers.items()}))
                    over = len(outer.log) > MAX_REQUESTS
                reply = Reply(503, b"too many requests") if over else outer.app(method, self.path, self.headers, body)
                if reply.stall:
                    time.sleep(reply.stall)
                data, status, extra = reply.body, reply.status, dict(reply.headers)
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
                if match and status == 200 and method == "GET":
                    start = int(match.group(1))
                    extra["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                    data, status = data[start:], 206
                self.send_response(status)
                for key, value in extra.items():
                    self.send_header(key, value)
                if "Content-Length" not in extra:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if method == "HEAD":
                    return
                if reply.stall_body:
                    self.wfile.flush()
                    time.sleep(reply.stall_body)
                payload = data[:len(data) // 2] if reply.cut else data
                for i in range(0, len(payload), 16384):
                    self.wfile.write(payload[i:i + 16384])
                    if reply.throttle:
                        self.wfile.flush()
                        time.sleep(reply.throttle)
                if reply.cut:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)

            def do_GET(self):
                self._serve("GET")

            def do_HEAD(self):
                self._serve("HEAD")

            def do_POST(self):
                self._serve("POST")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(MAX_SECONDS, self.stop)
        self._thread.start()
        self._timer.start()

    def stop(self):
        """Stops listening and closes the kept-alive connections too: afterwards nothing answers."""
        self._timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(2)

    def requests(self, method=None, path=None):
        with self._lock:
            return [(m, p, h) for m, p, h in self.log if (method is None or m == method)
                    and (path is None or p.endswith(path))]


@contextlib.contextmanager
def serving(app):
    server = Server(app)
    try:
        yield server
    finally:
        server.stop()


def files_app(files, **replies):
    """An app serving `files` ({path: bytes}) on GET and HEAD; `replies` override a path's `Reply` fields."""
    counts = {}

    def app(method, path, headers, body):
        del headers, body
        if path not in files:
            return Reply(404, b"Not Found")
        counts[(method, path)] = counts.get((method, path), 0) + 1
        override = dict(replies.get(path, {}))
        if override.pop("cut_first", False) and method == "GET" and counts[(method, path)] == 1:
            override["cut"] = True
        return Reply(200, files[path], {"Accept-Ranges": "bytes"}, **override)

    return app
