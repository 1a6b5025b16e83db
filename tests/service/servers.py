"""``template-engine serve`` as a real process on a free loopback port, for the tests that need one: started
until ``/health`` answers, stopped with SIGTERM (its output kept for the test to read)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from conftest import ADMIN, bearer

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
        return httpx.Client(base_url=self.url, headers=bearer(token), timeout=30)


@contextmanager
def serve(database_url: str, auth_file: Path | None, *extra: str) -> Iterator[Server]:
    """The service on ``database_url`` with the tokens of ``auth_file`` (``--dev`` without one)."""
    port = free_port()
    auth = ["--auth-file", str(auth_file)] if auth_file is not None else ["--dev"]
    command = [str(EXE), "serve", "--port", str(port), "--database-url", database_url, *auth, *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = Server(process, f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()[0]
            try:
                if httpx.get(f"{server.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not answer /health"
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            server.output = process.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            process.kill()
            server.output = process.communicate()[0]
