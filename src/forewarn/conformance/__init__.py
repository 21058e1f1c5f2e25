"""``forewarn conformance``: the wire contract's observable rules, run against an endpoint.

Users run it on a real Azure VM (or against any URL) to learn whether the endpoint still
behaves as forewarn emulates it; a FAIL names the contract rule, and ``--record`` keeps
every request and answer in the format ``forewarn replay`` plays, to hand back.

VM side: it imports only the contract and the client, never the emulator. The rules are
data (``rules.RULES``); the command, the docs and the tests list the same table.
"""
