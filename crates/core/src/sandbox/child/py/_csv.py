"""Cairn's `_csv`: the CSV parser and writer behind `csv`, in Python, as CPython 3.13's C
module behaves (every quoting mode, escapechar, doublequote, strict, skipinitialspace,
field_size_limit, dialect validation and its messages). RustPython's native `_csv` quotes
every field under QUOTE_MINIMAL, ignores escapechar under QUOTE_NONE and has no
QUOTE_STRINGS/QUOTE_NOTNULL; this one replaces it."""

__version__ = "1.0"

QUOTE_MINIMAL, QUOTE_ALL, QUOTE_NONNUMERIC, QUOTE_NONE, QUOTE_STRINGS, QUOTE_NOTNULL = range(6)
_QUOTINGS = range(6)

__all__ = [
    "QUOTE_MINIMAL", "QUOTE_ALL", "QUOTE_NONNUMERIC", "QUOTE_NONE", "QUOTE_STRINGS", "QUOTE_NOTNULL",
    "Error", "Dialect", "__doc__", "excel", "excel_tab", "field_size_limit", "reader", "writer",
    "register_dialect", "get_dialect", "list_dialects", "unregister_dialect", "__version__",
]


class Error(Exception):
    pass


Error.__module__ = "_csv"

_dialects = {}
_limit = 128 * 1024


def _char(name, value, allow_none):
    if value is None:
        if allow_none:
            return None
        raise TypeError('"%s" must be a unicode character, not NoneType' % name)
    if not isinstance(value, str):
        extra = " or None" if allow_none else ""
        raise TypeError('"%s" must be a unicode character%s, not %s' % (name, extra, type(value).__name__))
    if len(value) != 1:
        extra = " or None" if allow_none else ""
        raise TypeError('"%s" must be a unicode character%s, not a string of length %d' % (name, extra, len(value)))
    return value


_ATTRS = ("delimiter", "doublequote", "escapechar", "lineterminator", "quotechar", "quoting", "skipinitialspace", "strict")


class Dialect:
    """CSV dialect

The Dialect type records CSV parsing and generation options.
"""

    __slots__ = ("_delimiter", "_doublequote", "_escapechar", "_lineterminator", "_quotechar", "_quoting", "_skipinitialspace", "_strict")

    def __new__(cls, dialect=None, **kwargs):
        for k in kwargs:
            if k not in _ATTRS:
                raise TypeError("'%s' is an invalid keyword argument for Dialect()" % k)
        if isinstance(dialect, str):
            dialect = get_dialect(dialect)
        if type(dialect) is Dialect and not kwargs and cls is Dialect:
            return dialect
        self = object.__new__(cls)
        values = {}
        for name in _ATTRS:
            if name in kwargs:
                values[name] = kwargs[name]
            elif dialect is not None and hasattr(dialect, name):
                values[name] = getattr(dialect, name)
        get = values.get
        delimiter = _char("delimiter", get("delimiter", ","), False)
        escapechar = _char("escapechar", get("escapechar"), True)
        quotechar = _char("quotechar", get("quotechar", '"'), True)
        lineterminator = get("lineterminator", "\r\n")
        if not isinstance(lineterminator, str):
            raise TypeError('"lineterminator" must be a string, not %s' % type(lineterminator).__name__)
        # A quotechar of None with no quoting given means no quoting.
        quoting = get("quoting", QUOTE_NONE if "quotechar" in values and quotechar is None else QUOTE_MINIMAL)
        if not isinstance(quoting, int):
            raise TypeError('"quoting" must be an integer, not %s' % type(quoting).__name__)
        if quoting not in _QUOTINGS:
            raise TypeError('bad "quoting" value')
        if quotechar is None and quoting != QUOTE_NONE:
            raise TypeError("quotechar must be set if quoting enabled")
        if delimiter in ("\r", "\n"):
            raise ValueError("bad delimiter value")
        skipinitialspace = bool(get("skipinitialspace", False))
        if escapechar is not None and escapechar == delimiter:
            raise ValueError("bad delimiter or escapechar value")
        if quotechar is not None and quotechar == delimiter:
            raise ValueError("bad delimiter or quotechar value")
        if escapechar is not None and quotechar is not None and escapechar == quotechar:
            raise ValueError("bad escapechar or quotechar value")
        if escapechar in ("\r", "\n") or quotechar in ("\r", "\n"):
            raise ValueError("bad escapechar or quotechar value")
        if lineterminator == "":
            raise ValueError("lineterminator must not be empty")
        object.__setattr__(self, "_delimiter", delimiter)
        object.__setattr__(self, "_doublequote", bool(get("doublequote", True)))
        object.__setattr__(self, "_escapechar", escapechar)
        object.__setattr__(self, "_lineterminator", lineterminator)
        object.__setattr__(self, "_quotechar", quotechar)
        object.__setattr__(self, "_quoting", int(quoting))
        object.__setattr__(self, "_skipinitialspace", skipinitialspace)
        object.__setattr__(self, "_strict", bool(get("strict", False)))
        return self

    delimiter = property(lambda self: self._delimiter)
    doublequote = property(lambda self: self._doublequote)
    escapechar = property(lambda self: self._escapechar)
    lineterminator = property(lambda self: self._lineterminator)
    quotechar = property(lambda self: self._quotechar)
    quoting = property(lambda self: self._quoting)
    skipinitialspace = property(lambda self: self._skipinitialspace)
    strict = property(lambda self: self._strict)

    def __setattr__(self, name, value):
        raise AttributeError("attribute '%s' of '_csv.Dialect' objects is not writable" % name)

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle '_csv.Dialect' instances")


