#!/usr/bin/python3
"""A FUSE filesystem with one file whose writes can be made slow, for a
loop device with a filesystem on it (the blocked-time tests).

    slowrwfs.py MOUNTPOINT BACKING SWITCH

One file, /data: reads and writes go to BACKING (an existing file, its
size the file's). While the file SWITCH exists it holds a rate in bytes
per second, and every write sleeps its size at that rate first, one write
at a time (a slow device whatever the request sizes). Runs in the
foreground; the test kills it and lazily unmounts."""
import errno
import os
import stat
import sys
import threading
import time

try:
    from fuse import FUSE, FuseOSError, Operations
except ImportError:  # Debian's python3-fusepy names the module fusepy
    from fusepy import FUSE, FuseOSError, Operations


class SlowRwFS(Operations):
    def __init__(self, backing, switch):
        self.fd = os.open(backing, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.switch = switch
        self.lock = threading.Lock()

    def getattr(self, path, fh=None):
        now = time.time()
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, st_ctime=now, st_mtime=now, st_atime=now)
        if path == "/data":
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=self.size, st_ctime=now, st_mtime=now, st_atime=now)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "data"]

    def open(self, path, flags):
        return 0

    def read(self, path, size, offset, fh):
        return os.pread(self.fd, size, offset)

    def write(self, path, data, offset, fh):
        with self.lock:
            try:
                with open(self.switch) as f:
                    rate = float(f.read().strip() or 0)
            except (OSError, ValueError):
                rate = 0
            if rate > 0:
                time.sleep(len(data) / rate)
            return os.pwrite(self.fd, data, offset)

    def fsync(self, path, datasync, fh):
        return 0

    def flush(self, path, fh):
        return 0

    def truncate(self, path, length, fh=None):
        return 0


if __name__ == "__main__":
    FUSE(SlowRwFS(sys.argv[2], sys.argv[3]), sys.argv[1], foreground=True, nothreads=False, direct_io=True)
