"""A hostile command for confined runs (tests/it/boundary.rs): it tries every class of escape
the run boundary must hold against and prints `LEAK-<what>` for each one that worked, then
`probe-done`. Targets planted by the test come as arguments (JSON): files, sockets, the
abstract socket name. Nothing here changes the host when it fails; where a row could change
the host if it succeeded, it writes back what is already there (sysctls) or asks for help
text (sysrq `h`).
"""
import ctypes
import errno
import json
import os
import socket
import sys

T = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def leak(what, detail=""):
    print(f"LEAK-{what} {detail}".rstrip(), flush=True)


def attempt(what, fn):
    try:
        fn()
    except Exception:  # noqa: BLE001 - every failure is the boundary holding
        return
    leak(what)


def sys_call(nr, *args):
    """The raw syscall's result, and errno when it failed."""
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return r, (ctypes.get_errno() if r < 0 else 0)


def only_filtered(what, nr, *args, ok=(errno.EPERM,)):
    """Leaks unless the syscall failed with the filter's answer: a bad-pointer EFAULT, EINVAL
    or success all mean the kernel reached the syscall's own code."""
    r, e = sys_call(nr, *args)
    if r >= 0 or e not in ok:
        leak(what, f"r={r} errno={e}")


# Host-wide kernel settings, as whoever we are.
def rewrite(path):
    with open(path) as f:
        value = f.read()
    with open(path, "w") as f:
        f.write(value)


for p in ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname", "/proc/sys/vm/overcommit_memory", "/proc/sys/net/ipv4/ip_forward"]:
    attempt(f"sysctl:{p}", lambda p=p: rewrite(p))
attempt("sysrq", lambda: open("/proc/sysrq-trigger", "w").write("h"))
for p in ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/kallsyms"]:
    def read_some(p=p):
        with open(p, "rb") as f:
            if not f.read(64):
                raise OSError("empty")
    attempt(f"proc:{p}", read_some)
attempt("sys", lambda: os.listdir("/sys/kernel") or (_ for _ in ()).throw(OSError()))
attempt("sys-firmware", lambda: os.listdir("/sys/firmware"))

# Identity.
if os.getuid() == 0 or os.geteuid() == 0:
    leak("uid0", str(os.getuid()))
with open("/proc/self/status") as f:
    status = f.read()
if "NoNewPrivs:\t1" not in status:
    leak("no-new-privs")
if "Seccomp:\t2" not in status:
    leak("seccomp-off")
cap = [l for l in status.splitlines() if l.startswith("CapEff:")]
if cap and int(cap[0].split()[1], 16) != 0:
    leak("capabilities", cap[0])

# The terminal.
attempt("dev-tty", lambda: os.open("/dev/tty", os.O_RDWR))
if os.getsid(0) == os.getsid(os.getppid()) and os.getpid() != os.getsid(0):
    pass  # the shell is the session leader; checked below through the controlling terminal
for fd in (0, 1, 2):
    try:
        if os.isatty(fd):
            leak("inherited-tty", str(fd))
    except OSError:
        pass
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
try:
    # A terminal of our own (the private devpts): the filter must refuse typing into it.
    master, slave = os.openpty()
    c = ctypes.c_char(b"x")
    for name, req in [("tiocsti", TIOCSTI), ("tiocsti-high-bits", (0x123 << 32) | TIOCSTI)]:
        r = libc.ioctl(ctypes.c_int(slave), ctypes.c_ulong(req), ctypes.byref(c))
        if r == 0:
            leak(name)
    r, e = sys_call(16, slave, TIOCLINUX, 0)  # ioctl
    if e != errno.EPERM:
        leak("tioclinux", f"errno={e}")
except OSError:
    pass

# Kernel surfaces.
NR = {"io_uring_setup": 425, "userfaultfd": 323, "bpf": 321, "perf_event_open": 298, "keyctl": 250, "add_key": 248, "request_key": 249,
      "ptrace": 101, "process_vm_readv": 310, "kexec_load": 246, "init_module": 175, "open_by_handle_at": 304, "mount": 165,
      "unshare": 272, "setns": 308, "fsopen": 430, "open_tree": 428, "pivot_root": 155, "swapon": 167, "syslog": 103}
