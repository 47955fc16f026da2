"""Cairn's `signal`: the names libraries look up (unittest's Ctrl-C handling). No signal is
ever delivered to a script in the sandbox: a handler is recorded and never called."""

SIG_DFL = 0
SIG_IGN = 1
SIGINT = 2
SIGTERM = 15
SIGALRM = 14
SIGHUP = 1
NSIG = 65

_handlers = {}


def default_int_handler(signum, frame):
    raise KeyboardInterrupt


def getsignal(signalnum):
    return _handlers.get(signalnum, default_int_handler if signalnum == SIGINT else SIG_DFL)


def signal(signalnum, handler):
    previous = getsignal(signalnum)
    _handlers[signalnum] = handler
    return previous


def alarm(seconds):
    return 0


def valid_signals():
    return set(range(1, NSIG))
