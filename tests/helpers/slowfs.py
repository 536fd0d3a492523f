#!/usr/bin/python3
"""A FUSE filesystem whose reads are slow, for the findings tests.

    slowfs.py MOUNTPOINT DELAY_MS [WRITE_DELAY_MS]

One file, /data (64 MiB of zeros); every read sleeps DELAY_MS first.
With WRITE_DELAY_MS the file is 1 GiB and writable: every write sleeps
WRITE_DELAY_MS, then its data is dropped (reads still return zeros: a
device for a raw writer beside a reader, not for a filesystem).
Mounted with direct_io (no page cache in front of the delay). Runs in the
foreground; the test kills it and lazily unmounts."""
import errno
import stat
import sys
import time

try:
    from fuse import FUSE, FuseOSError, Operations
except ImportError:  # Debian's python3-fusepy names the module fusepy
    from fusepy import FUSE, FuseOSError, Operations

SIZE = 64 << 20


class SlowFS(Operations):
    def __init__(self, delay, write_delay=None):
        self.delay = delay
        self.write_delay = write_delay

    def getattr(self, path, fh=None):
        now = time.time()
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, st_ctime=now, st_mtime=now, st_atime=now)
        if path == "/data":
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=SIZE, st_ctime=now, st_mtime=now, st_atime=now)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "data"]

    def open(self, path, flags):
        return 0

    def write(self, path, data, offset, fh):
        if self.write_delay is None:
            raise FuseOSError(errno.EROFS)
        time.sleep(self.write_delay)
        return len(data)

    def truncate(self, path, length, fh=None):
        if self.write_delay is None:
            raise FuseOSError(errno.EROFS)
        return 0

    def read(self, path, size, offset, fh):
        time.sleep(self.delay)
        if offset >= SIZE:
            return b""
        return bytes(min(size, SIZE - offset))


if __name__ == "__main__":
    write_delay = None
    if len(sys.argv) > 3:
        write_delay = float(sys.argv[3]) / 1000.0
        SIZE = 1 << 30
    FUSE(SlowFS(float(sys.argv[2]) / 1000.0, write_delay), sys.argv[1], foreground=True, nothreads=False, direct_io=True)
