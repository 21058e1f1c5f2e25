"""Send a fixed series of requests on one keep-alive connection to HOST:PORT (from
SOURCE, if given) and print every response's bytes as they came (its Date masked):
the same program, run inside ``forewarn exec`` and from the VM's own address outside,
prints the same bytes when the relay changes nothing.

Standard library only: ``python exchange.py HOST PORT [SOURCE]``.
"""

import re
import socket
import sys

SE = "/metadata/scheduledevents?api-version=2020-07-01"


def read_response(sock, buffer):
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            return buffer, b""
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    match = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    length = int(match.group(1)) if match else 0
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return rest[length:], head + b"\r\n\r\n" + rest[:length]


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    source = (sys.argv[3], 0) if len(sys.argv) > 3 else None
    sock = socket.create_connection((host, port), timeout=30, source_address=source)
    buffer = b""
    etag = b""
    requests = [
        f"GET {SE} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n",
        "etag",
        f"GET {SE} HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
        "GET /metadata/versions HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n",
        "GET /metadata/instance/compute/name?api-version=2021-02-01&format=text HTTP/1.1\r\n"
        "Host: 169.254.169.254\r\nMetadata: true\r\n\r\n",
        f"POST {SE} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n"
        "Content-Length: 9\r\n\r\nnot json!",
        "GET /api/v1/topology HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n",
    ]
    for request in requests:
        if request == "etag":
            request = (
                f"GET {SE} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n"
                f"If-None-Match: {etag.decode()}\r\n\r\n"
            )
        sock.sendall(request.encode())
        buffer, response = read_response(sock, buffer)
        found = re.search(rb"(?im)^etag:\s*(\S+)", response)
        if found and not etag:
            etag = found.group(1)
        sys.stdout.write(re.sub(r"(?im)^date: .*$", "Date: -", response.decode()) + "\n----\n")
    sock.close()


main()
