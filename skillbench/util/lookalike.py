"""Text as a reader sees it, for comparing what an adversary may respell: case, compatibility
forms (fullwidth, ligatures), accents, invisible format characters and letters that draw
nothing are set aside, and letters drawn like Latin ones are those letters. Used where a
respelling must not make two things differ: a trigger prompt and its twin (tune/splits.py),
nothing else now."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Cyrillic, Greek and Armenian letters drawn like Latin ones (after casefolding), as Unicode's
# confusables list (UTS #39) maps them: "аре" in Cyrillic reads, and routes, as "ape"
_SCRIPTS = str.maketrans(
    "асеһіјӏорԛѕԝхуԁɡοαικνρτυχϲϳօսոհցզքաɑǀ│",
    "acehijlopqswxydgoaikvptuxcjounhgqpwall",
)
# capitals drawn like Latin ones, before casefolding (whose small forms look unlike them;
# Cherokee's small letters casefold to its capitals, so the table is applied after too), and
# Lisu's letters, which have no case
_CAPITALS = str.maketrans(
    "АВЕКМНОРСТХУЅІЈԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹᎪᏴᏟᎠᎬᎻᏆᏦᏞᎷᏃᏢᏚᎢᏙᏔꓐꓑꓒꓓꓔꓖꓗꓙꓚꓜꓝꓟꓠꓡꓢꓣꓦꓧꓪꓫꓬꓮꓰꓲꓳꓴ",
    "ABEKMHOPCTXYSIJWABEZHIKMNOPTYXCABCDEHIKLMZPSTVWBPdDTGKJCZFMNLSRVHWXYAEIOU",
)
# letters that draw nothing (Hangul fillers, the braille blank), or only punctuation (a click
# letter drawn as `!`, the saltillo as `'`, the araea as a dot); modifier letters (tone
# marks, `ʼ`, `ー`) go with them
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800ǃꞌㆍ\u119e")
# Latin letters with a stroke, dotless, long, open, insular, in small capitals, squared,
# regional indicators...: the letter
_LATIN = re.compile(
    r"(?:[A-Z ]+ )?(?:LATIN (?:SMALL |CAPITAL )?LETTER|REGIONAL INDICATOR SYMBOL LETTER)"
    r" (?:[A-Z]+ )*([A-Z])(?: WITH .*)?"
)


# ASCII characters drawn alike, as Unicode's confusables list has them; i with them, as a
# capital I (in any compatibility form) is drawn as both i and l
_ASCII = str.maketrans("0|1i", "olll")


@lru_cache(maxsize=1)
def _confusables() -> dict[int, str]:
    """Every character Unicode's confusables list (UTS #39, the confusable-homoglyphs
    package's copy) draws like ASCII letters or digits (one, or two: ǁ is ll): those. The
    package keeps right-to-left characters between direction marks (`\u200e׀\u200e`), which
    are set aside, and lists some only under the ASCII letter they look like."""
    from confusable_homoglyphs.confusables import confusables_data

    marks = "\u200e\u200f"
    data = {k.strip(marks): [a["c"].strip(marks) for a in v] for k, v in confusables_data.items()}

    def ascii_of(char: str) -> str | None:
        found = [c for c in data.get(char, ()) if 0 < len(c) <= 2 and c.isascii() and c.isalnum()]
        return sorted(found, key=lambda c: (len(c), c.isupper()))[0] if found else None

    table: dict[int, str] = {}
    for char, alike in data.items():
        if len(char) != 1 or char.isascii():
            continue
        # (one step further: a character drawn like one that is drawn like a Latin letter)
        seen = ascii_of(char) or next(filter(None, (ascii_of(c) for c in alike)), None)
        if seen:
            table[ord(char)] = seen
    for char, alike in data.items():  # (listed under the ASCII letter only)
        if len(char) == 1 and char.isascii() and char.isalnum():
            for other in alike:
                if len(other) == 1 and not other.isascii():
                    table.setdefault(ord(other), char)
    return table


def fold(text: str) -> str:
    """`text` folded as above: casefolded, NFKD with its marks, format characters, modifier
    and blank letters dropped (they split no word for a reader), look-alikes made Latin (the
    tables above, then Unicode's confusables list), digits drawn like letters made letters."""
    alike = _confusables()
    # compatibility forms first (fullwidth and mathematical letters, the long s): their
    # letter, not whatever the confusables list draws them like; but the tables above before
    # them too, as NFKC turns some look-alikes into other letters (the lunate sigma ϲ, drawn
    # as c, into a final sigma, which is drawn as o)
    text = text.translate(_CAPITALS).translate(_SCRIPTS)
    text = unicodedata.normalize("NFKC", text)
    for _ in range(2):  # (again after casefolding: small forms fold to capitals, and back)
        text = text.translate(_CAPITALS).translate(_SCRIPTS).translate(alike)
        text = text.translate(_ASCII).casefold()
    folded = unicodedata.normalize("NFKD", text)
    kept = "".join(
        c for c in folded if unicodedata.category(c) not in ("Mn", "Cf", "Lm") and c not in _BLANK
    )
    return "".join(_letter(c) for c in kept.casefold().translate(_SCRIPTS)).translate(_ASCII)


@lru_cache(maxsize=4096)
def _letter(c: str) -> str:
    if c.isascii():
        return c
    if unicodedata.category(c) == "Nd":  # a digit of any script: ٣ is 3
        return str(unicodedata.digit(c))
    found = (
        _LATIN.fullmatch(unicodedata.name(c, "")) if unicodedata.category(c)[0] in "LS" else None
    )
    return found.group(1).lower() if found else c
