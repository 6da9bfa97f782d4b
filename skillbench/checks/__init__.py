"""Running a case's checks in the checker (docs/formats.md): run.py (the check kinds' run-time
semantics) and the transcript in the formats imported graders read (optimizer_trace.py for
skill-optimizer, vally_trajectory.py for Vally)."""
