# --- datetime arithmetic
from datetime import date, datetime, timedelta
d = date(2024, 2, 28) + timedelta(days=1)
assert d == date(2024, 2, 29) and d.isoformat() == "2024-02-29"
assert (date(2024, 3, 1) - date(2024, 1, 1)).days == 60
assert datetime(2024, 1, 1, 12) + timedelta(hours=13) == datetime(2024, 1, 2, 1)
assert date(2024, 1, 1).weekday() == 0 and date(2024, 1, 1).isoweekday() == 1

# --- datetime formatting
from datetime import datetime
dt = datetime(2023, 7, 4, 9, 5, 30)
assert dt.strftime("%Y-%m-%d %H:%M:%S") == "2023-07-04 09:05:30"
assert dt.strftime("%b %d, %Y") == "Jul 04, 2023"
assert dt.isoformat() == "2023-07-04T09:05:30"
assert str(dt) == "2023-07-04 09:05:30"

# --- datetime parsing
from datetime import datetime, date
assert datetime.strptime("2021-03-04 05:06", "%Y-%m-%d %H:%M") == datetime(2021, 3, 4, 5, 6)
assert datetime.fromisoformat("2020-01-02T03:04:05") == datetime(2020, 1, 2, 3, 4, 5)
assert date.fromisoformat("1999-12-31").year == 1999

# --- datetime timezones
from datetime import datetime, timezone, timedelta
utc = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
plus2 = utc.astimezone(timezone(timedelta(hours=2)))
assert plus2.hour == 14 and plus2 == utc
assert utc.isoformat() == "2024-05-01T12:00:00+00:00"
assert utc.timestamp() == 1714564800.0
assert datetime.fromtimestamp(0, tz=timezone.utc).year == 1970

# --- datetime now
from datetime import datetime, timezone, date
now = datetime.now(timezone.utc)
assert now.year >= 2024
assert date.today().year >= 2024
assert isinstance(datetime.now(), datetime)

# --- timedelta
from datetime import timedelta
t = timedelta(days=1, hours=2, minutes=3)
assert t.total_seconds() == 93780.0
assert str(timedelta(seconds=3661)) == "1:01:01"
assert timedelta(hours=25).days == 1
assert abs(timedelta(days=-1)) == timedelta(days=1)

# --- time clock
import time
t0 = time.time()
assert t0 > 1.6e9
m0, p0 = time.monotonic(), time.perf_counter()
time.sleep(0.01)
assert time.monotonic() - m0 >= 0.009
assert time.perf_counter() > p0
assert isinstance(time.time_ns(), int) and time.monotonic_ns() > 0

# --- time struct
import time
t = time.gmtime(0)
assert (t.tm_year, t.tm_mon, t.tm_mday) == (1970, 1, 1)
assert time.strftime("%Y-%m-%d", time.gmtime(86400)) == "1970-01-02"
assert isinstance(time.localtime().tm_year, int)

# --- calendar-free date math
from datetime import date
def month_end(y, m):
    nxt = date(y + m // 12, m % 12 + 1, 1)
    return (nxt - date(y, m, 1)).days
assert month_end(2024, 2) == 29 and month_end(2023, 2) == 28 and month_end(2023, 12) == 31
