"""What the test packages share, in one place (no test package imports another's conftest
for these):

- ``waiting``: ``wait_until``, polling a condition with a clear message on time-out.
- ``marks``: ``SLOW`` / ``slow``, the marks of long end-to-end tests.
- ``fabrics``: ``make_fabric`` and the builders and observers of a fabric in process.
- ``serverproc``: ``ServerProcess``, a real ``forewarn serve`` on free loopback ports.
- ``liveserver``: an ASGI app under a real uvicorn in a thread, and raw HTTP/1.1 requests.
- ``cli``: the ``forewarn`` command run as a user runs it, and the checks of its result.
- ``faults``: real storage faults (a small tmpfs that fills up or turns read-only).
- ``wire``: wire facts written down once from the contract (the api-versions).
"""
