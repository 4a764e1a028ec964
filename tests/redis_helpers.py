"""Redis for the tests: the server at 127.0.0.1:6379, or one a test starts itself.

Every test works under its own key prefix and deletes its keys afterwards, so tests
never see each other's data (nor anyone else's on the shared server).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

SHARED_URL = "redis://127.0.0.1:6379/0"


def shared_client() -> redis.Redis:
    """A client of the shared server; the calling test is skipped if it does not answer."""
    client = redis.Redis.from_url(SHARED_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("no redis-server at 127.0.0.1:6379")
    return client


def unique_prefix(name: str = "t") -> str:
    return f"fresh-test:{name}:{uuid.uuid4().hex[:12]}"


def delete_prefix(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(match=prefix + ":*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start : start + 500])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class OwnServer:
    """A redis-server of one test, in ``directory``, on a free port."""

    def __init__(self, directory: Path, *args: str) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.skip("redis-server is not installed")
        self.exe = exe
        self.directory = directory
        self.port = free_port()
        self.args = list(args)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, **client_kwargs: Any) -> None:
        self.process = subprocess.Popen(
            [self.exe, "--bind", "127.0.0.1", "--port", str(self.port), "--dir",
             str(self.directory), "--save", "", *self.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:  # noqa: PERF203  # not listening yet
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None
