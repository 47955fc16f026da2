# A hostile command that tries to take more of the machine than its budget, the way the
# attacker of issue 48 did. `python3 budget_hog.py MODE ARGS...`; every mode prints what it
# got as `got <what> <number>` lines and ends with `hog-done`.
#
#   memory FORKS MIB    FORKS processes, each holding up to MIB MiB (touched), all at once;
#                       `got held BYTES` (what the live ones hold together) and `got drop
#                       BYTES` (how far the host's MemAvailable fell meanwhile)
#   sockets FORKS BYTES FORKS processes fill socket pairs (asking for 8 MiB buffers) until
#                       they hold BYTES in all or are refused: `got held BYTES`
#   procs N             N processes at once: `got procs STARTED`
#   inotify             inotify instances until refused: `got inotify COUNT`
#   tmp MIB             writes MIB MiB into /tmp: `got tmp BYTES`
#   proxy N             N connections to the proxy ($HTTPS_PROXY), held idle (a byte every
#                       2 s, never a whole request): `got connected N`, `got refused K` (a
#                       503 at once) and `got open M` once the proxy has closed all it will
#                       (looked at for 60 s)
import os, socket, sys, time, signal

MIB = 1 << 20


def available():
    for line in open('/proc/meminfo'):
        if line.startswith('MemAvailable:'):
            return int(line.split()[1]) * 1024
    return 0


def memory(forks, mib):
    before = available()
    kids = []
    for _ in range(forks):
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            break
        if pid == 0:
            os.close(r)
            try:
                # The first to go when the kernel must choose.
                open('/proc/self/oom_score_adj', 'w').write('1000')
            except OSError:
                pass
            held = []
            try:
                for _ in range(mib):
                    b = bytearray(MIB)
                    for i in range(0, MIB, 4096):
                        b[i] = 1
                    held.append(b)
                    os.write(w, b'+')
            except MemoryError:
                pass
            os.write(w, b'.')
            signal.pause()
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    got = {}
    for pid, r in kids:
        n = 0
        while True:
            try:
                c = os.read(r, 4096)
            except OSError:
                break
            if not c:
                break
            n += c.count(b'+')
            if c.endswith(b'.'):
                break
        got[pid] = n
    # What the live ones hold together (one killed by the kernel holds nothing).
    alive = [pid for pid, _ in kids if os.waitpid(pid, os.WNOHANG) == (0, 0)]
    drop = before - available()
    print('got held', sum(got[p] for p in alive) * MIB)
    print('got drop', max(drop, 0))
    for pid, _ in kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def fill(target, report):
    held, pairs = 0, []
    chunk = b'x' * 65536
    while held < target:
        try:
            a, b = socket.socketpair()
        except OSError:
            break
        pairs.append((a, b))
        for s in (a, b):
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 * MIB)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 * MIB)
            except OSError:
                pass
            s.setblocking(False)
            while held < target:
                try:
                    held += s.send(chunk)
                except (BlockingIOError, OSError):
                    break
    os.write(report, (str(held) + '\n').encode())
    return pairs


def sockets(forks, target):
    share = target // forks
    r, w = os.pipe()
    kids = []
    for _ in range(forks - 1):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.close(r)
            fill(share, w)
            signal.pause()
            os._exit(0)
        kids.append(pid)
    mine = fill(share, w)
    os.close(w)
    import select
    buf = b''
    while True:
        alive = [p for p in kids if os.waitpid(p, os.WNOHANG) == (0, 0)]
        if buf.count(b'\n') >= len(alive) + 1:
            break
        if select.select([r], [], [], 1)[0]:
            c = os.read(r, 4096)
            if not c:
                break
            buf += c
    print('got held', sum(int(x) for x in buf.split()))
    for pid in kids:
        os.kill(pid, signal.SIGKILL)
    del mine


def procs(n):
    started = []
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            signal.pause()
            os._exit(0)
        started.append(pid)
    print('got procs', len(started))
    for pid in started:
        os.kill(pid, signal.SIGKILL)
    for pid in started:
        os.waitpid(pid, 0)


def inotify():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fds = []
    while len(fds) < 4096:
        fd = libc.inotify_init1(0)
        if fd < 0:
            break
        fds.append(fd)
    print('got inotify', len(fds))


def tmp(mib):
    written = 0
    try:
        with open('/tmp/hog', 'wb') as f:
            for _ in range(mib):
                f.write(b'x' * MIB)
                f.flush()
                written += MIB
    except OSError:
        pass
    print('got tmp', written)


def proxy(n):
    url = os.environ.get('HTTPS_PROXY') or os.environ.get('https_proxy') or ''
    hostport = url.split('//')[-1].strip('/')
    host, port = hostport.rsplit(':', 1)
    conns = []
    for _ in range(n):
        try:
            conns.append(socket.create_connection((host, int(port)), timeout=5))
        except OSError:
            break
    refused, open_ = 0, list(conns)
    end = time.monotonic() + 60
    while open_ and time.monotonic() < end:
        still = []
        for c in open_:
            c.setblocking(False)
            try:
                data = c.recv(4096)
            except BlockingIOError:
                data = None
            except OSError:
                data = b''
            if data is None:
                try:
                    c.send(b'C')  # a request head a byte at a time, never whole
                    still.append(c)
                except OSError:
                    pass
            elif data.startswith(b'HTTP/1.1 503'):
                refused += 1
            elif data:
                still.append(c)
        open_ = still
        if open_:
            time.sleep(2)
    print('got connected', len(conns))
    print('got refused', refused)
    print('got open', len(open_))


mode = sys.argv[1]
args = [int(a) for a in sys.argv[2:]]
{'memory': memory, 'sockets': sockets, 'procs': procs, 'inotify': inotify, 'tmp': tmp, 'proxy': proxy}[mode](*args)
print('hog-done', flush=True)
