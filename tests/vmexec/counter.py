"""Counts every signal ``forewarn exec`` passes on, as COMMAND (the system's python3, the
standard library only): ``NAME N`` a line as each arrives (N: how many so far), the totals
when SIGTERM comes, then exit 0. ``--kill-group`` first sends SIGUSR1 to its own process
group (what a script's ``kill 0`` does). ``continued`` a line when continued after a stop.

Signals are taken with ``sigwaitinfo`` as they come, one by one: a handler would merge
copies that arrive before the interpreter runs it.
"""

import os
import signal
import sys

COUNTED = {
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGTERM,
}
counts = {number: 0 for number in sorted(COUNTED)}
signal.pthread_sigmask(signal.SIG_BLOCK, {*COUNTED, signal.SIGCONT})
if "--kill-group" in sys.argv:
    os.kill(0, signal.SIGUSR1)
print("ready", flush=True)
while True:
    number = signal.sigwaitinfo({*COUNTED, signal.SIGCONT}).si_signo
    if number == signal.SIGCONT:
        print("continued", flush=True)
        continue
    counts[number] += 1
    print(f"{signal.Signals(number).name[3:]} {counts[number]}", flush=True)
    if number == signal.SIGTERM:
        totals = " ".join(f"{signal.Signals(n).name[3:]}={c}" for n, c in counts.items())
        print(f"totals {totals}", flush=True)
        sys.exit(0)
