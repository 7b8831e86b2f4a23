"""Several listener processes on one port, so delivery uses every core: one Python process runs on
one at a time (the GIL), and parsing and the ORM keep it busy.

The parent accepts each connection and hands it (SCM_RIGHTS over a Unix socket) to the process
serving the fewest sessions; a session then stays in that process from LHLO to QUIT, so each
message is delivered by exactly one process. SO_REUSEPORT would let the kernel spread connections
by a hash of their addresses instead: the few long-lived sessions Postfix keeps often land
unevenly (four sessions on two processes: three to one or four to none in five cases of eight).
A process that ends stops the listener (its supervisor restarts it), as a crash of the single
process did.
"""
import logging
import multiprocessing
import os
import select
import signal
import socket
import sys
import threading
from dataclasses import dataclass

from django.db import connections

from mailcore.inbound.server import HAND_OVER, handed_controller
from mailcore.store.lmtp import parse_hostport

log = logging.getLogger(__name__)


@dataclass
class _Child:
    process: multiprocessing.Process
    channel: socket.socket  # the parent's end of the Unix socket connections are handed over
    handed: int = 0  # sessions handed to it so far


class ListenerProcesses:
    """The parent: binds the port, starts the processes, hands each connection to the least busy."""

    def __init__(self, listen: str, *, processes: int, max_message_bytes: int):
        self.address = parse_hostport(listen, 2424)
        self.count = processes
        self.max_message_bytes = max_message_bytes
        self._context = multiprocessing.get_context("fork")  # the children share the loaded Django
        self._ended = self._context.Array("q", processes, lock=False)  # sessions each child has closed
        self._children: list[_Child] = []
        self._next = 0  # round robin among equally busy processes
        self._socket: socket.socket | None = None

    def start(self) -> None:
        host, port = self.address
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        self._socket = socket.create_server(self.address, family=family, backlog=128)
        self.address = self._socket.getsockname()[:2]
        connections.close_all()  # no database connection may be shared across a fork
        sys.stdout.flush()  # nor output buffered before it (a child flushes its copy when it ends)
        sys.stderr.flush()
        for index in range(self.count):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            inherited = [self._socket, *(child.channel for child in self._children), ours]
            process = self._context.Process(target=_serve_handed, name=f"mail_listener-{index + 1}",
                                            args=(index, theirs, inherited, self._ended, self.max_message_bytes))
            process.start()
            theirs.close()
            self._children.append(_Child(process, ours))

    def serve(self, stopping: threading.Event) -> bool:
        """Hand connections over until `stopping` is set (True) or a process has ended (False)."""
        while not stopping.is_set():
            if not all(child.process.is_alive() for child in self._children):
                log.error("a listener process ended (exit codes %s); stopping",
                          [child.process.exitcode for child in self._children])
                return False
            ready, _, _ = select.select([self._socket], [], [], 0.5)
            if ready:
                self._hand_over()
        return True

    def sessions(self) -> list[int]:
        """Open sessions per process (handed over and not yet closed)."""
        return [child.handed - self._ended[index] for index, child in enumerate(self._children)]

    def stop(self) -> None:
        """Stop accepting, then let each process finish as SIGTERM stops a single listener."""
        if self._socket is not None:
            self._socket.close()
        for child in self._children:
            if child.process.is_alive():
                os.kill(child.process.pid, signal.SIGTERM)
        for child in self._children:
            child.process.join(timeout=30)
            if child.process.is_alive():
                child.process.kill()
                child.process.join()
            child.channel.close()

    def _hand_over(self) -> None:
        try:
            connection, _ = self._socket.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        with connection:
            busy = self.sessions()
            index = min(range(self.count), key=lambda i: (busy[i], (i - self._next) % self.count))
            child = self._children[index]
            try:
                socket.send_fds(child.channel, [HAND_OVER], [connection.fileno()])
            except OSError:  # that process has just ended: the sender sees a dropped connection and retries
                log.warning("listener process %s took no session", index + 1, exc_info=True)
                return
            child.handed += 1
            self._next = index + 1


def _serve_handed(index: int, channel: socket.socket, inherited: list[socket.socket], ended,
                  max_message_bytes: int) -> None:
    """A child: serve the sessions the parent hands over until SIGTERM or the parent is gone."""

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    for parents_socket in inherited:  # the port and the parent's channel ends stay the parent's alone:
        parents_socket.close()        # when it is gone, the port is free and each child sees its channel end

    def session_ended() -> None:
        ended[index] += 1  # only this process's loop thread writes its slot

    controller = handed_controller(channel, on_session_end=session_ended, on_parent_gone=stopping.set,
                                   max_message_bytes=max_message_bytes)
    controller.start()
    try:
        stopping.wait()
    finally:
        controller.stop()