Dialect.__module__ = "_csv"


def _dialect(dialect, kwargs):
    return Dialect(dialect, **kwargs)


def register_dialect(name, dialect=None, **kwargs):
    if not isinstance(name, str):
        raise TypeError("dialect name must be a string")
    _dialects[name] = _dialect(dialect, kwargs)


def unregister_dialect(name):
    if name not in _dialects:
        raise Error("unknown dialect")
    del _dialects[name]


def get_dialect(name):
    try:
        return _dialects[name]
    except (KeyError, TypeError):
        raise Error("unknown dialect") from None


def list_dialects():
    return list(_dialects)


def field_size_limit(*args, **kwargs):
    global _limit
    if kwargs:
        if list(kwargs) != ["new_limit"] or args:
            raise TypeError("field_size_limit() got an unexpected keyword argument")
        args = (kwargs["new_limit"],)
    if len(args) > 1:
        raise TypeError("field_size_limit expected at most 1 argument, got %d" % len(args))
    old = _limit
    if args:
        if not isinstance(args[0], int):
            raise TypeError("limit must be an integer")
        _limit = args[0]
    return old


def _is_number(x):
    if isinstance(x, (int, float, complex)):
        return True
    t = type(x)
    return hasattr(t, "__index__") or hasattr(t, "__float__") or hasattr(t, "__int__") or hasattr(t, "__complex__")


class _Writer:
    __slots__ = ("_write", "dialect")

    def __init__(self, fileobj, dialect=None, **kwargs):
        write = getattr(fileobj, "write", None)
        if write is None or not callable(write):
            raise TypeError('argument 1 must have a "write" method')
        self._write = write
        self.dialect = _dialect(dialect, kwargs)

    def _field(self, d, field, quoted, out):
        special = (d.delimiter, d.escapechar, d.quotechar, "\n", "\r")
        chars = []
        for c in field:
            want_escape = False
            if c in special or c in d.lineterminator:
                if d.quoting == QUOTE_NONE:
                    want_escape = True
                else:
                    if c == d.quotechar:
                        if d.doublequote:
                            chars.append(c)
                        else:
                            want_escape = True
                    elif c == d.escapechar:
                        want_escape = True
                    if not want_escape:
                        quoted = True
                if want_escape:
                    if d.escapechar is None:
                        raise Error("need to escape, but no escapechar set")
                    chars.append(d.escapechar)
            chars.append(c)
        text = "".join(chars)
        if quoted:
            text = d.quotechar + text + d.quotechar
        out.append(text)

    def writerow(self, row):
        d = self.dialect
        try:
            fields = iter(row)
        except TypeError:
            raise Error("iterable expected, not %s" % type(row).__name__) from None
        out = []
        for field in fields:
            q = d.quoting
            if q == QUOTE_NONNUMERIC:
                quoted = not _is_number(field)
            elif q == QUOTE_ALL:
                quoted = True
            elif q == QUOTE_STRINGS:
                quoted = isinstance(field, str)
            elif q == QUOTE_NOTNULL:
                quoted = field is not None
            else:
                quoted = False
            if d.delimiter == " " and d.skipinitialspace and (field is None or field == ""):
                # An empty field would read back as nothing: quoted (3.12+).
                quoted = d.quoting != QUOTE_NONE
            if isinstance(field, str):
                text = field
            elif field is None:
                text = ""
            elif isinstance(field, float):
                text = repr(field)
            else:
                text = str(field)
            self._field(d, text, quoted, out)
        line = d.delimiter.join(out)
        if len(out) == 1 and line == "":
            if d.quoting == QUOTE_NONE:
                raise Error("single empty field record must be quoted")
            line = d.quotechar * 2
        return self._write(line + d.lineterminator)

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


_Writer.__name__ = _Writer.__qualname__ = "writer"
_Writer.__module__ = "_csv"


def writer(fileobj, dialect=None, **kwargs):
    return _Writer(fileobj, dialect, **kwargs)


# Parser states, as CPython's `_csv.c` names them.
(START_RECORD, START_FIELD, ESCAPED_CHAR, IN_FIELD, IN_QUOTED_FIELD, ESCAPE_IN_QUOTED_FIELD,
 QUOTE_IN_QUOTED_FIELD, EAT_CRNL, AFTER_ESCAPED_CRNL) = range(9)
