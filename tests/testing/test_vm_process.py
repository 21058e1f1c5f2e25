"""The plugin starts the program under test as a VM, unmodified (``forewarn.vm_process``:
``forewarn exec`` against the in-process forewarn): the hard-coded address answers as
that VM and the host name is its computer name."""

from __future__ import annotations

import pytest

USERS_TEST = """
import json
import subprocess

import pytest

URL = "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"
PROGRAM = (
    "import json, socket, urllib.request\\n"
    "req = urllib.request.Request(%r, headers={'Metadata': 'true'})\\n"
    "doc = json.loads(urllib.request.urlopen(req).read())\\n"
    "print(json.dumps([socket.gethostname(), [e['Resources'] for e in doc['Events']]]))\\n"
) % URL


@pytest.mark.forewarn(vm="web-1")
def test_my_program_sees_its_vm(forewarn, forewarn_vm):
    forewarn.trigger("user-reboot", forewarn_vm)
    proc = forewarn.vm_process(["python3", "-c", PROGRAM], vm=forewarn_vm,
                               stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert json.loads(out) == ["web-1", [["web-1"]]]


def test_an_unknown_vm_fails_plainly(forewarn):
    with pytest.raises(Exception, match="no VM 'nope'"):
        forewarn.vm_process(["true"], vm="nope")
"""


def test_a_subprocess_under_test_runs_as_a_vm(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users=USERS_TEST)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
