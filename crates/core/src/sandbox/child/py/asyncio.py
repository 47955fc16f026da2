"""Cairn's `asyncio` inside the sandbox. A script's `async` and `await` keywords are removed
before it runs (externals are synchronous calls), so a coroutine function runs to its end when
it is called and an awaited value is the value itself. This module gives the usual entry points
that meaning: `run(x)`, `gather(*xs)`, `create_task(x)` and `wait_for(x, t)` return what they
are given (already computed), `sleep` sleeps, and the primitives work as context managers.
CPython's shim (sandbox/cpython_shim.py) runs the same module for the script, with `_ready`
running a library's real awaitable to its end."""

import time as _time
import queue as _queue


class CancelledError(BaseException):
    pass


TimeoutError = TimeoutError


class InvalidStateError(Exception):
    pass


def _ready(aw):
    """What awaiting `aw` gives: here `aw` itself, already computed."""
    return aw


def run(main, *, debug=None, loop_factory=None):
    return _ready(main)


def gather(*aws, return_exceptions=False):
    out = []
    for aw in aws:
        try:
            out.append(_ready(aw))
        except Exception as e:
            if not return_exceptions:
                raise
            out.append(e)
    return out


def create_task(coro, *, name=None, context=None):
    return _ready(coro)


ensure_future = create_task


def wait_for(aw, timeout):
    return _ready(aw)


def shield(aw):
    return _ready(aw)


def sleep(delay, result=None):
    if delay and delay > 0:
        _time.sleep(delay)
    return result


def as_completed(aws, *, timeout=None):
    return iter([_ready(aw) for aw in aws])


def wait(aws, *, timeout=None, return_when="ALL_COMPLETED"):
    return {_ready(aw) for aw in aws}, set()


def iscoroutine(obj):
    return False


def iscoroutinefunction(func):
    return False


def to_thread(func, *args, **kwargs):
    return func(*args, **kwargs)


class _Loop:
    def run_until_complete(self, aw):
        return _ready(aw)

    def run_in_executor(self, executor, func, *args):
        return func(*args)

    def create_task(self, coro):
        return _ready(coro)

    def close(self):
        pass

    def is_running(self):
        return False


_loop = _Loop()


def get_event_loop():
    return _loop


get_running_loop = new_event_loop = get_event_loop


def set_event_loop(loop):
    pass


class Lock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def acquire(self):
        return True

    def release(self):
        pass

    def locked(self):
        return False


class Semaphore(Lock):
    def __init__(self, value=1):
        self._value = value


BoundedSemaphore = Semaphore


class Event:
    def __init__(self):
        self._set = False

    def set(self):
        self._set = True

    def clear(self):
        self._set = False

    def is_set(self):
        return self._set

    def wait(self):
        return True


class Queue(_queue.Queue):
    def put_nowait(self, item):
        self.put(item)

    def get_nowait(self):
        return self.get(block=False)


class TaskGroup:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def create_task(self, coro, *, name=None, context=None):
        return _ready(coro)


def timeout(delay):
    return Lock()
