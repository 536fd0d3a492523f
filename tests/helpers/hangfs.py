#!/usr/bin/python3
"""A FUSE filesystem that hangs on demand, for the hung-mount tests.

    hangfs.py MOUNTPOINT FLAGFILE

One file, /data (64 MiB of zeros). While FLAGFILE exists, getattr and
statfs sleep (for as long as the flag stays: a stat of the mount then hangs,
uninterruptibly once the request is read). read never sleeps. Runs in the
foreground; the test kills it with SIGKILL and lazily unmounts."""
import errno
import os
import stat
import sys
import time

try:
    from fuse import FUSE, FuseOSError, Operations
except ImportError:  # Debian's python3-fusepy names the module fusepy
    from fusepy import FUSE, FuseOSError, Operations

SIZE = 64 << 20


class HangFS(Operations):
    def __init__(self, flag):
        self.flag = flag

    def _maybe_hang(self):
        while os.path.exists(self.flag):
            time.sleep(0.2)

    def getattr(self, path, fh=None):
        self._maybe_hang()
        now = time.time()
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, st_ctime=now, st_mtime=now, st_atime=now)
        if path == "/data":
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=SIZE, st_ctime=now, st_mtime=now, st_atime=now)
        raise FuseOSError(errno.ENOENT)

    def statfs(self, path):
        self._maybe_hang()
        return dict(f_bsize=4096, f_frsize=4096, f_blocks=1 << 20, f_bfree=1 << 19, f_bavail=1 << 19)

    def readdir(self, path, fh):
        return [".", "..", "data"]

    def open(self, path, flags):
        return 0

    def read(self, path, size, offset, fh):
        if offset >= SIZE:
            return b""
        return bytes(min(size, SIZE - offset))


if __name__ == "__main__":
    FUSE(HangFS(sys.argv[2]), sys.argv[1], foreground=True, nothreads=False, attr_timeout=0, entry_timeout=0, direct_io=True)
