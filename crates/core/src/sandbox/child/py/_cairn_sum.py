"""`sum()` as CPython 3.12+ computes it: ints exactly until the first float, then floats (and
ints that fit a C long) with Neumaier's compensated summation; anything else as plain `+`.
Sequences without floats take the interpreter's own `sum` (`_sum`, bound by the child)."""

_LONG = 2 ** 63


def _finite(x):
    return x == x and x not in (float("inf"), float("-inf"))


def sum(iterable, /, start=0):
    if type(start) not in (int, float, bool):
        return _sum(iterable, start)
    items = iterable if type(iterable) in (list, tuple) else list(iterable)
    if type(start) is not float and float not in set(map(type, items)):
        return _sum(items, start)
    i, n, result = 0, len(items), start
    if type(result) is not float:
        while i < n and type(items[i]) in (int, bool):
            result = result + items[i]
            i += 1
        if i == n or type(items[i]) is not float:
            return _sum(items[i:], result)
        result = float(result)
    f, c = result, 0.0
    while i < n:
        x = items[i]
        if type(x) is float:
            pass
        elif type(x) in (int, bool) and -_LONG <= x < _LONG:
            x = float(x)
        else:
            break
        t = f + x
        if abs(f) >= abs(x):
            c += (f - t) + x
        else:
            c += (x - t) + f
        f = t
        i += 1
    if c and _finite(c):
        f += c
    return f if i == n else _sum(items[i:], f)
