"""Writes the receipts in this folder with the code of the checkout it runs in (they were
written by main at 7c608c9, before the typed Receipt): `python tests/data/main_receipt/make.py`.
test_receipt_contract.py reads them back and writes the same inputs again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def inputs(root: Path) -> Path:
    """The skill every receipt here measured (the test rebuilds it the same way)."""
    from tests.helpers import make_skill

    return make_skill(root / "lib", "greeter", {"notes.md": "be kind\n"})


def write(root: Path, sign_key: Path | None) -> bytes:
    from tests.helpers import engine_receipt

    skill = inputs(root)
    run = engine_receipt(
        skill,
        "run-main",
        {"baseline": "WWWWWLT", "incumbent": "WLWUWWW"},
        triggers={"method": "agent builtin", "recall": 0.5, "precision": 1.0, "tp": 1},
        sign_key=sign_key,
    )
    return (run / "receipt.json").read_bytes()


if __name__ == "__main__":
    sys.path.insert(0, str(Path.cwd()))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SKILLBENCH_HOME"] = str(Path(tmp) / "home")
        (HERE / "unsigned.json").write_bytes(write(Path(tmp) / "a", None))
        key = HERE / "key"
        if not key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci@team", "-f", str(key)],
                check=True,
            )
        pub = (HERE / "key.pub").read_text().split()
        (HERE / "allowed_signers").write_text(f"ci@team {pub[0]} {pub[1]}\n")
        shutil.rmtree(Path(tmp) / "a")
        (HERE / "signed.json").write_bytes(write(Path(tmp) / "b", key))
