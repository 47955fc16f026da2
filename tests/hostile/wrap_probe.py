"""A hostile agent under `cairn wrap` (tests/it/wrap_boundary.rs): it tries every class of the
wrap issue and prints `LEAK-<what>` for each that worked, then `probe-done`. Then it plants
persistence, a symlink to a secret and a sparse file, which the test checks from outside.
Targets come as one JSON argument.
"""
import ctypes
import errno
import json
import os
import socket
import sys

T = json.loads(sys.argv[1])
HOME = os.path.expanduser("~")
libc = ctypes.CDLL(None, use_errno=True)


def leak(what):
    print(f"LEAK-{what}", flush=True)


def attempt(what, fn):
    try:
        fn()
    except Exception:  # noqa: BLE001 - a failure is the boundary holding
        return
    leak(what)


def read(path):
    with open(path, "rb") as f:
        if not f.read(1):
            raise OSError("empty")


# Credentials: files planted in the home, the environment, root's.
for rel in T["credentials"]:
    attempt(f"credential:{rel}", lambda rel=rel: read(os.path.join(HOME, rel)))
for name in T["secret_env"]:
    if name in os.environ:
        leak(f"env:{name}")
for path in ["/etc/shadow", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key", "/root/.bash_history", "/root/.ssh/id_rsa"]:
    attempt(f"read:{path}", lambda p=path: read(p))
for d in ["/run", "/var/run", "/var/lib", "/srv", "/mnt", "/home", "/sys"] + ([] if HOME == "/root" else ["/root"]):
    if os.path.exists(d) and os.listdir(d):
        leak(f"visible:{d}")

# Host sockets: unix (paths the test planted), abstract, loopback, the outside world.
for path in T["sockets"]:
    def conn(path=path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(path)
    attempt(f"unix:{path}", conn)
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect("\0" + T["abstract"])
attempt("abstract-socket", abstract)
attempt("tcp-host-loopback", lambda: socket.create_connection(("127.0.0.1", T["tcp_port"]), timeout=2).close())
def direct_out():
    s = socket.socket()
    s.settimeout(2)
    s.connect(("1.1.1.1", 443))
attempt("tcp-direct", direct_out)
if T.get("proxy"):
    # Through the proxy: a host that is not allowed is refused with 403.
    def via_proxy():
        s = socket.create_connection(("127.0.0.1", 3128), timeout=3)
        s.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        if b" 200 " not in s.recv(100):
            raise OSError("refused")
    attempt("proxy-allowed-a-denied-host", via_proxy)
    def rebind():
        s = socket.create_connection(("127.0.0.1", 3128), timeout=3)
        s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\n\r\n" % T["tcp_port"])
        if b" 200 " not in s.recv(100):
            raise OSError("refused")
    attempt("proxy-to-host-loopback", rebind)

# The terminal: nothing of the user's is here; typing into our own is refused.
pts = [n for n in os.listdir("/dev/pts") if n != "ptmx"] if os.path.isdir("/dev/pts") else []
if pts:
    leak("host-terminals:" + ",".join(pts))
c = ctypes.c_char(b"x")
for fd in (0, 1, 2):
    if os.isatty(fd) and libc.ioctl(fd, ctypes.c_ulong(0x5412), ctypes.byref(c)) == 0:
        leak(f"tiocsti-fd{fd}")
if os.getuid() == 0:
    leak("uid0")

# Persistence in the agent CLIs' configuration and the shell's.
for rel, text in T["plant"].items():
    p = os.path.join(HOME, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)

# A symlink to a secret, swapped in for a file; a sparse file of 1.2 GiB.
try:
    os.symlink(os.path.join(HOME, ".ssh/id_rsa"), "leak.txt")
except OSError:
    pass
with open("sparse.bin", "wb") as f:
    f.truncate(1200 << 20)
with open("made.txt", "w") as f:
    f.write("made\n")
print("probe-done", flush=True)
