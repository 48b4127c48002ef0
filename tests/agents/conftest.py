"""A real OpenSSH server on 127.0.0.1 for the ``HOST:PATH`` tests, with throw-away keys.

``sshd`` (Debian's openssh-server; ``.ci/run`` installs it) runs in the foreground on a free port with
its own host key, public-key login for this user with a key made here, and ``PasswordAuthentication``
on (so a client without the key is one that would be asked for a password). The client side is an
ssh config file (``A1X_TUI_SSH="ssh -F FILE"``) naming the host ``a1xtest``, its key and a temporary
known_hosts holding the server's key, with ``StrictHostKeyChecking yes``: nothing of the user's own
~/.ssh is read or written. The far side's a1x-tui is this checkout (``A1X_TUI_REMOTE``)."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_server import Sshd

REPO = Path(__file__).resolve().parents[2]
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if not os.path.exists(SSHD) or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("OpenSSH (sshd, ssh, ssh-keygen) is not installed: apt-get install -y openssh-server")
    root = tmp_path_factory.mktemp("sshd")
    root.chmod(0o700)
    for name in ("host_key", "user_key", "other_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / name)], check=True)
    (root / "authorized_keys").write_text((root / "user_key.pub").read_text())
    (root / "authorized_keys").chmod(0o600)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # the privilege separation folder sshd wants
    port = _free_port()
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
        "PubkeyAuthentication yes\nPasswordAuthentication yes\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nAllowStreamLocalForwarding yes\n"
        "X11Forwarding no\nPrintMotd no\nLogLevel ERROR\n"
    )
    host_pub = (root / "host_key.pub").read_text().split()
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    user = getpass.getuser()
    common = (
        f"  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {root / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
    )
    (root / "ssh_config").write_text(
        f"Host a1xtest\n{common}  IdentityFile {root / 'user_key'}\n"
        f"Host a1xnokey\n{common}  IdentityFile {root / 'other_key'}\n"
        f"Host a1xunknown\n{common.replace(str(root / 'known_hosts'), '/dev/null')}  IdentityFile {root / 'user_key'}\n"
    )
    with open(root / "sshd.log", "wb") as log:
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(root / "sshd_config")], stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if process.poll() is not None:
                pytest.fail(f"sshd did not start: {(root / 'sshd.log').read_text()}")
            time.sleep(0.1)
    server = Sshd(root, port, process, root / "ssh_config")
    probe = subprocess.run(["ssh", "-F", str(server.config), "-o", "BatchMode=yes", "a1xtest", "true"],
                           capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        process.terminate()
        pytest.fail(f"cannot log in to the test sshd: {probe.stderr.strip()} / {(root / 'sshd.log').read_text()}")
    yield server
    process.terminate()
    process.wait(10)
