# SPDX-License-Identifier: GPL-2.0-or-later
"""Running the ddpscope binary from the endpoint's Python tests: the binary is the first
command-line argument of the test (taken off sys.argv on import, before unittest reads it)."""
import os
import socket
import subprocess
import sys
import time

DDPSCOPE = sys.argv.pop(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*args):
    return subprocess.Popen([DDPSCOPE, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run(*args, timeout=60):
    return subprocess.run([DDPSCOPE, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def wait_port_file(path, timeout=5.0):
    """The port a listener started with --port-file wrote, once it is there."""
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        time.sleep(0.02)
    raise AssertionError("listener did not start")
