"""`ipuplan sweep --address`: the sweep joins a token-authenticated Ray head started outside ipuplan (`ray start
--head`), as on a cluster (`ray.init(address=...)` never starts an instance of its own, so the cases ran on that
head); a head that refuses the client, or an address nothing answers on, is bad input (exit 2), not a traceback;
without --address a running head is left alone."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODELS, ROOT


def _ray_cli() -> str:
    beside = Path(sys.executable).parent / "ray"
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        pytest.fail("the `ray` command (PyPI ray) is not installed beside this Python")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sweep(address: str | None, out: Path, batch: str, env: dict) -> subprocess.CompletedProcess:
    """`ipuplan sweep` on vit-small (small64) joining `address` (None: on a local instance of its own), in its own
    process with `env`."""
    join = ["--address", address] if address else []
    return subprocess.run([sys.executable, "-m", "ipuplan.cli", "sweep", str(MODELS / "vit-small.yaml"), "--target",
                           str(ROOT / "targets" / "small64.yaml"), "--batch", batch, *join, "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def head():
    ray, port = _ray_cli(), _free_port()
    # the head and its clients share one token, as on a token-authenticated cluster
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    subprocess.run([ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    "--disable-usage-stats"], check=True, capture_output=True, env=env, cwd=ROOT)
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, env=env)


def test_sweep_joins_an_existing_head(head, tmp_path):
    (address, env), out = head, tmp_path / "grid"
    p = _sweep(address, out, "1,2", env)
    assert p.returncode == 0, p.stdout + p.stderr
    cases = json.loads((out / "sweep.json").read_text())["cases"]
    assert [(c["batch"], c["status"], c["verdict"], c["checked"]) for c in cases] == \
        [(1, "done", "FIT", True), (2, "done", "FIT", True)]


def test_without_address_a_running_head_is_left_alone(head, tmp_path):
    """A head that `ray start` left on this machine is what Ray joins when no address is given, and it refuses a
    client that names its CPU count (a traceback before); unasked, the sweep starts an instance of its own."""
    out = tmp_path / "grid"
    p = _sweep(None, out, "1", dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stdout + p.stderr
    cases = json.loads((out / "sweep.json").read_text())["cases"]
    assert [(c["status"], c["verdict"], c["checked"]) for c in cases] == [("done", "FIT", True)]


def test_a_head_that_refuses_the_client_is_bad_input(head, tmp_path):
    address, env = head
    # Ray retries a refused connection about once a second for 20 tries; two show the refusal as well
    refused = dict(env, RAY_AUTH_MODE="disabled", RAY_gcs_server_port_wait_time_s="2")
    p = _sweep(address, tmp_path / "grid", "1", refused)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stdout + p.stderr
    assert f"--address: {address!r}: Failed to connect to Ray cluster" in p.stdout + p.stderr
    assert "RAY_AUTH_TOKEN" in p.stdout + p.stderr


def test_an_address_without_a_head_is_bad_input(tmp_path):
    port = _free_port()
    p = _sweep(f"127.0.0.1:{port}", tmp_path / "grid", "1", dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"--address: '127.0.0.1:{port}': nothing answers there" in p.stdout + p.stderr
