"""Rehearsals: how a fleet reacted to maintenance, recorded, graded and reported.

The tracker records the facts (who saw which event when, who approved it) from what the
fabric tells its observers and the endpoint serves; grading turns them into verdicts;
the report renders them. Above the fabric, built and wired by the composition root.
"""

from forewarn.rehearsal.facts import EventFacts, ReactionData, ReactionStore, VmPolls, VmReaction
from forewarn.rehearsal.grading import ReactionReport, grade
from forewarn.rehearsal.tracker import ReactionTracker, Track, track_reactions

__all__ = [
    "EventFacts",
    "ReactionData",
    "ReactionReport",
    "ReactionStore",
    "ReactionTracker",
    "Track",
    "VmPolls",
    "VmReaction",
    "grade",
    "track_reactions",
]
