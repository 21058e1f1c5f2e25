"""Rehearsals: how a fleet reacted to maintenance, graded and reported.

Reads the facts the platform recorded (who saw which event when, who approved it); grades
them into verdicts; renders the report. Above the fabric, built by the composition root.
"""

from forewarn.rehearsal.verdicts import ReactionReport, grade

__all__ = ["ReactionReport", "grade"]
