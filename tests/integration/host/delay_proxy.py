#!/usr/bin/python3
"""delay_proxy.py - a TCP proxy that delays every server->client byte by a fixed
time, so a client behind it sees watch events (and every response) late while
other clients talk to the server directly. Used by host.sh for the
read-your-writes test: the watcher watches through the proxy, the controller
writes straight to kubesim.

usage: delay_proxy.py UPSTREAM_HOST:PORT DELAY_MS   (prints the local port, then serves)
"""
import asyncio
import sys
import time


async def pump_now(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def pump_delayed(reader, writer, delay):
    queue = asyncio.Queue()

    async def release():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.ensure_future(release())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((time.monotonic() + delay, data))
    except (ConnectionError, asyncio.CancelledError):
        pass
    queue.put_nowait((time.monotonic() + delay, None))
    try:
        await task
    except Exception:
        pass


async def main():
    host, port = sys.argv[1].rsplit(":", 1)
    delay = int(sys.argv[2]) / 1000.0

    async def handle(creader, cwriter):
        try:
            ureader, uwriter = await asyncio.open_connection(host, int(port))
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pump_now(creader, uwriter), pump_delayed(ureader, cwriter, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
