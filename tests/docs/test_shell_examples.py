"""Every shell command and Python snippet a reader would copy, in README.md and
docs/**/*.md, runs against a real server, page by page, and its shown output is compared
where a page shows it.

A block of language ``sh``, ``bash``, ``shell``, ``console`` or ``python`` runs, in order
with the page's other runnable blocks, in one bash session per page (tests/docs/pagerun.py:
a fresh directory as cwd and $HOME, the venv first on PATH, ``.venv`` linked to it; a
Python block from a file of its own, with the venv's Python), unless the HTML comment on
the line right before its fence says otherwise (tests/docs/examples.py):
``<!-- example: background -->`` starts a server and waits for its ports,
``<!-- example: output -->`` compares a ``console`` transcript's output (``...`` matches
anything), ``<!-- example: file NAME -->`` saves the block as NAME for later blocks,
``<!-- example: not run (REASON) -->`` and ``<!-- example: run by PATH -->`` say why the
runner leaves it (PATH's ``doc_examples()`` must return the block).

The fixed ports pages write (8169, 8170, 8443 and a few more: pagerun.DEFAULT_PORTS) are
replaced by free ones, consistently across a page's blocks, and given to the commands that
rely on defaults through ``FOREWARN_SERVE_IMDS_BIND``, ``FOREWARN_SERVE_CONTROL_BIND``,
``FOREWARN_REPLAY_IMDS_BIND`` and ``FOREWARN_CONTROL``; so pages run beside each other and
beside other tests. A page whose port is not in that list fails
``test_the_pages_use_only_ports_the_runner_moves``.
"""

from __future__ import annotations

import importlib
import re
import socket
import sys
from pathlib import Path

import pytest

