"""An in-memory file system for driving ``FileTail`` step by step (inodes, renames, truncation)."""

from __future__ import annotations

import itertools

from a1x_diagnostics.live._tail import UNREADABLE, FileId

_inodes = itertools.count(1)


class Inode:
    def __init__(self) -> None:
        self.ino = next(_inodes)
        self.data = bytearray()


class FakeHandle:
    def __init__(self, node: Inode, fs: FakeFs) -> None:
        self._node = node
        self._fs = fs
        self.closed = False

    @property
    def ident(self) -> FileId:
        return FileId(1, self._node.ino)

    def size(self) -> int:
        return len(self._node.data)

    def read(self, offset: int, size: int) -> bytes:
        assert not self.closed
        self._fs.reads += 1
        return bytes(self._node.data[offset : offset + size])

    def close(self) -> None:
        self.closed = True
        self._fs.open_handles -= 1


class FakeFs:
    def __init__(self) -> None:
        self.files: dict[str, Inode] = {}
        self.reads = 0
        self.open_handles = 0
        self.hidden: set[str] = set()  # paths that cannot be looked at (a permission flipped on them or above)

    # the FileSystem protocol
    def identity(self, path: str) -> FileId | None:
        if path in self.hidden:
            return UNREADABLE
        node = self.files.get(path)
        return None if node is None else FileId(1, node.ino)

    def open(self, path: str) -> FakeHandle | None:
        node = self.files.get(path)
        if node is None or path in self.hidden:
            return None
        self.open_handles += 1
        return FakeHandle(node, self)

    # what writers and log rotators do
    def write(self, path: str, data: bytes) -> None:
        self.files.setdefault(path, Inode()).data += data

    def write_to(self, node: Inode, data: bytes) -> None:
        """Write through an old descriptor (the file may be renamed or deleted)."""
        node.data += data

    def rename(self, src: str, dst: str) -> Inode:
        node = self.files.pop(src)
        self.files[dst] = node
        return node

    def unlink(self, path: str) -> Inode:
        return self.files.pop(path)

    def truncate(self, path: str, size: int = 0) -> None:
        del self.files[path].data[size:]
