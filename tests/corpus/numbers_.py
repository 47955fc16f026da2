# --- math basics
import math
assert math.isclose(math.sqrt(2) ** 2, 2)
assert math.floor(-2.5) == -3 and math.ceil(2.1) == 3
assert math.gcd(12, 18) == 6 and math.lcm(4, 6) == 12
assert math.factorial(10) == 3628800
assert math.comb(5, 2) == 10 and math.perm(5, 2) == 20
assert math.isqrt(17) == 4

# --- math floats
import math
assert math.isinf(math.inf) and math.isnan(math.nan)
assert math.fsum([0.1] * 10) == 1.0
assert math.copysign(3, -0.0) == -3
assert math.log(8, 2) == 3.0 and math.log10(1000) == 3.0
assert math.isclose(math.pi, 3.141592653589793)
assert math.trunc(-3.7) == -3
assert math.prod([1, 2, 3, 4]) == 24
assert math.dist((0, 0), (3, 4)) == 5.0

# --- math trig
import math
assert math.isclose(math.sin(math.pi / 2), 1.0)
assert math.isclose(math.degrees(math.pi), 180.0)
assert math.isclose(math.atan2(1, 1), math.pi / 4)
assert math.hypot(3, 4) == 5.0

# --- math errors
import math
try:
    math.sqrt(-1)
    raise AssertionError("no error")
except ValueError as e:
    # CPython 3.14 words it "expected a nonnegative input, got -1.0".
    assert str(e) in ("math domain error", "expected a nonnegative input, got -1.0"), str(e)

# --- builtin numbers
assert divmod(17, 5) == (3, 2) and divmod(-7, 2) == (-4, 1)
assert round(2.5) == 2 and round(3.5) == 4 and round(1.2345, 2) == 1.23
assert pow(3, 4, 5) == 1 and pow(2, -1, 7) == 4
assert int("ff", 16) == 255 and int("0x1f", 0) == 31 and int(" 42 ") == 42
assert float("1e3") == 1000.0 and (0.1 + 0.2) != 0.3
assert (255).to_bytes(2, "big") == b"\x00\xff" and int.from_bytes(b"\x01\x00", "little") == 1
assert (10).bit_length() == 4 and bin(5) == "0b101" and hex(255) == "0xff" and oct(8) == "0o10"
assert 7 // 2 == 3 and -7 // 2 == -4 and 7 % -3 == -2

# --- float formatting
assert f"{3.14159:.2f}" == "3.14"
assert f"{1234567.891:,.1f}" == "1,234,567.9"
assert f"{0.25:.0%}" == "25%"
assert f"{42:08.3f}" == "0042.000"
assert f"{1e-7:g}" == "1e-07"
assert repr(0.1) == "0.1" and str(1e16) == "1e+16"
assert f"{255:#x}" == "0xff" and f"{5:>4}" == "   5" and f"{'ab':*^6}" == "**ab**"

# --- cmath
import cmath
assert cmath.sqrt(-1) == 1j
r, phi = cmath.polar(1j)
assert r == 1.0 and abs(phi - cmath.pi / 2) < 1e-12
assert abs(cmath.exp(1j * cmath.pi) + 1) < 1e-12

# --- complex numbers
z = complex(3, 4)
assert abs(z) == 5.0
assert z.conjugate() == 3 - 4j
assert (1 + 2j) * (3 - 1j) == 5 + 5j

# --- statistics central
import statistics
data = [2, 4, 4, 4, 5, 5, 7, 9]
assert statistics.mean(data) == 5
assert statistics.median(data) == 4.5
assert statistics.mode(data) == 4
assert statistics.pstdev(data) == 2.0
assert statistics.median_low([1, 3, 5, 7]) == 3

# --- statistics spread
import statistics
assert round(statistics.stdev([1, 2, 3, 4]), 6) == 1.290994
assert statistics.variance([1, 2, 3, 4]) == 1.6666666666666667
assert statistics.multimode("aabbc") == ["a", "b"]
assert statistics.quantiles([1, 2, 3, 4, 5, 6, 7, 8], n=4) == [2.25, 4.5, 6.75]

# --- statistics errors
import statistics
try:
    statistics.mean([])
    raise AssertionError("no error")
except statistics.StatisticsError as e:
    assert "at least one data point" in str(e)

# --- fractions
from fractions import Fraction
assert Fraction(1, 3) + Fraction(1, 6) == Fraction(1, 2)
assert Fraction("0.25") == Fraction(1, 4)
assert Fraction(3, 10).limit_denominator(3) == Fraction(1, 3)
assert str(Fraction(6, 4)) == "3/2"
assert Fraction(1, 2) < 0.75

# --- fractions from float
from fractions import Fraction
assert Fraction(0.5) == Fraction(1, 2)
assert Fraction(0.1).limit_denominator() == Fraction(1, 10)
assert (Fraction(1, 3) * 3).denominator == 1
assert float(Fraction(1, 8)) == 0.125

# --- decimal arithmetic
from decimal import Decimal
assert Decimal("0.1") + Decimal("0.2") == Decimal("0.3")
assert str(Decimal("1.10") + Decimal("2.205")) == "3.305"
assert Decimal("10") / Decimal("4") == Decimal("2.5")
assert Decimal(7) // Decimal(2) == Decimal(3)

# --- decimal quantize and context
from decimal import Decimal, ROUND_HALF_UP, localcontext
assert Decimal("2.675").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) == Decimal("2.68")
with localcontext() as ctx:
    ctx.prec = 5
    assert str(Decimal(1) / Decimal(7)) == "0.14286"
assert Decimal("1.23E+3") == 1230

# --- decimal special values
from decimal import Decimal, InvalidOperation
assert Decimal("Infinity") > 10 ** 100
assert Decimal("NaN").is_nan()
try:
    Decimal("abc")
    raise AssertionError("no error")
except InvalidOperation:
    pass

# --- random seeded
import random
random.seed(42)
a = [random.random() for _ in range(3)]
random.seed(42)
b = [random.random() for _ in range(3)]
assert a == b and all(0 <= x < 1 for x in a)

# --- random instance
import random
r1, r2 = random.Random(7), random.Random(7)
assert r1.randint(1, 100) == r2.randint(1, 100)
assert r1.choice("abc") == r2.choice("abc")
assert all(1 <= random.randint(1, 6) <= 6 for _ in range(50))
assert random.randrange(0, 10, 5) in (0, 5)

# --- random shuffle and sample
import random
items = list(range(10))
random.shuffle(items)
assert sorted(items) == list(range(10))
s = random.sample(range(100), 5)
assert len(set(s)) == 5 and all(0 <= x < 100 for x in s)
assert len(random.choices("ab", k=10)) == 10
assert 1.0 <= random.uniform(1, 2) <= 2.0

# --- random distributions
import random
rng = random.Random(1)
assert isinstance(rng.gauss(0, 1), float)
assert len(rng.randbytes(8)) == 8
assert rng.getrandbits(8) < 256
