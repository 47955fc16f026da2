# --- typing namedtuple
from typing import NamedTuple
class Point(NamedTuple):
    x: int
    y: int = 0
    def norm(self):
        return abs(self.x) + abs(self.y)
p = Point(3)
assert p == (3, 0) and p._replace(y=-4).norm() == 7
assert Point._fields == ("x", "y") and p._asdict() == {"x": 3, "y": 0}

# --- typing typeddict
from typing import TypedDict
class Movie(TypedDict):
    title: str
    year: int
m: Movie = {"title": "Alien", "year": 1979}
assert m["year"] == 1979 and Movie(title="x", year=1) == {"title": "x", "year": 1}
assert Movie.__annotations__ == {"title": str, "year": int}

# --- typing typeddict total
from typing import TypedDict
class Opt(TypedDict, total=False):
    a: int
assert Opt() == {} and Opt.__total__ is False

# --- typing generic
from typing import Generic, TypeVar, List
T = TypeVar("T")
class Stack(Generic[T]):
    def __init__(self) -> None:
        self.items: List[T] = []
    def push(self, item: T) -> None:
        self.items.append(item)
    def pop(self) -> T:
        return self.items.pop()
s = Stack[int]()
s.push(1)
assert s.pop() == 1

# --- typing protocol
from typing import Protocol, runtime_checkable
@runtime_checkable
class Closer(Protocol):
    def close(self) -> None:
        ...
class Res:
    def close(self):
        pass
assert isinstance(Res(), Closer) and not isinstance(1, Closer)

# --- typing overload and cast
from typing import overload, Union, cast
@overload
def double(x: int) -> int: ...
@overload
def double(x: str) -> str: ...
def double(x: Union[int, str]) -> Union[int, str]:
    return x * 2
assert double(2) == 4 and double("a") == "aa"
assert cast(int, "not checked") == "not checked"

# --- typing get_type_hints
from typing import get_type_hints, Optional, List
def f(a: int, b: "str" = "", c: Optional[List[int]] = None) -> bool:
    return True
hints = get_type_hints(f)
assert hints["a"] is int and hints["b"] is str and hints["return"] is bool
assert hints["c"] == Optional[List[int]]

# --- typing get_origin get_args
from typing import get_origin, get_args, Dict, Union, Literal
assert get_origin(Dict[str, int]) is dict and get_args(Dict[str, int]) == (str, int)
assert get_args(Union[int, str]) == (int, str)
assert get_args(Literal["a", "b"]) == ("a", "b")
assert get_origin(list[int]) is list

# --- typing type checking and aliases
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, Mapping, Tuple, Set, FrozenSet, ClassVar, Final
if TYPE_CHECKING:
    raise AssertionError("TYPE_CHECKING is true at run time")
Handler = Callable[[str, int], bool]
Pairs = Iterable[Tuple[str, Any]]
def first(xs: Sequence[int]) -> int:
    return xs[0]
assert first([4]) == 4
assert TYPE_CHECKING is False

# --- typing annotations with future
from __future__ import annotations
from typing import get_type_hints
class Node:
    def link(self, other: Node) -> Node:
        return other
assert Node.link.__annotations__["other"] == "Node"
assert get_type_hints(Node.link)["return"] is Node

# --- typing newtype literal optional
from typing import NewType, Literal, Optional
UserId = NewType("UserId", int)
assert UserId(5) == 5
def mode(m: Literal["r", "w"]) -> Optional[str]:
    return None if m == "r" else m
assert mode("w") == "w" and mode("r") is None

# --- typing union operator
from typing import Union
def g(x: int | None = None) -> int | str:
    return 0 if x is None else x
assert g() == 0
assert (int | None) == Union[int, None]
assert isinstance(3, int | str)

# --- future module
import __future__
assert __future__.annotations.compiler_flag != 0
assert "annotations" in __future__.all_feature_names
