"""Ctrl-C stops the test run on the first press, even when a test swallows it.

Python turns SIGINT into ``KeyboardInterrupt``, which pytest turns into the end of the run.
Code under test can catch it first: the command line's error boundary
(:func:`sparsedp.cli.main.main`, called in-process by many tests) prints
``sparsedp: interrupted`` and returns status 130, and the test then merely fails, so the run
went on and only a second Ctrl-C stopped it.  This plugin records every SIGINT before Python
raises the ``KeyboardInterrupt``, and ends the run after the test in which one arrived, whoever
caught it.  ``tests/conftest.py`` imports its hooks; ``tests/test_tiers.py`` runs it against a
test that swallows the interrupt.
"""

from __future__ import annotations

import signal
import threading

import pytest

_interrupted = False


def pytest_configure(config: pytest.Config) -> None:
    """Wrap Python's own SIGINT handler (only that one: a handler someone else installed, or
    an ignored SIGINT, is left as it is)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def remember_then_interrupt(signum, frame):
        global _interrupted
        _interrupted = True
        signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt

    signal.signal(signal.SIGINT, remember_then_interrupt)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """After each test (its teardown included): a Ctrl-C seen so far ends the run, with
    pytest's status for an interrupted run (2)."""
    outcome = yield
    if _interrupted:
        item.session.shouldstop = "interrupted (Ctrl-C)"
    return outcome