_EOL = None


class _Reader:
    __slots__ = ("_input", "dialect", "line_num", "_fields", "_field", "_state", "_numeric", "_quoted")

    def __init__(self, iterable, dialect=None, **kwargs):
        self._input = iter(iterable)
        self.dialect = _dialect(dialect, kwargs)
        self.line_num = 0

    def __iter__(self):
        return self

    def _add(self, c):
        if len(self._field) >= _limit:
            raise Error("field larger than field limit (%d)" % _limit)
        self._field.append(c)

    def _save(self):
        text = "".join(self._field)
        self._field = []
        q = self.dialect.quoting
        if self._quoted:
            value = text
        elif q in (QUOTE_NOTNULL, QUOTE_STRINGS) and text == "":
            value = None
        elif self._numeric or (q == QUOTE_STRINGS and text != ""):
            value = float(text)
        else:
            value = text
        self._numeric = False
        self._quoted = False
        self._fields.append(value)

    def _end_field(self, c):
        self._save()
        self._state = START_RECORD if c is _EOL else EAT_CRNL

    def _char(self, c):
        d = self.dialect
        s = self._state
        if s == START_RECORD:
            if c is _EOL:
                return
            if c in ("\n", "\r"):
                self._state = EAT_CRNL
                return
            s = self._state = START_FIELD
        if s == START_FIELD:
            if c is _EOL or c in ("\n", "\r"):
                self._end_field(c)
            elif c == d.quotechar and d.quoting != QUOTE_NONE:
                self._quoted = True
                self._state = IN_QUOTED_FIELD
            elif c == d.escapechar:
                self._state = ESCAPED_CHAR
            elif c == " " and d.skipinitialspace:
                pass
            elif c == d.delimiter:
                self._save()
            else:
                if d.quoting == QUOTE_NONNUMERIC:
                    self._numeric = True
                self._add(c)
                self._state = IN_FIELD
        elif s == ESCAPED_CHAR:
            if c is not _EOL and c in ("\n", "\r"):
                self._add(c)
                self._state = AFTER_ESCAPED_CRNL
                return
            self._add("\n" if c is _EOL else c)
            self._state = IN_FIELD
        elif s == AFTER_ESCAPED_CRNL:
            # As CPython's: the state stays until a character changes it (so a line that
            # ends right after it continues the record).
            if c is _EOL:
                return
            self._in_field(c)
        elif s == IN_FIELD:
            self._in_field(c)
        elif s == IN_QUOTED_FIELD:
            if c is _EOL:
                pass
            elif c == d.escapechar:
                self._state = ESCAPE_IN_QUOTED_FIELD
            elif c == d.quotechar and d.quoting != QUOTE_NONE:
                self._state = QUOTE_IN_QUOTED_FIELD if d.doublequote else IN_FIELD
            else:
                self._add(c)
        elif s == ESCAPE_IN_QUOTED_FIELD:
            self._add("\n" if c is _EOL else c)
            self._state = IN_QUOTED_FIELD
        elif s == QUOTE_IN_QUOTED_FIELD:
            if d.quoting != QUOTE_NONE and c == d.quotechar:
                self._add(c)
                self._state = IN_QUOTED_FIELD
            elif c == d.delimiter:
                self._save()
                self._state = START_FIELD
            elif c is _EOL or c in ("\n", "\r"):
                self._end_field(c)
            elif not d.strict:
                self._add(c)
                self._state = IN_FIELD
            else:
                raise Error("'%s' expected after '%s'" % (d.delimiter, d.quotechar))
        elif s == EAT_CRNL:
            if c is _EOL:
                self._state = START_RECORD
            elif c not in ("\n", "\r"):
                raise Error("new-line character seen in unquoted field - do you need to open the file with newline=''?")

    def _in_field(self, c):
        d = self.dialect
        if c is _EOL or c in ("\n", "\r"):
            self._end_field(c)
        elif c == d.escapechar:
            self._state = ESCAPED_CHAR
        elif c == d.delimiter:
            self._save()
            self._state = START_FIELD
        else:
            self._add(c)

    def __next__(self):
        self._fields = []
        self._field = []
        self._state = START_RECORD
        self._numeric = False
        self._quoted = False
        while True:
            try:
                line = next(self._input)
            except StopIteration:
                if self._field or self._state != START_RECORD:
                    if self.dialect.strict:
                        raise Error("unexpected end of data") from None
                    self._save()
                    break
                raise
            if not isinstance(line, str):
                raise Error("iterator should return strings, not %.200s (the file should be opened in text mode)" % type(line).__name__)
            self.line_num += 1
            for c in line:
                self._char(c)
            self._char(_EOL)
            if self._state == START_RECORD:
                break
        fields = self._fields
        self._fields = []
        return fields


_Reader.__name__ = _Reader.__qualname__ = "reader"
_Reader.__module__ = "_csv"


def reader(iterable, dialect=None, **kwargs):
    return _Reader(iterable, dialect, **kwargs)
