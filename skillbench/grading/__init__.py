"""Verdicts a model gives: judge.py (the rubric judge of a tied row), expect.py (the
`expect:` check) and framing.py (untrusted text framed for either, the verdict read back)."""
