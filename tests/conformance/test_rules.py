"""The rules are one table: the kit, ``--rules`` and docs/conformance.md list the same;
and the kit's mistakes of use end in one line, sending nothing."""

from __future__ import annotations

from pathlib import Path

from forewarn.conformance.output import rules_markdown
from forewarn.conformance.rules import RULES
from tests.conformance.conftest import kit, lines_fit
from tests.support.serverproc import free_port

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
BEGIN = "<!-- the rules: `forewarn conformance --rules --markdown` writes what follows -->\n"
END = "<!-- end of the rules -->\n"


def test_the_docs_list_the_rules_the_kit_runs() -> None:
    text = DOCS.read_text("utf-8")
    table = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    assert table == rules_markdown()
    ran = kit("--rules", "--markdown")
    assert ran.code == 0 and ran.stdout == table


def test_rules_lists_every_rule_in_80_columns() -> None:
    ran = kit("--rules")
    assert ran.code == 0, ran.stderr
    lines_fit(ran.stdout)
    listed = [line.split()[0] for line in ran.stdout.splitlines() if not line.startswith(" ")]
    assert listed == [r.id for r in RULES]
    # each id names a rule of the contract, and each result line fits: id and title
    for r in RULES:
        assert (r.section[:1] in "RDPLS6" and r.section[1:].isdigit()) or r.section == "6"
        assert len(f"PASS {r.id:<19}{r.title}") <= 80, r.id


def test_mistakes_of_use_are_one_line(tmp_path: Path) -> None:
    kit("--approve", "http://127.0.0.1:1").assert_one_error_line("--approve and --skip-probes "
                                                                   "need --follow")  # fmt: skip
    kit("ftp://example").assert_one_error_line("must be an http:// URL")
    missing = tmp_path / "no-such-dir" / "rec.jsonl"
    kit("--record", str(missing), "http://127.0.0.1:1").assert_one_error_line(
        f"--record {missing}: No such file or directory"
    )
    assert not missing.parent.exists()


def test_an_endpoint_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    port = free_port()
    ran = kit(f"http://127.0.0.1:{port}", "--junit", str(tmp_path / "kit.xml"))
    line = ran.assert_one_error_line(f"http://127.0.0.1:{port} did not answer")
    assert "Connection refused" in line
    assert not (tmp_path / "kit.xml").exists()
