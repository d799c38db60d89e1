"""Kernels that talk over private Unix sockets instead of TCP ports (``nbgrader validate``, notebook tests).

jupyter_client chooses a kernel's five TCP ports by binding port 0 and closing the socket, then
starts the kernel, which binds them again. On a busy machine that start takes seconds, and any
outgoing connection of any process (a Dask client, a browser, a database driver) may be given one
of those ephemeral ports in between: the kernel then fails with ``Address already in use``, exits,
and the client reports "Kernel died before replying to kernel_info" (this is what made the suite
fail under load; ``tests/test_kernel_manager.py`` reproduces it). With ``transport = "ipc"`` there
are no ports to lose. jupyter_client's own default IPC path (``kernel-ipc-N`` in the current
directory, N picked by checking which files exist) would merely move the race; each kernel here
gets a fresh private directory (mode 0700) instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from jupyter_client.manager import AsyncKernelManager
from traitlets import default


class PrivateSocketKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` (nbclient's and so nbgrader's default) on IPC in its own directory."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("ip")
    def _default_ip(self) -> str:
        if self.transport != "ipc":
            return super()._ip_default()
        # Short path: a Unix socket path is limited to ~107 bytes.
        self._socket_dir = tempfile.mkdtemp(prefix="m6k-", dir="/tmp" if os.path.isdir("/tmp") else None)
        return os.path.join(self._socket_dir, "kernel")

    def cleanup_ipc_files(self) -> None:
        super().cleanup_ipc_files()
        folder = getattr(self, "_socket_dir", None)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
