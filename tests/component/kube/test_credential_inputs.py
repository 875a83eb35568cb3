"""Credential inputs bounded like every other input (fleetsched/kube/auth.py), with real processes:
a real exec credential plugin (a Python script run by ``run_exec_plugin``), a real FIFO and
``/dev/zero`` as token files, and the real ``fleetsched scheduler`` command as a subprocess.

* a plugin printing past ``EXEC_STDOUT_LIMIT`` is killed and the credential fails, one line;
* a plugin's standard error reaches the message cut to ``EXEC_STDERR_SHOWN`` characters;
* a plugin that does not exit (and what it started) is killed and reaped after the timeout;
* a token file that is a FIFO or a device is refused at start-up (exit 2, one line) and, swapped in
  mid-run, leaves the last token read in use, with the event loop serving meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from fleetsched.kube import auth
from fleetsched.kube.auth import Connection, Credentials, CredentialsError, ExecConfig, run_exec_plugin

REPO = Path(__file__).resolve().parents[3]
API = auth.EXEC_API_VERSIONS[0]


def plugin(tmp_path: Path, body: str) -> ExecConfig:
    script = tmp_path / "plugin.py"
    script.write_text("import json, os, subprocess, sys, time\n" + body)
    return ExecConfig(command=sys.executable, args=(str(script), str(tmp_path)), api_version=API)


def gone(pid: int) -> bool:
    """The process has exited and been reaped (or is a zombie awaiting a reaper that is not us)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def credential(token: str) -> str:
    return json.dumps({"apiVersion": API, "kind": "ExecCredential", "status": {"token": token}})


async def test_a_plugin_answering_in_bounds_gives_its_status(tmp_path: Path) -> None:
    config = plugin(tmp_path, f"print({credential('fine')!r}); print('chatter', file=sys.stderr)")
    assert await run_exec_plugin(config, interactive=False) == {"token": "fine"}


async def test_a_plugin_printing_100_mb_is_killed_once_past_the_limit(tmp_path: Path) -> None:
    config = plugin(tmp_path, (
        "open(os.path.join(sys.argv[1], 'pid'), 'w').write(str(os.getpid()))\n"
        "chunk = b'x' * (1 << 20)\n"
        "for _ in range(100):\n    sys.stdout.buffer.write(chunk)\n"
    ))
    with pytest.raises(CredentialsError) as caught:
        # Bounded: a killed plugin whose paused stdout pipe was never read to its end used to hang
        # here for ever (Process.wait() waits for the pipes too), and with it a CI run.
        await asyncio.wait_for(run_exec_plugin(config, interactive=False), 30)
    limit = auth.EXEC_STDOUT_LIMIT
    assert str(caught.value) == f"printed more than {limit} bytes on standard output (killed)"
    assert gone(int((tmp_path / "pid").read_text()))


async def test_a_failing_plugins_10_mb_of_stderr_is_cut_in_its_message(tmp_path: Path) -> None:
    config = plugin(tmp_path, (
        "for _ in range(10):\n    sys.stderr.write('e' * (1 << 20))\n"
        "sys.exit(1)\n"
    ))
    credentials = Credentials(Connection(server="http://127.0.0.1:1", exec_plugin=config))
    with pytest.raises(CredentialsError) as caught:
        await credentials.authorization()
    message = str(caught.value)
    assert message.startswith(f"exec plugin {sys.executable!r}: exec: process returned 1. eee")
    assert message.endswith("e... (more not shown)")
    assert len(message) < auth.EXEC_STDERR_SHOWN + 200
    assert "\n" not in message


async def test_a_plugin_whose_escaped_child_holds_its_output_still_fails_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grandchild leaves the plugin's session (so killing the group misses it) and keeps the stdout
    # pipe open: the request fails after EXEC_REAP_GRACE instead of waiting on the pipe.
    monkeypatch.setattr(auth, "EXEC_REAP_GRACE", 0.5)
    config = plugin(tmp_path, (
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],"
        " start_new_session=True)\n"
        "open(os.path.join(sys.argv[1], 'child'), 'w').write(str(child.pid))\n"
        "sys.stdout.buffer.write(b'x' * (4 << 20))\n"
    ))
    started = time.monotonic()
    try:
        with pytest.raises(CredentialsError, match="printed more than"):
            await asyncio.wait_for(run_exec_plugin(config, interactive=False), 20)
        assert time.monotonic() - started < 15
    finally:
        os.kill(int((tmp_path / "child").read_text()), 9)


