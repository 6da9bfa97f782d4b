"""What a finished run is, read back without the engine: session and row records
(records.py), check results (checks.py), the journal (journal.py), the row and unit verdicts
(rows.py, verdict.py), the statistics (stats.py), sequential stopping (sequential.py), the
activation tallies (activation.py), the `Summary` (summary.py) and how it is derived from the
rows (score.py); a run folder and a set folder as a whole (run_folder.py, set_folder.py:
`skillbench.read_run`, `skillbench.read_set`). It imports nothing above it: the gate and
the reports read runs through it."""
