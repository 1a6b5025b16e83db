"""``template-engine serve`` as a real process on a free loopback port, for the tests that need one: started
until ``/health`` answers, stopped with SIGTERM (its output kept for the test to read)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from conftest import ADMIN, bearer
from waiting import LIVE_TIMEOUT, READY_WITHIN, wait_until

EXE = Path(sys.executable).with_name("template-engine")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url
        self.output = ""

    def client(self, token: str = ADMIN) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=bearer(token), timeout=LIVE_TIMEOUT)


def _healthy(server: Server) -> bool:
    """Whether the server answers ``/health`` (a refused or slow connection is "not yet"); fails when the
    process has ended."""
    assert server.process.poll() is None, server.process.communicate()[0]
    try:
        return httpx.get(f"{server.url}/health", timeout=LIVE_TIMEOUT).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def serve(database_url: str, auth_file: Path | None, *extra: str) -> Iterator[Server]:
    """The service on ``database_url`` with the tokens of ``auth_file`` (``--dev`` without one)."""
    port = free_port()
    auth = ["--auth-file", str(auth_file)] if auth_file is not None else ["--dev"]
    command = [str(EXE), "serve", "--port", str(port), "--database-url", database_url, *auth, *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = Server(process, f"http://127.0.0.1:{port}")
    try:
        wait_until(lambda: _healthy(server), "the server did not answer /health")
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            server.output = process.communicate(timeout=READY_WITHIN)[0]
        except subprocess.TimeoutExpired:
            process.kill()
            server.output = process.communicate()[0]
