"""The kit's rules as data: id (the contract rule it checks first), what it sends, what it
expects. ``forewarn conformance --rules`` and docs/conformance.md print this one table.

A rule whose request and expectation fit ``Send`` and ``Expect`` is run as it stands
(``probes.run_plain``); the others say in words what they send and expect, and are
checked by ``instance`` (section 6), ``answers`` (rules comparing answers), ``probes``
(the versions, and what every answer shows), ``documents`` (every document received) or
``lifecycle`` (``--follow``). A rule is checked on every run unless it is ``follow`` (only
with ``--follow``) or ``burst`` (only with ``--burst``: it exceeds the rate limit on
purpose).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

from forewarn.contract import (
    BAD_VERSION,
    FORWARDED_NOT_ALLOWED,
    METADATA_HEADER_MISSING,
    METHOD_NOT_ALLOWED,
    MISSING_VERSION,
    NEWEST_VERSIONS,
    NOT_FOUND,
    SUPPORTED_VERSIONS,
    TOO_MANY_REQUESTS,
)

__all__ = [
    "INSTANCE_VERSION",
    "NEWEST",
    "RULES",
    "SCHEDULED",
    "UNKNOWN",
    "Expect",
    "Rule",
    "Send",
    "rule",
]

SCHEDULED = "/metadata/scheduledevents"
INSTANCE = "/metadata/instance"
#: The api-version every request uses unless a rule is about versions.
NEWEST = SUPPORTED_VERSIONS[-1]
#: The instance-metadata version forewarn's client reads (``forewarn.client``).
INSTANCE_VERSION = "2021-02-01"
#: Stands for a fresh random EventId, upper-case, that no endpoint can know.
UNKNOWN = "{unknown}"

_METADATA = (("Metadata", "true"),)
_JSON = (("Metadata", "true"), ("Content-Type", "application/json"))
_UNKNOWN_BODY = '{"StartRequests": [{"EventId": "' + UNKNOWN + '"}]}'

When = Literal["always", "follow", "burst"]
Kind = Literal["any", "document", "empty", "error", "json"]


@dataclass(frozen=True, slots=True)
class Send:
    """One request, as data (``version`` None leaves api-version out)."""

    method: str = "GET"
    path: str = SCHEDULED
    version: str | None = NEWEST
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = _METADATA
    body: str | None = None
    #: The request line in absolute form (``GET http://host/path``), as through a proxy.
    absolute: bool = False

    def target(self) -> str:
        """Path and query string."""
        query = ([("api-version", self.version)] if self.version is not None else []) + list(
            self.query
        )
        return self.path + ("?" + urlencode(query, safe="-") if query else "")

    def describe(self) -> str:
        """The request in a line of words."""
        headers = ", ".join(f"{name}: {value}" for name, value in self.headers) or "no headers"
        text = f"{self.method} {'<absolute> ' if self.absolute else ''}{self.target()} ({headers})"
        return text + (f" {self.body}" if self.body else "")


@dataclass(frozen=True, slots=True)
class Expect:
    """What the answer must be: a status, a body of some ``kind``, headers."""

    status: int
    kind: Kind = "any"
    #: The whole body as JSON, when ``kind`` is "json".
    json: Any = None
    #: An error text the answer must not carry (when the status alone cannot tell).
    not_error: str | None = None
    #: Header values (compared ignoring case and spaces; a list's order ignored).
    headers: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """The expectation in a line of words."""
        body = {
            "any": "",
            "document": " and a Scheduled Events document",
            "empty": " with an empty body",
            "error": ' and {"error": "<why>"}',
            "json": " " + json.dumps(self.json),
        }[self.kind]
        text = f"{self.status}{body}"
        if self.not_error is not None:
            text += f", not {json.dumps(self.not_error)}"
        for name, value in self.headers:
            text += f", {name}: {value}"
        return text


@dataclass(frozen=True, slots=True)
class Rule:
    """One observable rule of the contract; ``id`` is ``<contract rule>.<name>``."""

    id: str
    #: How the contract knows it: doc (Microsoft's articles), seen (real payloads), ours.
    tag: str
    title: str
    sends: Send | str
    expects: Expect | str
    when: When = "always"

    @property
    def section(self) -> str:
        """The contract rule checked (``R5``, ``D8``; ``6`` for section 6)."""
        return self.id.split(".", 1)[0]

    @property
    def plain(self) -> bool:
        """Run as the data says (no function of its own)."""
        return isinstance(self.sends, Send) and isinstance(self.expects, Expect)

    def sends_text(self) -> str:
        return self.sends if isinstance(self.sends, str) else self.sends.describe()

    def expects_text(self) -> str:
        return self.expects if isinstance(self.expects, str) else self.expects.describe()


def _error(text: str) -> dict[str, Any]:
    return {"error": text}


def _version_error(text: str) -> dict[str, Any]:
    return {"error": text, "newest-versions": list(NEWEST_VERSIONS)}


_HEADER = Expect(400, "json", _error(METADATA_HEADER_MISSING))
_BAD = Expect(400, "json", _version_error(BAD_VERSION))
_DOC = Expect(200, "document")
_REFUSED = Expect(400, "error")
_EACH = "every document the run received (each api-version's, and --follow's polls)"
_VERSIONS = "the document at each api-version, as R3.versions fetched it"
_FOLLOWED = "the documents polled while following events (--follow)"

RULES: tuple[Rule, ...] = (
    # ---- versions and paths (section 1)
    Rule("R3.versions", "doc", "every documented api-version is accepted",
         f"GET the document at each of {', '.join(SUPPORTED_VERSIONS)}",
         "200 and a Scheduled Events document at each"),
    Rule("R4.missing", "doc", "a missing api-version is refused, newest ones listed",
         Send(version=None), Expect(400, "json", _version_error(MISSING_VERSION))),
    Rule("R4.unknown", "doc", "an unknown api-version is refused",
         Send(version="2099-01-01"), _BAD),
    Rule("R4.latest", "doc", "`latest` (the pre-2017 form) is refused",
         Send(version="latest"), _BAD),
    Rule("R4.malformed", "doc", "a malformed api-version is refused",
         Send(version="2020-7-1"), _BAD),
    Rule("R2.extra-query", "seen", "other query parameters (format=json) are tolerated",
         Send(query=(("format", "json"),)), _DOC),
    Rule("R1.path-case", "ours", "the path is matched ignoring case",
         Send(path="/metadata/scheduledEvents"), _DOC),
    Rule("R11.absolute-form", "ours", "a request line in absolute form is served",
         Send(absolute=True), _DOC),
    # ---- headers
    Rule("R5.required", "doc", "a GET without the Metadata header is refused",
         Send(headers=()), _HEADER),
    Rule("R5.wrong-value", "doc", "Metadata: false is refused",
         Send(headers=(("Metadata", "false"),)), _HEADER),
    Rule("R5.name-case", "doc", "the header name is case-insensitive (metadata: true)",
         Send(headers=(("metadata", "true"),)), _DOC),
    Rule("R5.value-case", "seen", "the value is case-insensitive (Metadata: True)",
         Send(headers=(("Metadata", "True"),)), _DOC),
    Rule("R5.instance", "doc", "instance metadata also needs the Metadata header",
         Send(path=INSTANCE, version=INSTANCE_VERSION, headers=()), _HEADER),
    Rule("R6.post-2017-03-01", "ours", "2017-03-01 accepts a POST without Metadata",
         Send("POST", version="2017-03-01", headers=(), body=_UNKNOWN_BODY),
         Expect(400, "error", not_error=METADATA_HEADER_MISSING)),
    Rule("R6.post-2017-08-01", "doc", "from 2017-08-01 a POST needs Metadata too",
         Send("POST", version="2017-08-01", headers=(), body=_UNKNOWN_BODY), _HEADER),
    Rule("R7.forwarded", "doc", "a request with X-Forwarded-For is refused",
         Send(headers=(*_METADATA, ("X-Forwarded-For", "10.0.0.4"))),
         Expect(400, "json", _error(FORWARDED_NOT_ALLOWED))),
    Rule("R8.rate-limit", "doc", "more than 5 requests a second get 429",
         "8 GETs at once (only with --burst: it spends the VM's budget on purpose)",
         f'429 {{"error": "{TOO_MANY_REQUESTS}"}} for some', "burst"),
    Rule("R9.method", "doc", "other methods are refused, GET and POST named",
         Send("PUT", body=""),
         Expect(405, "json", _error(METHOD_NOT_ALLOWED), headers=(("Allow", "GET, POST"),))),
    Rule("R9.unknown-path", "ours", "an unknown metadata path is 404",
         Send(path="/metadata/nothing-here"), Expect(404, "json", _error(NOT_FOUND))),
    Rule("R10.content-type", "doc", "JSON answers say application/json; charset=utf-8",
         "every request of the run that got JSON back",
         "Content-Type: application/json; charset=utf-8"),
    Rule("R10.compact", "seen", "documents are compact JSON",
         _VERSIONS, "no whitespace between tokens"),
    Rule("R10.keep-alive", "doc", "a connection serves several requests",
         "two GETs of the document on one connection",
         "both answered 200, the connection kept open"),
    Rule("R12.etag", "seen", 'every document carries ETag: "<DocumentIncarnation>"',
         "every document received before --follow", "an ETag naming the document's incarnation"),
    Rule("R12.not-modified", "seen", "If-None-Match of the current ETag gets 304",
         'GET with If-None-Match: "<current incarnation>"', "304 with an empty body"),
    Rule("R12.weak", "ours", 'a weak tag W/"<n>" matches too',
         'GET with If-None-Match: W/"<current incarnation>"', "304 with an empty body"),
    Rule("R12.unparseable", "ours", "If-None-Match 0 or null never matches",
         "GET with If-None-Match: 0, then null", "200 and the document, each time"),
    # ---- the document (section 2)
    Rule("D1.integer", "doc", "DocumentIncarnation is a JSON integer",
         _EACH, "an integer >= 0"),
    Rule("D1.one-counter", "ours", "every api-version shows the same incarnation",
         _VERSIONS, "the same DocumentIncarnation (unless it changed in between)"),
    Rule("D1.never-decreases", "doc", "DocumentIncarnation never decreases",
         "every document of the run, in the order received", "each >= the one before"),
    Rule("D2.key-order", "seen", "keys come in the order real payloads have",
         _EACH, "DocumentIncarnation, Events; EventId, EventStatus, ... DurationInSeconds"),
    Rule("D3.event-id", "seen", "EventId is an upper-case GUID",
         _EACH, "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX, upper-case hex"),
    Rule("D4.status", "doc", "EventStatus is Scheduled or Started (nothing else)",
         _EACH, "Scheduled or Started"),
    Rule("D5.types", "doc", "event types newer than the api-version are left out",
         _EACH, "Freeze/Reboot/Redeploy; Preempt from 2017-11-01; Terminate from 2019-01-01"),
    Rule("D6.resource-type", "doc", "ResourceType is VirtualMachine",
         _EACH, "VirtualMachine"),
    Rule("D7.resources", "seen", "Resources are names; _name for IaaS VMs at 2017-03-01",
         _EACH, "a list of strings; this VM as _name at 2017-03-01 only"),
    Rule("D8.not-before", "doc", 'NotBefore is RFC 1123 GMT, "" once Started',
         _EACH, 'Scheduled: "Mon, 19 Sep 2016 18:29:47 GMT"; Started: ""'),
    Rule("D9.description", "doc", "Description (from 2019-04-01) is a string",
         _EACH, "a string, maybe empty"),
    Rule("D10.event-source", "doc", "EventSource (from 2019-08-01) is Platform or User",
         _EACH, "Platform or User"),
    Rule("D11.duration", "doc", "DurationInSeconds (from 2020-07-01) is an integer",
         _EACH, "a JSON integer, -1 or more"),
    Rule("D12.absent", "doc", "fields newer than the api-version are absent, not null",
         _EACH, "no Description before 2019-04-01, no EventSource before 2019-08-01, "
         "no DurationInSeconds before 2020-07-01"),
    # ---- approvals (section 3), none approving anything
    Rule("P4.not-json", "doc", "a body that is not JSON is refused",
         Send("POST", headers=_JSON, body='{"StartRequests": ['), _REFUSED),
    Rule("P4.missing", "doc", "a body without StartRequests is refused",
         Send("POST", headers=_JSON, body="{}"), _REFUSED),
    Rule("P4.empty", "ours", "an empty StartRequests is refused",
         Send("POST", headers=_JSON, body='{"StartRequests": []}'), _REFUSED),
    Rule("P4.no-event-id", "doc", "an entry without a string EventId is refused",
         Send("POST", headers=_JSON, body='{"StartRequests": [{"Id": "x"}]}'), _REFUSED),
    Rule("P4.unknown-id", "doc", "an EventId this VM cannot see is refused",
         Send("POST", headers=_JSON, body=_UNKNOWN_BODY), _REFUSED),
    Rule("P1.content-type", "seen", "the body is JSON whatever the Content-Type",
         "P4.unknown-id's body as form-urlencoded, then with no Content-Type",
         "the answer P4.unknown-id got"),
    Rule("P2.incarnation-key", "seen", "an extra DocumentIncarnation key is ignored",
         'P4.unknown-id\'s body with "DocumentIncarnation": "1"',
         "the answer P4.unknown-id got"),
    # ---- around the endpoint (section 6)
    Rule("6.versions", "doc", "/metadata/versions lists api-versions",
         Send(path="/metadata/versions", version=None),
         '200 {"apiVersions": ["YYYY-MM-DD", ...]}'),
    Rule("6.instance", "doc", "instance metadata has the compute fields VMs read",
         f"GET {INSTANCE}?api-version={INSTANCE_VERSION} and the newest /metadata/versions "
         "lists", "compute.name, vmId, vmScaleSetName, platformUpdateDomain, "
         "platformFaultDomain, zone, location: strings (domains: digits)"),
    Rule("6.compute-name", "doc", "compute/name?format=text is the VM's name as text",
         f"GET {INSTANCE}/compute/name?api-version={INSTANCE_VERSION}&format=text",
         "200, the text of compute.name"),
    # ---- lifecycle (section 4), with --follow
    Rule("L1.notice", "doc", "an event gives at least the minimum notice of its type",
         _FOLLOWED, "NotBefore - first seen >= Freeze/Reboot 15 min, Redeploy 10 min, "
         "Preempt 30 s, Terminate 5 min (/ --time-scale, less --slack)", "follow"),
    Rule("D3.same-id", "doc", "an event keeps its EventId from Scheduled to its end",
         _FOLLOWED, "no event replaced by a new EventId when its status changes", "follow"),
    Rule("L3.forward", "doc", "an event never goes back from Started to Scheduled",
         _FOLLOWED, "Scheduled -> Started -> removed, never backwards", "follow"),
    Rule("L5.removed", "doc", "a Started event is removed after its impact",
         _FOLLOWED, "removed, no sooner than DurationInSeconds after Started", "follow"),
    Rule("D1.steps", "doc", "a document that changed has a new incarnation",
         _FOLLOWED, "a changed document has a higher DocumentIncarnation", "follow"),
    Rule("P3.approved", "doc", "an approval is answered 200 with an empty body",
         "with --approve: POST StartRequests of the events listing this VM",
         "200 with an empty body", "follow"),
    Rule("P1.several-ids", "doc", "several EventIds in one POST are all honoured",
         "with --approve, two or more events: one POST naming them all",
         "no event starts only once approved again alone", "follow"),
)  # fmt: skip

_BY_ID = {r.id: r for r in RULES}
assert len(_BY_ID) == len(RULES), "rule ids must be unique"


def rule(rule_id: str) -> Rule:
    """The rule called ``rule_id``."""
    return _BY_ID[rule_id]
