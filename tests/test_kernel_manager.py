"""Kernels survive a busy machine: no TCP port can be taken from them while they start.

On a loaded machine a kernel takes seconds to start; jupyter_client has chosen its ports by then
and another process may have been given one of them (any outgoing connection gets an ephemeral
port). The kernel fails to bind, exits, and nbclient reports "Kernel died before replying to
kernel_info". Here the theft is made deterministic: the port is taken right after the connection
file is written.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
from jupyter_client.manager import AsyncKernelManager

from autograder.kernel_manager import PrivateSocketKernelManager


async def _start_with_a_port_taken(cls) -> str:
    manager = cls(kernel_name="python3")
    taken = []
    write = manager.write_connection_file

    def write_then_take(**kw):
        write(**kw)
        if manager.transport == "tcp":
            thief = socket.socket()
            thief.bind((manager.ip, manager.shell_port))
            thief.listen()
            taken.append(thief)

    manager.write_connection_file = write_then_take
    await manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)
        return "ready"
    except RuntimeError as error:
        return str(error)
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
        for thief in taken:
            thief.close()


def _run(coroutine):
    """``asyncio.run`` in a thread of its own: the worker may already run an event loop (Playwright's)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_a_taken_port_kills_a_tcp_kernel_but_not_ours():
    assert _run(_start_with_a_port_taken(AsyncKernelManager)) == "Kernel died before replying to kernel_info"
    assert _run(_start_with_a_port_taken(PrivateSocketKernelManager)) == "ready"


def test_each_kernel_has_its_own_private_socket_directory():
    import os
    import stat
    first, second = PrivateSocketKernelManager(), PrivateSocketKernelManager()
    try:
        assert first.transport == "ipc" and first.ip != second.ip
        folder = os.path.dirname(first.ip)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert len(first.ip) + len("-99999") < 100  # Unix socket path limit
    finally:
        first.cleanup_ipc_files()
        second.cleanup_ipc_files()
    assert not os.path.exists(os.path.dirname(first.ip))


def test_the_course_config_uses_it():
    from tests.nbrun_support import config
    assert config().ExecutePreprocessor.kernel_manager_class is PrivateSocketKernelManager
