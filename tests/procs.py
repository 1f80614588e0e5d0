"""Stopping the helper processes tests start (servers, writers): terminate, then kill."""

import subprocess


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """End ``proc`` if it still runs: SIGTERM, wait ``timeout`` s, then SIGKILL and reap it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
