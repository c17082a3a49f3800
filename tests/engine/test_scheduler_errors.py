"""``--scheduler`` pointing at something that is not a Dask scheduler: exit 2, never a hang or
an internal error (a break-it pass: an HTTP reply was read as a 3 EiB message length → exit 3;
a silent web server hung past Dask's own 10 s timeout)."""

from __future__ import annotations

import socket
import threading

import pytest

from xpuperf.errors import UsageError

pytest.importorskip("dask.distributed")


def _server(reply: bytes | None) -> tuple[str, socket.socket]:
    """A TCP server on a free port that answers ``reply`` to each connection (None: says
    nothing and keeps the connection open)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            if reply is None:
                held.append(conn)
                continue
            try:
                conn.recv(100)
                conn.sendall(reply)
            except OSError:
                pass
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"tcp://127.0.0.1:{srv.getsockname()[1]}", srv


def test_http_reply_is_not_a_scheduler() -> None:
    from distributed import Client

    from xpuperf.engine.dask_engine import _connect

    address, srv = _server(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)
    try:
        with pytest.raises(UsageError, match="does not speak the Dask protocol"):
            _connect(Client, address)
    finally:
        srv.close()


def test_a_silent_server_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import Client

    from xpuperf.engine import dask_engine

    monkeypatch.setattr(dask_engine, "CONNECT_TIMEOUT_S", 1.0)
    address, srv = _server(None)
    try:
        with pytest.raises(UsageError, match=r"no Dask scheduler answered .* within 1 s"):
            dask_engine._connect(Client, address)
    finally:
        srv.close()
