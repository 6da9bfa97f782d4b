"""The team repo and what trusts it (docs/results.md, docs/trust.md): repo.py (published
versions, their evals and receipts), receipts.py, signing.py (SSH signatures), anchors.py
(the revisions the gate's trust anchors come from) and gate.py (the gate) over them."""
