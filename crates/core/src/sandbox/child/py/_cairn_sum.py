"""`sum()` and `round()` as CPython computes them. `sum()` (3.12+): ints exactly until the first float, then floats (and
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


def round(number, ndigits=None):
    """`round()` as CPython: a float rounded to `ndigits` is the exact binary value rounded
    half to even (2.675 is 2.67499999..., so 2.67), not a scaled multiplication."""
    if type(number) is not float or ndigits is None:
        return _round(number) if ndigits is None else _round(number, ndigits)
    n = _index(ndigits)
    if number != number or number in (float("inf"), float("-inf")) or number == 0.0:
        return number
    if n > 323:
        return number
    if n < -308:
        return 0.0 * number
    if n >= 0:
        return float(format(number, ".%df" % n))
    p, q = number.as_integer_ratio()
    scale = 10 ** -n
    k, r = divmod(p, q * scale)
    twice = 2 * r
    if twice > q * scale or (twice == q * scale and k % 2 == 1):
        k += 1
    return float(k * scale) if k else 0.0 * number


def chr(i, /):
    """`chr()` as CPython: an int beyond a C int is an OverflowError, not a ValueError."""
    if type(i) is int and not -2 ** 31 <= i < 2 ** 31:
        raise OverflowError("Python int too large to convert to C int")
    return _chr(i)