async def test_a_plugin_that_never_exits_is_killed_with_what_it_started_and_reaped(tmp_path: Path) -> None:
    config = plugin(tmp_path, (
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "open(os.path.join(sys.argv[1], 'pids'), 'w').write(f'{os.getpid()} {child.pid}')\n"
        "time.sleep(600)\n"
    ))
    with pytest.raises(CredentialsError) as caught:
        await run_exec_plugin(config, timeout=2.0, interactive=False)
    assert str(caught.value) == "no answer in 2 s (killed)"
    pid, child = map(int, (tmp_path / "pids").read_text().split())
    assert gone(pid)  # killed and reaped by us: no process, not even a zombie
    assert not Path(f"/proc/{pid}").exists()
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert gone(child)  # the process group went with it


async def test_a_plugin_cancelled_with_its_request_is_killed_and_reaped(tmp_path: Path) -> None:
    config = plugin(tmp_path, "open(os.path.join(sys.argv[1], 'pid'), 'w').write(str(os.getpid()))\n"
                              "time.sleep(600)\n")
    task = asyncio.ensure_future(run_exec_plugin(config, interactive=False))
    while not (tmp_path / "pid").exists():
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not Path(f"/proc/{int((tmp_path / 'pid').read_text())}").exists()


def kubeconfig(tmp_path: Path, token_file: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        f"users: [{{name: u, user: {{tokenFile: '{token_file}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return path


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_token_file_that_is_a_fifo_or_a_device_stops_start_up_with_one_line(
    tmp_path: Path, kind: str
) -> None:
    token = tmp_path / "token"
    if kind == "fifo":
        os.mkfifo(token)  # no writer: opening it to read would block for ever
    else:
        token.symlink_to(kind)  # read to the end, it never ends
    config = kubeconfig(tmp_path, str(token))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    done = subprocess.run([sys.executable, "-m", "fleetsched", "scheduler", "--kubeconfig", str(config)],
                          cwd=REPO, env={**env, "HOME": str(tmp_path)}, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    error = json.loads(lines[0])["error"]
    assert error == f"--kubeconfig {config}: users[u].tokenFile {token}: not a regular file", lines


def test_a_token_file_too_large_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_bytes(b"t" * (auth.TOKEN_FILE_LIMIT + 1))
    with pytest.raises(auth.KubeconfigError) as caught:
        auth.load_connection(str(kubeconfig(tmp_path, str(token))), environ={}, home=str(tmp_path))
    assert str(caught.value).endswith(
        f"users[u].tokenFile {token}: holds {auth.TOKEN_FILE_LIMIT + 1} bytes, more than the "
        f"{auth.TOKEN_FILE_LIMIT} allowed"
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
async def test_a_token_file_swapped_for_a_fifo_or_a_device_mid_run_keeps_the_last_token(
    tmp_path: Path, kind: str
) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    clock = Clock()
    credentials = Credentials(Connection(server="http://127.0.0.1:1", token_file=str(token)), clock=clock)
    assert await credentials.authorization() == "Bearer first"
    token.unlink()
    if kind == "fifo":
        os.mkfifo(token)
    else:
        token.symlink_to(kind)
    clock.now += auth.TOKEN_FILE_PERIOD
    ticks = 0

    async def tick() -> None:  # the loop's other work (health, the Lease) goes on meanwhile
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.ensure_future(tick())
    try:
        with capture_logs() as logs:
            assert await credentials.authorization() == "Bearer first"
            assert await credentials.renew(401, "Bearer first") is False
    finally:
        ticker.cancel()
    assert ticks > 0
    warnings = [e for e in logs if e["event"] == "token_file_unreadable"]
    assert warnings and warnings[0]["error"] == f"token file {token}: not a regular file"
    token.unlink()
    token.write_text("second")  # a regular file again: read at the next period
    clock.now += auth.TOKEN_FILE_PERIOD
    assert await credentials.authorization() == "Bearer second"
