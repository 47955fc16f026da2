"""Cairn's `atexit` inside the sandbox: a script ends with its run, so nothing registered here
runs; the functions exist for library code (logging) that registers at import."""


def register(func, *args, **kwargs):
    return func


def unregister(func):
    pass


def _clear():
    pass


def _run_exitfuncs():
    pass


def _ncallbacks():
    return 0
