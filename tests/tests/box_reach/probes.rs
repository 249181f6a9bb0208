//! The attacks themselves: scripts an agent's command runs, each printing one `REPORT {json}`
//! line of what it reached. They try hard to reach the box's browser (CDP) and screen (X11,
//! VNC) and report every way that answered; the tests assert that none did, and each script
//! also reports a control that must work (so a probe that reaches nothing at all fails).

/// From the host (`exec_command`, a confined agent; the daemon runs as root here):
/// `python3 - <box's bridge IP> <pid of the box's init> <the box's merged rootfs>`.
/// - every TCP port of the box's bridge address, and what each open one speaks;
/// - the engine's forwarders (docker-proxy) for the box's address;
/// - the box's files through `/proc/<pid>/root` and the overlay's merged directory (control:
///   one of them shows the image's `box-port`): every UNIX socket file under /run, /tmp,
///   /dev/shm, spoken to as CDP (pipe framing and HTTP) and as X11 with the display's cookie
///   read the same way;
/// - the relay's abstract name from the host's network namespace.
pub const HOST: &str = r#"
import json, os, socket, stat, struct, sys, threading
ip, pid, merged = sys.argv[1], sys.argv[2], sys.argv[3]
report = {}

open_ports, lock = [], threading.Lock()
def scan(ports):
    for p in ports:
        s = socket.socket(); s.settimeout(1)
        try:
            if s.connect_ex((ip, p)) == 0:
                with lock: open_ports.append(p)
        finally:
            s.close()
threads = [threading.Thread(target=scan, args=(range(i, 65536, 64),)) for i in range(1, 65)]
for t in threads: t.start()
for t in threads: t.join()
report["open"] = sorted(open_ports)

def receive(s):
    """What the peer sends until it closes, stops for 2 s, or 64 KB (HTTP headers and body
    come in separate reads)."""
    data = b""
    try:
        while len(data) < 65536:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
    except OSError:
        pass
    return data

def talk(family, address, payloads):
    """What the peer answers to each payload (b"" when nothing, the error when refused:
    the sandbox's seccomp filter refuses even making an AF_UNIX socket)."""
    out = []
    for payload in payloads:
        s = None
        try:
            s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(2)
            s.connect(address); s.sendall(payload)
            out.append(receive(s))
        except OSError as e:
            out.append(("error: " + str(e)).encode())
        finally:
            if s is not None: s.close()
    return out

CDP_PIPE = b'{"id":1,"method":"Browser.getVersion"}\0'
CDP_HTTP = b"GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
def speaks(replies):
    text = b" ".join(replies)
    if b"Chrome/" in text or b"webSocketDebuggerUrl" in text: return "cdp"
    if text.startswith(b"RFB") or b" RFB 0" in text: return "rfb"
    return None
report["speaks"] = {str(p): speaks(talk(socket.AF_INET, (ip, p), [CDP_HTTP, CDP_PIPE, b""]))
                    for p in open_ports}

proxies = []
for d in filter(str.isdigit, os.listdir("/proc")):
    try: cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
    except OSError: continue
    if cmd and cmd[0].endswith(b"docker-proxy") and ip.encode() in cmd:
        proxies.append(b" ".join(cmd).decode())
report["proxies"] = proxies

roots, report["control"] = [], {}
for root in (f"/proc/{pid}/root", merged):
    try:
        report["control"][root] = open(f"{root}/usr/local/bin/box-port").readline().strip()
        roots.append(root)
    except OSError as e:
        report["control"][root] = "error: " + str(e)
cookie = None
for root in roots:
  try:
    raw = open(f"{root}/run/box/xauth", "rb").read()
    # family(2) then four length-prefixed fields: address, display, name, data
    i, fields = 2, []
    for _ in range(4):
        n = struct.unpack(">H", raw[i:i + 2])[0]; fields.append(raw[i + 2:i + 2 + n]); i += 2 + n
    if fields[2] == b"MIT-MAGIC-COOKIE-1": cookie = fields[3]
  except (OSError, struct.error, IndexError):
    pass
report["cookie_read"] = cookie is not None
def x11_setup(data):
    name = b"MIT-MAGIC-COOKIE-1" if data else b""
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<cxHHHHxx", b"l", 11, 0, len(name), len(data or b"")) + pad(name) + pad(data or b"")
found, cdp, x11 = [], [], []
for root in roots:
  for base in ("run", "tmp", "dev/shm"):
    for dirpath, dirs, files in os.walk(f"{root}/{base}"):
        for f in files:
            path = os.path.join(dirpath, f)
            try: mode = os.lstat(path).st_mode
            except OSError: continue
            if not stat.S_ISSOCK(mode): continue
            found.append(path[len(root):])
            # Relative to its directory: the overlay's paths pass the 108 bytes of sun_path.
            os.chdir(dirpath)
            replies = talk(socket.AF_UNIX, f, [CDP_PIPE, CDP_HTTP])
            if speaks(replies) == "cdp": cdp.append(path[len(root):])
            if talk(socket.AF_UNIX, f, [x11_setup(cookie)])[0][:1] == b"\x01":
                x11.append(path[len(root):])
