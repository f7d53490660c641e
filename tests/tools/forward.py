"""`forward.py LISTEN TARGET`: pass TCP connections on every address's port
LISTEN to 127.0.0.1:TARGET, both ways, until killed. For a test only: it
lets a port Docker publishes on the host's 127.0.0.1 reach a server that
listens on the container's own 127.0.0.1."""
import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # a half-close passed on, not a reset
    except OSError:
        pass


async def main(listen: int, target: int) -> None:
    async def connected(reader, writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        writer.close()
        upstream_writer.close()

    server = await asyncio.start_server(connected, "0.0.0.0", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
