"""Text as a reader sees it, for comparing what an adversary may respell: case, compatibility
forms (fullwidth, ligatures), accents, invisible format characters and letters that draw
nothing are set aside, and letters drawn like Latin ones are those letters. Used where a
respelling must not make two things differ: a trigger prompt and its twin (tune/splits.py),
a verdict key planted in framed material (grading/framing.py)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Cyrillic, Greek and Armenian letters drawn like Latin ones (after casefolding), as Unicode's
# confusables list (UTS #39) maps them: "аре" in Cyrillic reads, and routes, as "ape"
_SCRIPTS = str.maketrans(
    "асеһіјӏорԛѕԝхуԁɡοαικνρτυχϲϳօսոհցզքաɑǀ",
    "acehijlopqswxydgoaikvptuxcjounhgqpwal",
)
# capitals drawn like Latin ones, before casefolding (whose small forms look unlike them;
# Cherokee's small letters casefold to its capitals, so the table is applied after too), and
# Lisu's letters, which have no case
_CAPITALS = str.maketrans(
    "АВЕКМНОРСТХУЅІЈԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧᎪᏴᏟᎠᎬᎻᏆᏦᏞᎷᏃᏢᏚᎢᏙᏔꓐꓑꓒꓓꓔꓖꓗꓙꓚꓜꓝꓟꓠꓡꓢꓣꓦꓧꓪꓫꓬꓮꓰꓲꓳꓴ",
    "ABEKMHOPCTXYSIJWABEZHIKMNOPTYXABCDEHIKLMZPSTVWBPdDTGKJCZFMNLSRVHWXYAEIOU",
)
# letters that draw nothing (Hangul fillers, the braille blank), or only punctuation (a click
# letter drawn as `!`, the saltillo as `'`, the araea as a dot); modifier letters (tone
# marks, `ʼ`, `ー`) go with them
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800ǃꞌㆍ\u119e")
# Latin letters with a stroke, dotless, or in small capitals: the letter itself
_LATIN = re.compile(
    r"LATIN (?:SMALL |CAPITAL )?LETTER (?:SMALL CAPITAL |DOTLESS )?([A-Z])(?: WITH .*)?"
)


def fold(text: str) -> str:
    """`text` folded as above: casefolded, NFKD with its marks, format characters, modifier
    and blank letters dropped (they split no word for a reader), look-alikes made Latin."""
    cased = text.translate(_CAPITALS).casefold().translate(_CAPITALS).casefold()
    folded = unicodedata.normalize("NFKD", cased)
    kept = "".join(
        c for c in folded if unicodedata.category(c) not in ("Mn", "Cf", "Lm") and c not in _BLANK
    )
    return "".join(_letter(c) for c in kept.casefold().translate(_SCRIPTS))


@lru_cache(maxsize=4096)
def _letter(c: str) -> str:
    if c.isascii():
        return c
    if unicodedata.category(c) == "Nd":  # a digit of any script: ٣ is 3
        return str(unicodedata.digit(c))
    found = _LATIN.fullmatch(unicodedata.name(c, "")) if unicodedata.category(c)[0] == "L" else None
    return found.group(1).lower() if found else c
