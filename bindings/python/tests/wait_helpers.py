"""wait_for for the package tests (the scenarios have their own in scenarios/scenario_support.py)."""
import threading
import time


def wait_for(condition, timeout, what, interval=0.02):
    """The first truthy value of condition(); AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        pause.wait(interval)
