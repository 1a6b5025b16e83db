"""A request the server cannot read is answered, not left waiting: ``template-engine lsp`` as a process,
spoken to in raw JSON-RPC over its stdin and stdout (a client's own checks would refuse to send these)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
#: A bound on each answer: only a server that never answers reaches it.
PATIENCE = 120.0


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdin.flush()


def _read(stdout: IO[bytes], answers: Queue[dict[str, Any]]) -> None:
    while True:
        length = 0
        while (line := stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not line:
            return
        answers.put(json.loads(stdout.read(length)))


def _answer_to(answers: Queue[dict[str, Any]], request_id: int) -> dict[str, Any]:
    while True:
        try:
            message = answers.get(timeout=PATIENCE)
        except Empty:
            raise AssertionError(f"no answer to request {request_id}") from None
        if message.get("id") == request_id and "method" not in message:
            return message


def test_a_request_with_a_negative_line_is_answered_with_invalid_params(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "template_engine", "lsp", "--root", str(REPO / "templates")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    answers: Queue[dict[str, Any]] = Queue()
    reader = threading.Thread(target=_read, args=(server.stdout, answers), daemon=True)
    reader.start()
    try:
        _send(server.stdin, {"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        assert "result" in _answer_to(answers, 1)
        _send(server.stdin, {"method": "initialized", "params": {}})
        uri = (REPO / "templates" / "system" / "defaults.yaml").as_uri()
        position = {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}
        _send(server.stdin, {"id": 2, "method": "textDocument/definition", "params": position})
        refused = _answer_to(answers, 2)
        assert refused["error"]["code"] == -32602  # JSON-RPC's InvalidParams
        # and the server goes on answering
        position["position"] = {"line": 0, "character": 0}
        _send(server.stdin, {"id": 3, "method": "textDocument/hover", "params": position})
        assert "error" not in _answer_to(answers, 3)
        _send(server.stdin, {"id": 4, "method": "shutdown"})
        _answer_to(answers, 4)
        _send(server.stdin, {"method": "exit"})
        server.wait(timeout=PATIENCE)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        reader.join(timeout=PATIENCE)  # the server's end closed: the reader reads to the end and stops
        server.stdin.close()
        server.stdout.close()
