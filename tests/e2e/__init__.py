"""End-to-end tests: a real ``forewarn serve`` process observed over HTTP on loopback."""
