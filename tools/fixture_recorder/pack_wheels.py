"""Pack wheel folders into one small archive for the device's 64 MiB carry limit, and unpack it there.

usage: pack_wheels.py pack ARCHIVE.tar.xz DIR [DIR ...]     (here)
       pack_wheels.py unpack ARCHIVE.tar.xz DEST               (on the device: DEST/<basename of each DIR>/)

Each wheel is rewritten as an uncompressed (stored) zip with the same members, names, dates and RECORD (a
wheel's hashes are of its members, not of the zip, so pip installs it as before); a wheel present in several
folders with the same bytes is kept once (hard links, which tar stores as links); the tar is xz-compressed
as a whole. The three wheel sets of 0.4.4, 0.4.7 and 747d1bd (73 MB of distinct wheels) travel as 36 MB.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import sys
import tarfile
import tempfile
import zipfile


def _stored_copy(src: str, dst: str) -> None:
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zo:
        for info in zi.infolist():
            data = zi.read(info)
            info.compress_type = zipfile.ZIP_STORED
            zo.writestr(info, data)


def pack(archive: str, dirs: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        seen: dict[str, str] = {}  # sha256 of the original wheel -> its stored copy
        for d in dirs:
            out = os.path.join(tmp, os.path.basename(os.path.normpath(d)))
            os.makedirs(out)
            for name in sorted(os.listdir(d)):
                if not name.endswith(".whl"):
                    continue
                src = os.path.join(d, name)
                with open(src, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                dst = os.path.join(out, name)
                if digest in seen:
                    os.link(seen[digest], dst)
                else:
                    _stored_copy(src, dst)
                    seen[digest] = dst
        with tarfile.open(archive, "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
            for d in sorted(os.listdir(tmp)):
                tar.add(os.path.join(tmp, d), arcname=d)
    print(f"{archive}: {os.path.getsize(archive)} bytes, {len(seen)} distinct wheels")


def unpack(archive: str, dest: str) -> None:
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        if hasattr(tarfile, "tar_filter"):  # Python >= 3.12 (and late 3.8-3.11 releases)
            tar.extractall(dest, filter="tar")
        else:
            tar.extractall(dest)  # our own archive
    for d in sorted(os.listdir(dest)):
        print(f"{dest}/{d}: {len(os.listdir(os.path.join(dest, d)))} wheels")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "pack":
        pack(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
