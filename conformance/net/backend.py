"""The network backend under the suite's httpx clients for plain-HTTP targets: asyncio sockets.

Rules:
- httpx's async client reads through httpcore's network backend; its default (anyio) wraps every
  read in a cancel scope and a protocol buffer, and connects through a task group. A stream the
  suite judges arrives in thousands of small writes (the reference engine writes 1 to 97 bytes at
  a time, as real servers' chunking does), so that per-read and per-connection cost was most of
  what the suite's sending cost over a bare synchronous httpx client (benchmarks/bench_suite.py).
  `SocketBackend` does the same on plain non-blocking sockets with `loop.sock_recv` /
  `loop.sock_sendall`: a read that finds bytes waiting returns them without a trip through the
  event loop; one that finds none waits on the socket as anyio does.
- Reads are what they were: one `recv` of at most httpcore's read size, returned as it came, so
  the chunks and their arrival times the transport records are the same.
- Errors map to httpcore's exceptions the way its anyio backend maps them (refused or unreachable:
  ConnectError; a reset or broken pipe: ReadError / WriteError; a read or write past its timeout:
  ReadTimeout / WriteTimeout; the connect timeout: ConnectTimeout), so the transport's error kinds
  do not change. Addresses are tried in getaddrinfo's order, one after the other, as httpx's
  synchronous client does.
- Plain HTTP only: `use_socket_backend(client, url)` installs it for an `http://` target and leaves
  an `https://` one (TLS) and proxied requests on httpx's default. It touches one private
  attribute of httpx (the transport's connection pool); when a future httpx has none, the client
  keeps its default backend and nothing else changes.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpcore
import httpx
from httpcore._utils import is_socket_readable


class SocketStream(httpcore.AsyncNetworkStream):
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        sock = self._sock
        try:
            return sock.recv(max_bytes)  # bytes already waiting: no event-loop round trip
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            raise httpcore.ReadError(exc) from exc
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.get_running_loop().sock_recv(sock, max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.get_running_loop().sock_sendall(self._sock, buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.WriteError(exc) from exc

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the socket backend carries plain HTTP only (use_socket_backend skips https)")

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._sock
        if info == "is_readable":  # httpcore asks before reusing a kept-alive connection
            return is_socket_readable(self._sock)
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        return None  # ssl_object and the rest: none on a plain socket


class SocketBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options=None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                try:  # an address literal needs no resolver (and no worker thread for one)
                    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
                except socket.gaierror:
                    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                last: OSError | None = None
                for family, kind, proto, _, address in infos:
                    sock = socket.socket(family, kind, proto)
                    try:
                        sock.setblocking(False)
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        for option in socket_options or ():
                            sock.setsockopt(*option)
                        if local_address:
                            sock.bind((local_address, 0))
                        await loop.sock_connect(sock, address)
                        return SocketStream(sock)
                    except BaseException as exc:
                        sock.close()
                        if not isinstance(exc, OSError):
                            raise
                        last = exc
                raise last or OSError(f"no address for {host}:{port}")
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ConnectError(exc) from exc

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options=None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the socket backend connects over TCP only")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def use_socket_backend(client: httpx.AsyncClient, url: str) -> httpx.AsyncClient:
    """Put the socket backend under `client` for a plain-HTTP `url` (module rules); returns client."""
    if not url.lower().startswith("http://"):
        return client
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = SocketBackend()
    return client
