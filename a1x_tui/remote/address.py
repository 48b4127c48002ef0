"""``HOST:PATH``, read as scp reads it: remote when a ``:`` comes before any ``/``.

``node1:/data/logs``, ``me@node1:runs/r1``, ``[fe80::1]:/logs`` and ``node1:~/logs`` are remote;
``/data/logs_10:00``, ``./a:b`` and ``logs/x:y`` are local, as with scp. One rule scp does not have:
a path that exists here is local even when it reads as ``host:path`` (a folder named
``logs_2026-12-01T10:00``), so a local run keeps working whatever its name. A host never starts with
``-`` (it would be read as an ssh option).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

_HOST = re.compile(r"^(?:[A-Za-z0-9_][A-Za-z0-9_.+-]*@)?(?:\[[0-9A-Fa-f:.%A-Za-z]+\]|[A-Za-z0-9_][A-Za-z0-9_.-]*)$")


@dataclass(frozen=True, slots=True)
class RemotePath:
    host: str  # what ssh is given: an alias of ~/.ssh/config, host, user@host or [ipv6]
    path: str  # on the far side, as typed (``~/`` expands there)

    def __str__(self) -> str:
        return f"{self.host}:{self.path}"

    def shell_word(self) -> str:
        """The path for the far side's shell: quoted, but a leading ``~/`` left to expand there."""
        return far_side_word(self.path)


def far_side_word(path: str) -> str:
    if path == "~":
        return "~"
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:]) if path[2:] else "~/"
    return shlex.quote(path)


def parse_remote(text: str | os.PathLike[str] | None) -> RemotePath | None:
    """The remote path ``text`` names, None for a local path (see the module's rule)."""
    if text is None or not isinstance(text, str):
        return None
    colon = text.find(":")
    if colon <= 0:
        return None
    slash = text.find("/")
    if 0 <= slash < colon:
        return None
    if text.startswith("["):  # [ipv6]:path
        end = text.find("]:")
        if end < 0:
            return None
        colon = end + 1
    host, path = text[:colon], text[colon + 1:]
    if not _HOST.match(host) or os.path.lexists(text):
        return None
    host = host.replace("[", "").replace("]", "")  # ssh takes an IPv6 address bare
    return RemotePath(host, path or ".")
