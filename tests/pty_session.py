"""Drive a program in a pseudo-terminal, as a person at a terminal would: it is the session leader with the
pty as its controlling terminal, so Ctrl-C (b"\\x03") typed outside raw mode reaches it as SIGINT.

    with PtySession([...], env=..., cwd=...) as term:
        term.expect("kbindex> ")          # waits (with a timeout) until the text appears on the screen
        term.send(b"hello\\r")
        term.send(b"\\x04")
        assert term.wait() == 0

The session answers the terminal's cursor-position requests, as a terminal emulator does. Matching is on the output with terminal escape sequences removed; each ``expect`` searches only the output
after the previous match. No timing is asserted: timeouts only bound how long a broken run hangs.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78]|[\r\x07]")


CPR_REQUEST = b"\x1b[6n"   # prompt_toolkit asks where the cursor is (it shows the bottom toolbar once it knows)


def plain(text: str) -> str:
    return ANSI.sub("", text)


def _controlling_tty() -> None:        # in the child, after setsid (start_new_session)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtySession:
    def __init__(self, argv: list[str], *, env: dict, cwd: str | os.PathLike | None = None,
                 rows: int = 30, cols: int = 110):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        env.pop("PROMPT_TOOLKIT_NO_CPR", None)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True, preexec_fn=_controlling_tty, close_fds=True)
        os.close(slave)
        self.master = master
        self.raw = b""
        self.pos = 0          # in plain(): where the next expect starts searching

    @property
    def screen(self) -> str:
        return plain(self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:          # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.raw += data
        for _ in range(data.count(CPR_REQUEST)):   # answer as a terminal does: the cursor is on row 1
            self.send(b"\x1b[1;1R")
        return True

    def expect(self, text: str, timeout: float = 30) -> str:
        """Wait until ``text`` appears after the previous match; returns the output up to and including it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen
            found = screen.find(text, self.pos)
            if found >= 0:
                start, self.pos = self.pos, found + len(text)
                return screen[start:self.pos]
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear within {timeout}s; output after the last "
                                     f"match:\n{screen[self.pos:]!r}")
            if not self._read(0.2) and self.proc.poll() is not None:
                raise AssertionError(f"the program exited ({self.proc.returncode}) before {text!r}; output "
                                     f"after the last match:\n{screen[self.pos:]!r}")

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait(self, timeout: float = 30) -> int:
        """The exit code, reading output until the program ends."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not exit within {timeout}s:\n{self.screen[self.pos:]!r}")
            self._read(0.1)
        while self._read(0):
            if not select.select([self.master], [], [], 0)[0]:
                break
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self.master)

    def __enter__(self) -> "PtySession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
