"""A fault-injecting HTTP proxy on 127.0.0.1, in front of the GCS emulator.

The client under test (STORAGE_EMULATOR_HOST pointed here) talks HTTP/1.1 to the
proxy; each request is forwarded to the emulator, except that the requests the plan
picks fail in one of these ways:

- `reset_before`: the connection is reset (RST) before the request reaches the store;
- `reset_after`:  the store did the work, then the connection is reset before the
                  answer (the client cannot know it succeeded: retries must be harmless);
- `503`:          the store answers 503 Service Unavailable;
- `slow`:         the answer comes after a pause, then its body in small pieces;
- `cut`:          the answer's headers promise the whole body, half of it comes, then
                  the connection closes (a truncated read).

`plan(method, path, index)` returns the fault for the index-th request (from 0) or
None; `Proxy.faults` counts what was injected, so a test can tell that it happened.
"""
from __future__ import annotations

import collections
import http.client
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional

FAULTS = ("reset_before", "reset_after", "503", "slow", "cut")
Plan = Callable[[str, str, int], Optional[str]]


class Proxy:
    def __init__(self, upstream_port: int, plan: Plan, slow_s: float = 1.5):
        self.upstream_port, self.plan, self.slow_s = upstream_port, plan, slow_s
        self.faults: collections.Counter = collections.Counter()
        self.requests = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                with proxy._lock:
                    index = proxy.requests
                    proxy.requests += 1
                fault = proxy.plan(self.command, self.path, index)
                if fault:
                    with proxy._lock:
                        proxy.faults[fault] += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if fault == "reset_before":
                    return self._reset()
                if fault == "503":
                    payload = (b'{"error": {"code": 503, "message": "injected: service '
                               b'unavailable"}}')
                    self.send_response(503)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port,
                                                      timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length")}
                upstream.request(self.command, self.path, body=body if length else None,
                                 headers=headers)
                response = upstream.getresponse()
                data = response.read()
                upstream.close()
                if fault == "reset_after":
                    return self._reset()
                self.send_response(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection",
                                           "content-length", "date", "server"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                if fault == "slow":
                    time.sleep(proxy.slow_s)
                self.end_headers()
                if fault == "cut" and len(data) > 1:
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return self._reset()
                if fault == "slow":
                    for start in range(0, len(data), 512):
                        self.wfile.write(data[start:start + 512])
                        self.wfile.flush()
                        time.sleep(0.002)
                else:
                    self.wfile.write(data)

            def _reset(self):
                self.close_connection = True
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def every(fault: str, period: int, limit: int, methods=None, contains: str = "") -> Plan:
    """`fault` on every `period`-th request (of those `methods` whose path holds
    `contains`), at most `limit` times."""
    state = {"seen": 0, "done": 0}
    lock = threading.Lock()

    def plan(method: str, path: str, index: int):
        if methods is not None and method not in methods:
            return None
        if contains and contains not in path:
            return None
        with lock:
            state["seen"] += 1
            if state["done"] < limit and state["seen"] % period == 0:
                state["done"] += 1
                return fault
        return None
    return plan


def always(fault: str) -> Plan:
    return lambda method, path, index: fault