only_filtered("io_uring", NR["io_uring_setup"], 2, 0)
only_filtered("userfaultfd", NR["userfaultfd"], 1)  # UFFD_USER_MODE_ONLY
only_filtered("bpf", NR["bpf"], 0, 0, 0)
only_filtered("perf_event_open", NR["perf_event_open"], 0, 0, -1, -1, 0)
only_filtered("keyctl", NR["keyctl"], 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
only_filtered("add_key", NR["add_key"], 0, 0, 0, 0, -3)
only_filtered("ptrace", NR["ptrace"], 0, 0, 0, 0)  # PTRACE_TRACEME
only_filtered("process_vm_readv", NR["process_vm_readv"], os.getpid(), 0, 0, 0, 0, 0)
only_filtered("open_by_handle_at", NR["open_by_handle_at"], -100, 0, 0)
only_filtered("mount", NR["mount"], 0, 0, 0, 0, 0)
only_filtered("unshare", NR["unshare"], 0x10000000)  # CLONE_NEWUSER
only_filtered("fsopen", NR["fsopen"], 0, 0)
# `unshare` by another name: clone with namespace flags (SIGCHLD as the exit signal), and clone3.
for name, flags in [("clone-newuser", 0x10000000), ("clone-newnet", 0x40000000), ("clone-newns", 0x20000)]:
    r, e = sys_call(56, flags | 17, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
        leak(name)
    elif e != errno.EPERM:
        leak(f"{name} errno={e}")
r, e = sys_call(435, 0, 0)  # clone3 (NULL args): ENOSYS when refused whole
if e != errno.ENOSYS:
    leak(f"clone3 r={r} errno={e}")
only_filtered("syslog", NR["syslog"], 3, 0, 0)  # SYSLOG_ACTION_READ_ALL
# x32 numbers (bit 30) and the i386 entry are not the native table: both refused.
r, e = sys_call(0x40000000 | 39)  # x32 getpid
if r >= 0:
    leak("x32", f"r={r}")
for fam, name in [(40, "vsock"), (15, "af_key")]:
    try:
        socket.socket(fam, socket.SOCK_STREAM if fam == 40 else socket.SOCK_RAW, 0 if fam == 40 else 2).close()
        leak(name)
    except OSError as ex:
        if ex.errno not in (errno.EPERM,):
            # EAFNOSUPPORT etc. would also hold, but only the filter's answer proves the row.
            leak(name + "-unfiltered", str(ex.errno))

# Host sockets and files.
for path in T.get("sockets", []) + ["/run/dbus/system_bus_socket", "/var/run/docker.sock", f"/run/user/{os.getuid()}/bus"]:
    def conn(path=path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(path)
    attempt(f"unix:{path}", conn)
if T.get("abstract"):
    def abstract():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect("\0" + T["abstract"])
    attempt("abstract-socket", abstract)
if T.get("tcp_port"):
    attempt("tcp-loopback", lambda: socket.create_connection(("127.0.0.1", T["tcp_port"]), timeout=2))
attempt("tcp-out", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
for path in T.get("files", []) + ["/etc/shadow", "/etc/gshadow", "/root/.bash_history"]:
    def read(path=path):
        with open(path, "rb") as f:
            if not f.read(1):
                raise OSError("empty")
    attempt(f"read:{path}", read)
for d in ["/srv", "/mnt", "/media", "/home", "/var/lib", "/var/log", "/run", "/sys", "/opt", "/boot"]:
    if os.path.exists(d) and os.listdir(d):
        leak(f"visible:{d}")
for d in T.get("absent", []):
    if os.path.exists(d):
        leak(f"visible:{d}")
try:
    keys = [n for n in os.listdir("/etc/ssh") if "key" in n]
    if keys:
        leak("etc-ssh", ",".join(keys))
except OSError:
    pass
for d in ["/", "/usr", "/etc", "/bin"]:
    attempt(f"write:{d}", lambda d=d: open(os.path.join(d, f".probe-{os.getpid()}"), "w").close())
for d in T.get("absent_writes", []):
    # May land in the run's private /tmp: the test looks on the host afterwards.
    try:
        open(os.path.join(d, f".probe-{os.getpid()}"), "w").close()
    except OSError:
        pass

print("probe-done", flush=True)
