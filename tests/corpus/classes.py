# --- dataclass defaults and factory
from dataclasses import dataclass, field
@dataclass
class Config:
    name: str
    retries: int = 3
    tags: list = field(default_factory=list)
a, b = Config("a"), Config("b")
a.tags.append("x")
assert b.tags == [] and a.retries == 3
assert a == Config("a", 3, ["x"])
assert repr(b) == "Config(name='b', retries=3, tags=[])"

# --- dataclass frozen and order
from dataclasses import dataclass, FrozenInstanceError
@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int = 0
assert sorted([Version(1, 2), Version(1, 0), Version(0, 9)])[0] == Version(0, 9)
assert Version(1) < Version(1, 1)
try:
    Version(1).major = 2
    raise AssertionError("assigned")
except FrozenInstanceError:
    pass
assert hash(Version(1)) == hash(Version(1))

# --- dataclass asdict replace fields
from dataclasses import dataclass, asdict, astuple, replace, fields, field
@dataclass
class Item:
    name: str
    qty: int = 1
    notes: dict = field(default_factory=dict)
i = Item("pen")
assert asdict(i) == {"name": "pen", "qty": 1, "notes": {}}
assert astuple(i) == ("pen", 1, {})
assert replace(i, qty=5).qty == 5
assert [f.name for f in fields(Item)] == ["name", "qty", "notes"]

# --- dataclass post_init and field options
from dataclasses import dataclass, field
@dataclass
class Rect:
    w: float
    h: float
    area: float = field(init=False)
    secret: str = field(default="", repr=False, compare=False)
    def __post_init__(self):
        self.area = self.w * self.h
r = Rect(2, 3)
assert r.area == 6 and "secret" not in repr(r)
assert Rect(2, 3, secret="a") == Rect(2, 3, secret="b")

# --- dataclass inheritance and slots
from dataclasses import dataclass, is_dataclass
@dataclass
class Base:
    x: int
@dataclass
class Child(Base):
    y: int = 0
c = Child(1, 2)
assert (c.x, c.y) == (1, 2) and is_dataclass(c)
@dataclass(slots=True)
class Slim:
    a: int
assert not hasattr(Slim(1), "__dict__")

# --- dataclass kw_only
from dataclasses import dataclass, field
@dataclass(kw_only=True)
class Opts:
    verbose: bool = False
    depth: int = 1
o = Opts(depth=2)
assert o.depth == 2 and not o.verbose
try:
    Opts(True)
    raise AssertionError("positional accepted")
except TypeError:
    pass

# --- enum basics
from enum import Enum, auto
class Color(Enum):
    RED = 1
    GREEN = 2
    BLUE = auto()
assert Color(2) is Color.GREEN and Color["RED"] is Color.RED
assert Color.BLUE.value == 3 and Color.RED.name == "RED"
assert [c.name for c in Color] == ["RED", "GREEN", "BLUE"]
assert str(Color.RED) == "Color.RED"
assert len(Color) == 3 and Color.RED in Color

# --- enum lookups fail clearly
from enum import Enum
class Mode(Enum):
    A = "a"
try:
    Mode("z")
    raise AssertionError("no error")
except ValueError as e:
    assert "'z' is not a valid Mode" in str(e), str(e)

# --- intenum and strenum-like
from enum import IntEnum, Enum
class Level(IntEnum):
    LOW = 1
    HIGH = 3
assert Level.HIGH > Level.LOW and Level.LOW + 1 == 2
assert sorted([Level.HIGH, Level.LOW]) == [Level.LOW, Level.HIGH]
class Kind(str, Enum):
    FILE = "file"
assert Kind.FILE == "file" and Kind("file") is Kind.FILE

# --- enum flag
from enum import Flag, auto
class Perm(Flag):
    R = auto()
    W = auto()
    X = auto()
rw = Perm.R | Perm.W
assert Perm.R in rw and Perm.X not in rw
assert (rw & Perm.W) == Perm.W
assert Perm.R.value == 1 and Perm.X.value == 4

# --- enum unique and methods
from enum import Enum, unique
@unique
class Planet(Enum):
    MERCURY = (3.3e23, 2.44e6)
    EARTH = (5.97e24, 6.37e6)
    def __init__(self, mass, radius):
        self.mass = mass
        self.radius = radius
    @property
    def dense(self):
        return self.mass / self.radius ** 3 > 1e4
assert Planet.EARTH.mass == 5.97e24 and Planet.EARTH.dense
try:
    @unique
    class Dup(Enum):
        A = 1
        B = 1
    raise AssertionError("duplicate accepted")
except ValueError:
    pass

# --- abc
from abc import ABC, abstractmethod
class Shape(ABC):
    @abstractmethod
    def area(self):
        ...
    def describe(self):
        return f"area {self.area()}"
class Sq(Shape):
    def __init__(self, s):
        self.s = s
    def area(self):
        return self.s ** 2
assert Sq(3).describe() == "area 9"
try:
    Shape()
    raise AssertionError("instantiated")
except TypeError as e:
    assert "abstract" in str(e)

# --- abc register
import abc
class Plugin(abc.ABC):
    pass
class External:
    pass
Plugin.register(External)
assert isinstance(External(), Plugin) and issubclass(External, Plugin)

# --- types simplenamespace
from types import SimpleNamespace
ns = SimpleNamespace(a=1, b="x")
ns.c = [1]
assert ns.a == 1 and vars(ns) == {"a": 1, "b": "x", "c": [1]}
assert ns == SimpleNamespace(a=1, b="x", c=[1])

# --- types mappingproxy and function types
import types
ro = types.MappingProxyType({"k": 1})
assert ro["k"] == 1
try:
    ro["k"] = 2
    raise AssertionError("mutated")
except TypeError:
    pass
def f():
    pass
assert isinstance(f, types.FunctionType) and isinstance(len, types.BuiltinFunctionType)
assert isinstance((x for x in []), types.GeneratorType)

# --- types new_class and module type
import types
Point = types.new_class("Point", (), {}, lambda ns: ns.update({"x": 0}))
assert Point().x == 0
assert isinstance(types, types.ModuleType)