from tests.docs.examples import (
    SHOWN_LANGUAGES,
    matches,
    page_name,
    page_paths,
    pages_to_run,
    runner_blocks,
    transcript,
)
from tests.docs.pagerun import (
    DEFAULT_PORTS,
    assert_page_runs,
    rewrite_ports,
    run_page,
    served_ports,
    venv_plan,
)
from tests.docs.readerenv import links_setup, setup_command
from tests.support.docpages import REPO, Block, Kind, MarkerError, parse_blocks


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A directory every pytest-xdist worker of this run shares (Get started's venv)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


#: The pages, those that install what they need first (the longest, and they need not wait
#: for Get started's venv: the first page it is lent to builds it meanwhile).
PAGES = sorted(pages_to_run(), key=lambda page: venv_plan(page) == "lent")


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_the_page_s_shell_examples_run(page: Path, session_dir: Path) -> None:
    assert_page_runs(page, session_dir)


def test_the_pages_spread_over_the_workers() -> None:
    """pytest-xdist hands each page out on its own (tests/conftest.py), so the pages'
    waits overlap on several workers; the rest of a file still goes to one worker."""
    from tests.conftest import work_unit

    here = f"{Path(__file__).relative_to(REPO).as_posix()}::"
    pages = [f"{here}{test_the_page_s_shell_examples_run.__name__}[{page_name(page)}]"
             for page in PAGES]  # fmt: skip
    assert len(pages) > 10, pages
    assert [work_unit(nodeid) for nodeid in pages] == pages
    assert work_unit(f"{here}test_every_example_runs_or_says_why") == here.removesuffix("::")


def test_every_example_runs_or_says_why() -> None:
    """A shell or Python block the runner leaves says why (a reason; a test module that
    runs it), a block in another language is one a reader only reads (a ``zsh`` or
    ``pycon`` block would be left unrun, unsaid), an ``output`` block is a ``console``
    transcript, a ``file`` block's NAME is used by a later block of its page, and every
    marker is one the convention knows."""
    problems = []
    for page in page_paths():
        try:
            blocks = parse_blocks(page.read_text(encoding="utf-8"))
        except MarkerError as error:
            problems.append(f"{page_name(page)}: {error}")
            continue
        for index, block in enumerate(blocks):
            where = f"{page_name(page)}:{block.line}"
            if not block.is_example and block.lang not in SHOWN_LANGUAGES:
                problems.append(f"{where}: a {block.lang} block, neither run nor only shown")
            if block.kind is Kind.NOT_RUN and len(block.detail.split()) < 2:
                problems.append(f"{where}: 'not run' without a reason")
            if block.kind is Kind.RUN_BY and (problem := _run_by_problem(block)):
                problems.append(f"{where}: run by {block.detail}: {problem}")
            if block.kind is Kind.OUTPUT and block.lang != "console":
                problems.append(f"{where}: an output block must be a console transcript")
            if block.kind is Kind.OUTPUT and not transcript(block.body):
                problems.append(f"{where}: an output block with no '$ ' command")
            if block.kind in (Kind.BACKGROUND, Kind.OUTPUT) and not block.is_shell:
                problems.append(f"{where}: a {block.lang or 'plain'} block marked to run")
            if block.kind is Kind.FILE and not any(
                later.runs_here and block.detail in later.body for later in blocks[index + 1 :]
            ):
                problems.append(f"{where}: file {block.detail}, which no later block uses")
    assert not problems, "\n".join(problems)


def _run_by_problem(block: Block) -> str:
    """Why ``run by PATH`` does not hold for ``block`` (empty when it does): PATH is a test
    module whose ``doc_examples()`` (the bodies of the blocks its tests run) has it."""
    path = REPO / block.detail
    if not path.is_file():
        return "which does not exist"
    if path.suffix != ".py" or not block.detail.startswith("tests/"):
        return "not a test module under tests/"
    module = importlib.import_module(".".join(Path(block.detail).with_suffix("").parts))
    read = getattr(module, "doc_examples", None)
    if read is None:
        return "which has no doc_examples() naming the blocks its tests run"
    if block.body not in read():
        return "whose doc_examples() does not return this block"
    return ""


def test_a_page_that_runs_forewarn_says_where_it_comes_from() -> None:
    """A page whose commands run ``forewarn`` says where it comes from: it links Get
    started's set-up (whose venv it activates), or makes a venv of its own; otherwise a
    reader in a new shell gets "forewarn: command not found"."""
    bare = re.compile(r"^(?:\$ )?forewarn\b", re.MULTILINE)
    silent = [
        page_name(page)
        for page in page_paths()
        if any(b.is_shell and bare.search(b.body) for b in parse_blocks(page.read_text("utf-8")))
        and not links_setup(page.read_text("utf-8"))
        and "python3 -m venv" not in page.read_text("utf-8")
    ]
    assert not silent, silent


def test_a_page_starts_one_server_on_each_address() -> None:
    """Followed top to bottom, a page never starts a second server on an address one of its
    blocks already serves (``Address already in use``), whoever runs the blocks: the
    runner, or a test module (``run by``)."""
    twice = []
    for page in page_paths():
        served: dict[tuple[str, int], int] = {}
        for block in parse_blocks(page.read_text("utf-8")):
            if not block.is_shell or block.kind is Kind.NOT_RUN:
                continue
            starts = [line for line in block.body.splitlines()
                      if re.search(r"\bforewarn serve\b", line)
                      and not re.search(r"--print-config|--help", line)]  # fmt: skip
            for line in starts:
                ports = {port: port for port in DEFAULT_PORTS}
                for address in served_ports(line, ports):
                    if address in served:
                        twice.append(f"{page_name(page)}:{block.line}: {address} "
                                     f"(served since line {served[address]})")  # fmt: skip
                    served.setdefault(address, block.line)
    assert not twice, twice


def test_the_pages_use_only_ports_the_runner_moves() -> None:
    """A loopback port written in a runnable block is one the runner replaces by a free
    one; another would clash between pages, or with a server a reader runs."""
    strays = [
        f"{page_name(page)}:{block.line}: {found.group(0)}"
        for page in page_paths()
        for block in runner_blocks(page)
        for found in re.finditer(r"(?:127\.0\.0\.1|localhost):(\d+)", block.body)
        if int(found.group(1)) not in DEFAULT_PORTS
    ]
    assert not strays, strays


def test_a_marker_reads_as_the_convention_says() -> None:
    text = (
        "<!-- example: not run (needs a real Azure VM) -->\n```sh\nreboot\n```\n\n"
        "<!-- example: background -->\n```sh\nforewarn serve\n```\n"
        "```console\n$ forewarn --version\nforewarn, version ...\n```\n"
        "<!-- example: run by tests/x.py -->\n```python\nprint()\n```\n"
        "<!-- example: file etc/drill.yaml -->\n```yaml\nsteps: []\n```\n"
        "```python\nprint(1)\n```\n```yaml\nsteps: []\n```\n"
    )
    assert [(b.line, b.lang, b.kind, b.detail, b.runs_here) for b in parse_blocks(text)] == [
        (2, "sh", Kind.NOT_RUN, "needs a real Azure VM", False),
        (7, "sh", Kind.BACKGROUND, "", True),
        (10, "console", Kind.RUN, "", True),
        (15, "python", Kind.RUN_BY, "tests/x.py", False),
        (19, "yaml", Kind.FILE, "etc/drill.yaml", True),
        (22, "python", Kind.RUN, "", True),
        (25, "yaml", Kind.RUN, "", False),
    ]
    with pytest.raises(MarkerError, match="unknown marker"):
        parse_blocks("<!-- example: skip -->\n```sh\ntrue\n```\n")
    with pytest.raises(MarkerError, match="unknown marker"):
        parse_blocks("<!-- example: file ../outside.py -->\n```python\npass\n```\n")
    with pytest.raises(MarkerError, match="no fenced block"):
        parse_blocks("<!-- example: background -->\n\n```sh\ntrue\n```\n")


def test_a_fence_closes_on_a_bare_fence_at_least_as_long() -> None:
    """A page showing a page (a ``` block in a ```` one) is one block; a fence never
    closed is an error, not a block that swallows the rest of the page."""
    [outer] = parse_blocks("````markdown\n```sh\necho hi\n```\n````\ntext\n")
    assert (outer.line, outer.end, outer.lang) == (1, 5, "markdown")
    assert outer.body == "```sh\necho hi\n```\n"
    with pytest.raises(MarkerError, match="line 3: a fence never closed"):
        parse_blocks("text\n\n```sh\necho hi\n")


def test_shown_output_matches_with_ellipses() -> None:
    [first, second] = transcript("$ a \\\n> --b\none\n...\nthree x\n$ c\n")
    assert (first.command, second.command) == ("a \\\n--b", "c")
    assert (first.shown, second.shown) == (["one", "...", "three x"], [])
    assert matches(first.shown, ["one", "two", "2b", "three x  "])
    assert matches(first.shown, ["one", "three x"])
    assert not matches(first.shown, ["one", "three y"])
    assert not matches(first.shown, ["one", "three x", "four"])
    assert matches(["id 8C3A…, at ..."], ["id 8C3A-77, at 12:00"])
    assert not matches(["id 8C3A…"], ["id 9C3A"])


def test_ports_are_moved_where_they_are_ports_only() -> None:
    ports = {port: 30000 + index for index, port in enumerate(DEFAULT_PORTS)}
    text = "curl 127.0.0.1:8169/x --port 6391 p=8170 4000-8000-1 81690 :8443\n"
    assert rewrite_ports(text, ports) == (
        "curl 127.0.0.1:30000/x --port 30006 p=30001 4000-8000-1 81690 :30002\n"
    )
    ids = "4000-9000-1 id 9000-77 vm 8169a x=8443_b, ('127.0.0.1', 9000). [::1]:9465\n"
    assert rewrite_ports(ids, ports) == (
        "4000-9000-1 id 9000-77 vm 8169a x=8443_b, ('127.0.0.1', 30004). [::1]:30005\n"
    )


def test_the_runner_serves_moves_ports_compares_and_stops(tmp_path: Path) -> None:
    """A made-up page: a background server on the default ports (moved), a daemon of its
    own session, a Python file saved for a transcript whose second command prints other
    than shown, then a failing Python block; the session ends there, and the server and
    the daemon are gone with it."""
    page = (
        "```sh\nsource .venv/bin/activate\n```\n"
        "<!-- example: background -->\n```sh\nforewarn serve --db t.db\n```\n"
        "```sh\ncurl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8170/healthz\n"
        "setsid sleep 600 </dev/null >/dev/null 2>&1 &\necho $! > daemon.pid\n"
        "export GREETING=hello\n```\n"
        "<!-- example: file tools/ask.py -->\n```python\nimport os, urllib.request as u\n"
        "opener = u.build_opener(u.ProxyHandler({}))\n"
        "print(os.environ['GREETING'], opener.open('http://127.0.0.1:8170/healthz').status)\n"
        "```\n"
        "<!-- example: output -->\n```console\n$ echo one; echo two\none\n...\n"
        "$ forewarn --version\nforewarn, version 9.9\n$ python3 tools/ask.py\nhello 200\n```\n"
        "```python\nprint('python ran')\nraise SystemExit(3)\n```\n```sh\necho nor this\n```\n"
    )
    venv = Path(sys.prefix)  # lent as the clone's .venv (the runner's own test: any venv)
    result = run_page([b for b in parse_blocks(page) if b.runs_here], tmp_path, venv=venv)
    assert result.returncode == 3, result.output
    assert "nor this" not in result.output, result.output
    assert result.failed_block().startswith("::: line 30\npython ran\n"), result.output
    assert "\n200\n" in result.output, result.output
    assert [(c.line, c.ok) for c in result.compared] == [(21, True), (21, False), (21, True)]
    assert result.compared[1].actual and result.compared[1].actual[0].startswith("forewarn, ")
    checkout = tmp_path / "checkout"
    assert (checkout / "pyproject.toml").is_file()  # the page ran in a clone of the checkout
    assert "8170" not in (checkout / "tools" / "ask.py").read_text()
    assert sorted(result.leftovers) == ["daemon.pid", "tools/ask.py"]  # t.db is ignored
    log = result.background_logs[5]
    [control] = re.findall(r"control API on http://127\.0\.0\.1:(\d+)", log)
    assert int(control) != 8170 and not listened_on(int(control)), log
    daemon = int((checkout / "daemon.pid").read_text())
    assert not alive(daemon)


def test_a_page_has_nothing_of_the_test_run(tmp_path: Path) -> None:
    """No venv on PATH, the machine's python3, a HOME of its own and none of the test
    run's variables: a page that uses ``forewarn`` without a step that installs or
    activates it fails, as it would for a reader."""
    page = (
        '```sh\necho "home=$HOME"; echo "venv=${VIRTUAL_ENV:-none}"\n'
        "python3 -c 'import sys; print(\"prefix\", sys.prefix)'\n"
        "env | grep -c '^PYTEST_' || true\n```\n"
        "```sh\nforewarn --version\n```\n"
    )
    result = run_page([b for b in parse_blocks(page) if b.runs_here], tmp_path)
    assert result.returncode == 127, result.output
    assert f"home={tmp_path.resolve() / 'home'}" in result.output
    assert "venv=none" in result.output
    assert f"prefix {sys.prefix}" not in result.output
    assert "\n0\n" in result.output
    assert "forewarn: command not found" in result.failed_block(), result.output


def test_a_page_that_links_the_set_up_gets_its_venv_and_one_that_installs_more_runs_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Which pages the runner lends Get started's venv to (one that links its set-up and
    installs nothing), which run the set-up first (one that links it and installs more),
    and which get neither."""
    from tests.docs import pagerun

    calls: list[tuple[Path | None, str | None]] = []

    def run_page(
        blocks: list[Block], root: Path, venv: Path | None, setup: str | None
    ) -> pagerun.PageResult:
        """What a page that ran as written gives, and how it was asked to run."""
        calls.append((venv, setup))
        ran = "".join(f"::: line {block.line}\n" for block in blocks)
        return pagerun.PageResult(0, f"{ran}::: end\n")

    monkeypatch.setattr(pagerun, "shared_venv", lambda _: Path("/shared/.venv"))
    monkeypatch.setattr(pagerun, "run_page", run_page)
    pages = {
        "lent.md": "Follow [Get started](get-started.md#set-up).\n```sh\nforewarn --version\n```\n",
        "more.md": "Follow [Get started](get-started.md#set-up).\n```sh\npip install pytest\n```\n",
        "none.md": "```sh\nforewarn --version\n```\n",
    }
    for name, text in pages.items():
        (tmp_path / name).write_text(text)
        pagerun.assert_page_runs(tmp_path / name, tmp_path)
    assert calls == [(Path("/shared/.venv"), None), (None, setup_command()), (None, None)]
    assert setup_command().startswith("python3 -m venv .venv && .venv/bin/pip install -e")


def listened_on(port: int) -> bool:
    """Whether a server accepts connections on loopback ``port`` (a bind test would fail
    for a minute after it is gone: its closed connections wait in TIME_WAIT there)."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by init, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