report["socket_files"], report["cdp_files"], report["x11_files"] = found, cdp, x11
report["relay_from_host"] = talk(socket.AF_UNIX, b"\0lazyboy/cdp", [CDP_PIPE])[0].decode(errors="replace")
print("REPORT " + json.dumps(report))
"#;

/// From inside the box (`box_shell`, as the agents' user `box`): `python3 -`.
/// - the TCP ports listening in the container and whether one speaks CDP (control: the test
///   site on 8000 is listed);
/// - every UNIX socket (files and abstract names, from /proc/net/unix; control: the display's
///   abstract socket is listed and takes the connection), spoken to as CDP;
/// - the display without its cookie, and the cookie itself;
/// - the daemon's entry points (box-port, box-cdp, box-input, box-shot, box-browser);
/// - the profiles (read, rename) and the browser's process (signal, /proc files).
pub const INSIDE: &str = r#"
import json, os, socket, struct, subprocess
report = {}
listen = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        f = line.split()
        if f[3] == "0A": listen.add(int(f[1].rsplit(":", 1)[1], 16))
report["listen"] = sorted(listen)

def receive(s):
    data = b""
    try:
        while len(data) < 65536:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
    except OSError:
        pass
    return data

def talk(family, address, payload):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(2)
    try:
        s.connect(address); s.sendall(payload); return receive(s)
    except OSError as e:
        return ("error: " + str(e)).encode()
    finally:
        s.close()
CDP_PIPE = b'{"id":1,"method":"Browser.getVersion"}\0'
CDP_HTTP = b"GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
is_cdp = lambda b: b"Chrome/" in b or b"webSocketDebuggerUrl" in b
report["cdp_tcp"] = [p for p in listen for addr in ("127.0.0.1", "::1")
                     if is_cdp(talk(socket.AF_INET6 if ":" in addr else socket.AF_INET, (addr, p), CDP_HTTP))
                     or is_cdp(talk(socket.AF_INET6 if ":" in addr else socket.AF_INET, (addr, p), CDP_PIPE))]
names = set()
for line in open("/proc/net/unix").read().splitlines()[1:]:
    f = line.split()
    if len(f) >= 8: names.add(f[7])
report["unix"] = sorted(names)
report["cdp_unix"] = []
for name in sorted(names):
    address = b"\0" + name[1:].encode() if name.startswith("@") else name
    if is_cdp(talk(socket.AF_UNIX, address, CDP_PIPE)) or is_cdp(talk(socket.AF_UNIX, address, CDP_HTTP)):
        report["cdp_unix"].append(name)
setup = struct.pack("<cxHHHHxx", b"l", 11, 0, 0, 0)
report["x11_reply"] = talk(socket.AF_UNIX, b"\0/tmp/.X11-unix/X1", setup)[:1].hex()
def run(cmd):
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=20).returncode
    except subprocess.TimeoutExpired:
        return "timeout"
report["xdpyinfo"] = run(["env", "DISPLAY=:1", "xdpyinfo"])
report["tools"] = {" ".join(c): run(c) for c in (["box-port", "cdp"], ["box-port", "vnc"],
    ["box-cdp", "Browser.getVersion"], ["box-input", "getmouselocation"], ["box-shot"],
    ["box-browser", "default"])}
def denied(f):
    try: f(); return False
    except PermissionError: return True
    except OSError as e: return "OSError " + str(e)
pid = int(open("/run/box/chromium.pid").read())
report["denied"] = {
    "read the cookie": denied(lambda: open("/run/box/xauth", "rb").read()),
    "list the profiles": denied(lambda: os.listdir("/home/box/profiles")),
    "rename the profiles": denied(lambda: os.rename("/home/box/profiles", "/home/box/mine")),
    "signal the browser": denied(lambda: os.kill(pid, 0)),
    "read the browser's environment": denied(lambda: open(f"/proc/{pid}/environ", "rb").read()),
    "list the browser's descriptors": denied(lambda: os.listdir(f"/proc/{pid}/fd")),
    "write the profile to show": denied(lambda: open("/run/box/profile", "w").write("mine")),
}
report["whoami"] = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
print("REPORT " + json.dumps(report))
"#;
