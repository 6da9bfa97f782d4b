"""handover.py's decisions on the host, without a sandbox: which links lead where, what
`stage` cuts, what a repository's config keeps. (The whole handover runs in real checkers in
tests/security/test_checkphase_attacks.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skillbench.sandbox.inside import handover
from skillbench.sandbox.inside.handover import _Places, resolve, stage


def test_resolve_follows_links_like_the_kernel(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/f").write_text("x")
    os.symlink("sub", tmp_path / "d")
    os.symlink("d/../sub/f", tmp_path / "a")  # `..` of the resolved folder
    os.symlink("loop", tmp_path / "loop")
    os.symlink("nowhere", tmp_path / "dangling")
    os.symlink("sub/f/x", tmp_path / "notdir")
    end, met = resolve(str(tmp_path / "a"))  # type: ignore[misc]
    assert end == str(tmp_path / "sub/f") and met == [str(tmp_path / "a"), str(tmp_path / "d")]
    for name in ("loop", "dangling", "notdir"):
        assert resolve(str(tmp_path / name)) is None, name


def test_only_links_into_the_workspace_or_the_fixed_image_stay(tmp_path: Path) -> None:
    work, case = tmp_path / "work", tmp_path / "case"
    (work / "sub").mkdir(parents=True)
    case.mkdir()
    (case / "expected.txt").write_text("key")
    (work / "sub/real.txt").write_text("mine")
    places = _Places(str(work), ["/", str(work), str(case), "/proc"])
    links = {
        "alias": "sub/real.txt",
        "python": shutil.which("python3") or "/usr/bin/python3",  # the image
        "key": str(case / "expected.txt"),  # another mount
        "up": "../case/expected.txt",
        "proc": "/proc/self/root" + str(case / "expected.txt"),  # through /proc
        "above": str(tmp_path),  # a folder holding mounts
        "later": "tests/expected.txt",  # dangling: staging could bring it to life
    }
    for name, target in links.items():
        os.symlink(target, work / name)
    kept = sorted(name for name in links if places.safe(str(work / name)))
    assert kept == ["alias", "python"]


def test_stage_cuts_every_link_into_what_it_stages(tmp_path: Path) -> None:
    work, src = tmp_path / "work", tmp_path / "src"
    src.mkdir()
    (src / "expected.txt").write_text("key")
    (work / "tests").mkdir(parents=True)
    (work / "tests/expected.txt").write_text("decoy")
    (work / "mine.txt").write_text("mine")
    os.symlink("tests/expected.txt", work / "out.txt")
    os.symlink("tests", work / "d")
    os.symlink("d/expected.txt", work / "via")
    os.symlink("mine.txt", work / "alias")
    stage(str(src), str(work / "tests"), str(work))
    assert (work / "tests/expected.txt").read_text() == "key"
    for name in ("out.txt", "d", "via"):
        assert os.readlink(work / name).startswith(handover.CUT), name
        assert not (work / name).exists()
    assert (work / "alias").read_text() == "mine"


def test_stage_cuts_a_link_it_cannot_afford_to_follow(tmp_path: Path, monkeypatch) -> None:
    """Eleventh review: links with thousands of empty path parts used up the steps `stage`
    may take, and the link into the answer key it stages, read after them, was kept: the
    agent's output file was the staged key. Past the steps a link is taken to lead there."""
    work, src = tmp_path / "work", tmp_path / "src"
    src.mkdir()
    (src / "expected.txt").write_text("key")
    (work / "out").mkdir(parents=True)
    os.symlink("../tests/expected.txt", work / "out/result.txt")  # (walked after the top)
    for i in range(10):
        os.symlink("nonexist" + "/" * 3990, work / f"e{i}")
    monkeypatch.setattr(handover, "_left", [20_000])  # (a smaller budget)
    stage(str(src), str(work / "tests"), str(work))
    assert os.readlink(work / "out/result.txt").startswith(handover.CUT)
    assert not (work / "out/result.txt").exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_repositorys_config_keeps_only_what_reading_it_needs(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    config = tmp_path / ".git/config"
    with config.open("a") as fh:
        fh.write(
            '[remote "my.origin"]\n\turl = https://example.invalid/a \\"b\\".git\n'
            "\tuploadpack = evil\n[core]\n\tfsmonitor = /work/fsm\n"
            '[include]\n\tpath = ../evil.cfg\n[filter "x"]\n\tclean = evil\n'
            "[alias]\n\tst = !evil\n[user]\n\tname = A\\\\B\n"
        )
    note = handover._tame_git_config(str(config))
    assert note is not None and "filter.x.clean" in note and "include.path" in note
    listed = subprocess.run(
        ["git", "config", "--file", str(config), "--list"], capture_output=True, text=True
    ).stdout.splitlines()
    assert 'remote.my.origin.url=https://example.invalid/a "b".git' in listed
    assert "user.name=A\\B" in listed and "core.bare=false" in listed
    assert not [x for x in listed if "evil" in x or "fsmonitor" in x or "include" in x]
    assert handover._tame_git_config(str(config)) is None  # nothing left to drop


def test_places_copied_in_count_as_mount_points(tmp_path: Path, monkeypatch) -> None:
    """On the api channel /case, /tests, /solution are copied in (sandbox/podman/channel.py): a link
    into them must be cut as a link into a mount is."""
    listing = tmp_path / "copied-in"
    listing.write_text("/case\n/tests\n")
    monkeypatch.setattr(handover, "COPIED", str(listing))
    points = handover._mount_points()
    assert {"/case", "/tests", "/"} <= set(points)
    places = _Places("/work", points)
    assert not places.fixed("/case/expected.txt") and places.fixed("/usr/bin/python3")


# Each git config family that makes git run a program, as an agent would leave it in the
# workspace, and a command a check commonly runs that would start that program. `evil` stands
# for the program: it leaves a mark where the checker would copy the answer key.
_INIT = "git init -q . && git config user.email a@b && git config user.name a && "
_COMMIT = "echo a > a.txt && git add a.txt && git commit -qm a && "
_ATTR = "echo '* filter=x diff=x' > .gitattributes && echo b > a.txt"
_SIGNED = (  # a commit carrying a (bogus) signature: `git log` with showSignature verifies it
    "git cat-file commit HEAD | sed '/^committer /a gpgsig -----BEGIN PGP SIGNATURE-----\\n "
    "x\\n -----END PGP SIGNATURE-----' > c && git update-ref HEAD $(git hash-object -t commit "
    "-w c) && rm c"
)
GIT_FAMILIES = {
    "fsmonitor": (f"{_INIT}git config core.fsmonitor $EVIL", "git status -s"),
    "hooksPath": (
        f"{_INIT}{_COMMIT}mkdir h && cp $EVIL h/post-checkout && git config core.hooksPath h",
        "git checkout -q -B v",
    ),
    "filter.clean": (f'{_INIT}{_COMMIT}git config filter.x.clean "$EVIL"; {_ATTR}', "git status"),
    "filter.smudge": (
        f'{_INIT}{_COMMIT}git config filter.x.smudge "$EVIL"; {_ATTR} && rm a.txt',
        "git checkout -- a.txt",
    ),
    "filter.process": (
        f'{_INIT}{_COMMIT}git config filter.x.process "$EVIL"; {_ATTR}',
        "git status",
    ),
    "diff.external": (f'{_INIT}{_COMMIT}git config diff.external "$EVIL"; {_ATTR}', "git diff"),
    "diff.textconv": (f'{_INIT}{_COMMIT}git config diff.x.textconv "$EVIL"; {_ATTR}', "git diff"),
    "include.path": (
        f"{_INIT}{_COMMIT}printf '[core]\\n\\tfsmonitor = %s\\n' $EVIL > my.cfg && "
        "git config include.path ../my.cfg",
        "git status",
    ),
    "includeIf": (
        f"{_INIT}{_COMMIT}printf '[diff]\\n\\texternal = %s\\n' $EVIL > my.cfg && "
        "git config includeIf.gitdir:/.path $PWD/my.cfg && echo b > a.txt",
        "git diff",
    ),
    "core.sshCommand": (
        f"{_INIT}git config core.sshCommand $EVIL && git remote add origin ssh://h/r",
        "git fetch -q origin",
    ),
    "gpg.program": (
        f"{_INIT}{_COMMIT}{_SIGNED} && git config log.showSignature true && "
        "git config gpg.program $EVIL",
        "git log",
    ),
    # the repository's own hooks: the checker's core.hooksPath holds them off, but a check
    # that runs git with an environment of its own (env -i) drops it (outside review)
    "hooks": (
        f"{_INIT}{_COMMIT}cp $EVIL .git/hooks/post-checkout",
        "git checkout -q -B v",
    ),
    "hooks link": (
        f"{_INIT}{_COMMIT}mkdir h && cp $EVIL h/post-checkout && rm -r .git/hooks && "
        "ln -s ../h .git/hooks",
        "git checkout -q -B v",
    ),
    # the config is a link to a file of the agent's (not a regular file)
    "config link": (
        f'{_INIT}{_COMMIT}git config filter.x.clean "$EVIL"; {_ATTR} && '
        "mv .git/config notes.txt && ln -s ../notes.txt .git/config",
        "git status",
    ),
    # the repository's config comes from the folder `commondir` names, which has no HEAD
    "commondir": (
        f'{_INIT}{_COMMIT}git config filter.x.clean "$EVIL"; {_ATTR} && '
        "mkdir shared && mv .git/config .git/objects .git/refs shared/ && "
        "echo ../shared > .git/commondir",
        "git status",
    ),
}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("family", sorted(GIT_FAMILIES))
def test_no_git_config_of_the_agents_runs_a_program_for_the_checker(
    tmp_path: Path, family: str
) -> None:
    from skillbench.sandbox.checker_env import GIT_ENV

    work, mark = tmp_path / "work", tmp_path / "mark"
    work.mkdir()
    evil = tmp_path / "evil"
    evil.write_text(f'#!/bin/sh\ntouch {mark}\ncase "$*" in *upload-pack*) exit 1;; esac\ncat\n')
    evil.chmod(0o755)
    setup, check = GIT_FAMILIES[family]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "EVIL": str(evil)}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["sh", "-ec", setup], cwd=work, env=env, check=True, capture_output=True)
    # the attack works on the agent's own git: the test would prove nothing otherwise
    subprocess.run(["sh", "-c", check], cwd=work, env=env, capture_output=True, timeout=60)
    assert mark.exists(), f"{family}: the attack does not work even unhandled"
    mark.unlink()
    handover.hand_over(str(work), os.getuid(), os.getgid())
    checker = {"PATH": env["PATH"], "HOME": str(tmp_path / "home"), **GIT_ENV}
    bare = {"PATH": env["PATH"], "HOME": str(tmp_path / "home")}  # a check's own `env -i git`
    for given in (checker, bare):
        subprocess.run(["sh", "-c", check], cwd=work, env=given, capture_output=True, timeout=60)
        assert not mark.exists(), f"{family}: the agent's program ran as the checker"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_checks_git_still_reads_a_normal_repository(tmp_path: Path) -> None:
    from skillbench.sandbox.checker_env import GIT_ENV

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(
        [
            "sh",
            "-ec",
            f"{_INIT}{_COMMIT}git remote add origin https://e.invalid/r && echo c > a.txt",
        ],
        cwd=tmp_path,
        env=env,
        check=True,
    )
    handover.hand_over(str(tmp_path), os.getuid(), os.getgid())
    checker = {"PATH": env["PATH"], "HOME": str(tmp_path / "home"), **GIT_ENV}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path, env=checker, capture_output=True, text=True, check=True
        ).stdout

    assert git("status", "-s") == " M a.txt\n"
    assert "+c" in git("diff")
    assert "a\n" in git("log", "--format=%s") and git("config", "user.name") == "a\n"
    assert git("remote", "get-url", "origin") == "https://e.invalid/r\n"


def test_links_slow_to_resolve_are_cut_once_the_handovers_steps_run_out(
    tmp_path: Path, monkeypatch
) -> None:
    """Tenth review: links chained through long `x/..` targets cost ~0.1 s each to resolve, and
    thousands of them outlasted the host's wait for the handover: the arm was declared hung
    and a losing row went unscored. The handover resolves within a budget of steps; past it
    a link leads nowhere and is cut (fail closed), and the handover ends."""
    work = tmp_path / "work"
    (work / "x").mkdir(parents=True)
    (work / "end.txt").write_text("x")
    slow = "x/.." + "/x/.." * 500  # 1,000 steps a hop
    for i in range(10):  # c0 -> c1 -> ... -> c9 -> end.txt: ~10,000 steps to resolve c0
        os.symlink(f"{slow}/{f'c{i + 1}' if i < 9 else 'end.txt'}", work / f"c{i}")
    for i in range(20):
        os.symlink("c0", work / f"to{i}")
    monkeypatch.setattr(handover, "_STEPS", 400_000, raising=False)  # (a smaller budget)
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    # a few resolved within the budget and stay; the rest are cut, none taken as safe unread
    cut = [n for n in notes if n.endswith(", cut")]
    assert 0 < len(cut) < 30, notes
    assert (work / "end.txt").read_text() == "x"


def test_a_step_costs_as_many_lookups_as_its_path_has_parts(tmp_path: Path, monkeypatch) -> None:
    """Twelfth review: steps alone did not bound the handover, as a step's cost grows with
    the path (folders nested 1,800 deep): 2,000,000 of them took 178 s after a check whose
    host waited 135 s, and the losing arm went unscored. A step is charged the components of
    the path it looks up, so deep paths run the budget out and their links are cut."""
    work = tmp_path / "work"
    deep = work.joinpath(*["d"] * 300)
    (deep / "x").mkdir(parents=True)
    (deep / "end.txt").write_text("x")
    for i in range(20):  # ~350 steps each to resolve (the path's parts, then the target's)
        os.symlink("/".join(["x/.."] * 20) + "/end.txt", deep / f"l{i}")
    # enough steps for all 20, not lookups (~50,000 each, every step ~300 deep)
    monkeypatch.setattr(handover, "_STEPS", 25_000)
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    cut = [n for n in notes if n.endswith(", cut")]
    assert len(cut) >= 19, notes


def test_hard_links_past_the_copy_budget_are_removed_not_copied(
    tmp_path: Path, monkeypatch
) -> None:
    """Thirteenth review: each name of a hard-linked file gets its own copy, and a big file
    under hundreds of names took minutes (each copy filling the disk, failing, freed): the
    host's wait ran out. Past a budget of bytes, a name is removed instead."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "big").write_bytes(b"x" * 1000)
    for i in range(10):
        os.link(work / "big", work / f"name{i}")
    monkeypatch.setattr(handover, "_COPIES", 3 * (64 << 10), raising=False)  # (three copies)
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    removed = [n for n in notes if "past 0 MiB of copies, removed" in n]
    kept = [p for p in work.iterdir() if p.is_file()]
    # three copies, then names removed down to the last, a link no more
    assert len(removed) == 7 and len(kept) == 4, notes
    assert all(p.stat().st_nlink == 1 and p.read_bytes() == b"x" * 1000 for p in kept)


def test_empty_hard_linked_files_count_against_the_copy_budget(tmp_path: Path, monkeypatch) -> None:
    """Fourteenth review: the budget counted bytes, so millions of names of one empty file
    were all copied and the handover outlasted the host's wait. Each copy costs at least
    64 KiB of it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "empty").write_bytes(b"")
    for i in range(10):
        os.link(work / "empty", work / f"name{i}")
    monkeypatch.setattr(handover, "_COPIES", 3 * (64 << 10))
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    assert len([n for n in notes if "MiB of copies, removed" in n]) == 7, notes
    assert all(p.stat().st_nlink == 1 for p in work.iterdir())


def test_a_full_workspace_still_has_every_unsafe_link_cut(tmp_path: Path, monkeypatch) -> None:
    """Fourteenth review: in a full workspace the long cut form of a link did not fit (ENOSPC),
    the link was gone, and the chown after it raised: the loop stopped, and every unsafe link
    after it stayed as it was (links into /etc, the case, the logs). A short cut form is
    tried, and a link that is gone is passed over."""
    import errno

    work = tmp_path / "work"
    work.mkdir()
    for name in ("a_first", "b_second", "c_third"):
        os.symlink("/etc/" + "x" * 120, work / name)
    real = os.symlink

    def full(target, path, *args, **kwargs):  # a disk with room for short link targets only
        if len(str(target)) > 40:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(target, path, *args, **kwargs)

    monkeypatch.setattr(handover.os, "symlink", full)
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    assert len([n for n in notes if n.endswith(", cut")]) == 3, notes
    for name in ("a_first", "b_second", "c_third"):
        assert os.readlink(work / name).startswith(handover.CUT), name


def test_a_workspace_past_the_walk_budget_is_refused(tmp_path: Path, monkeypatch) -> None:
    """Fifteenth round: the walk itself was unbounded, so enough entries (300,000 empty
    files 1,800 folders deep, ~1 ms each) made the handover outlast the host's wait, and a
    losing arm's row went unscored. Each entry costs a fixed share plus its path's
    components; past the budget the handover stops and the workspace is refused."""
    flat, deep = tmp_path / "flat", tmp_path / "deep"
    for i in range(100):  # 120 entries side by side ...
        (flat / f"d{i}").mkdir(parents=True)
    for i in range(20):
        (flat / f"f{i}").write_text("x")
    bottom = deep.joinpath(*["d"] * 100)  # ... and as many, nested 100 deep
    bottom.mkdir(parents=True)
    for i in range(20):
        (bottom / f"f{i}").write_text("x")
    monkeypatch.setattr(handover, "_WALK", 120 * (handover._ENTRY + str(flat).count("/") + 30))
    assert handover.hand_over(str(flat), os.getuid(), os.getgid()) == []
    with pytest.raises(handover.Unbounded, match="holds more than a handover walks"):
        handover.hand_over(str(deep), os.getuid(), os.getgid())


def test_the_case_volumes_share_the_workspaces_walk_budget(tmp_path: Path, monkeypatch) -> None:
    """One budget for the workspace and every volume handed over beside it: each its own
    would multiply the time the host waits for."""
    places = [tmp_path / "work", tmp_path / "vol"]
    for place in places:
        place.mkdir()
        for i in range(30):
            (place / f"f{i}").write_text("x")
    one = 30 * (handover._ENTRY + str(places[0]).count("/") + 1)
    monkeypatch.setattr(handover, "_WALK", one + one // 2)  # one place's walk, not two
    assert handover.hand_over(str(places[0]), os.getuid(), os.getgid()) == []
    assert handover.hand_over(str(places[1]), os.getuid(), os.getgid()) == []
    with pytest.raises(handover.Unbounded):
        handover.hand_over(str(places[0]), os.getuid(), os.getgid(), [str(places[1])])


def test_a_folder_too_deep_to_walk_and_too_big_to_remove_is_refused(
    tmp_path: Path, monkeypatch
) -> None:
    """What is nested too deep for a path is removed, not walked (and so not charged):
    millions of entries there would outlast the host's wait as surely. A removal past its
    time refuses the workspace."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for _ in range(60):  # (by the current folder: no path is that long)
        os.mkdir("d" * 100)
        os.chdir("d" * 100)
    for i in range(2000):
        open(f"f{i}", "w").close()
    os.chdir(tmp_path)
    monkeypatch.setattr(handover, "_RM_SECONDS", 1e-6)
    with pytest.raises(handover.Unbounded, match="nested too deep and holds too much"):
        handover.hand_over(str(work), os.getuid(), os.getgid())
    monkeypatch.setattr(handover, "_RM_SECONDS", 60)
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    assert any("nested too deep for a path" in n for n in notes), notes


def test_what_the_walk_foresaw_no_cost_for_is_charged_or_timed(tmp_path: Path, monkeypatch) -> None:
    """Fifteenth review: git folders past 200 were each removed by an `rm` of their own
    (~2 ms, uncharged: 300,000 outlasted the host's wait), each cut link's note repeated its
    whole target (300,000 of 4,000 bytes: a reply of 1.2 GB, the executor killed), and a
    folder removed on the way (a `commondir` that is a folder) made the walk raise. Removals
    are charged, notes are capped, what is gone is passed over, and a clock backs it all."""
    work = tmp_path / "work"
    for i in range(260):
        (work / f"g{i}").mkdir(parents=True)
        (work / f"g{i}/HEAD").write_text("ref: refs/heads/main\n")
    monkeypatch.setattr(handover, "_WALK", 30 * handover._RM_COST)  # (the walk, not 60 rm)
    with pytest.raises(handover.Unbounded):
        handover.hand_over(str(work), os.getuid(), os.getgid())
    monkeypatch.undo()
    shutil.rmtree(work)
    work.mkdir()
    (work / "repo/commondir/sub").mkdir(parents=True)
    (work / "repo/HEAD").write_text("ref: refs/heads/main\n")
    for i in range(300):
        os.symlink("x" * 3000 + str(i), work / f"l{i}")
    notes = handover.hand_over(str(work), os.getuid(), os.getgid())
    assert len(notes) == handover._NOTES + 1 and notes[-1].endswith("more"), notes[-1]
    assert max(map(len, notes)) <= handover._NOTE + 3, notes  # (its middle cut out)
    assert notes[1].endswith(", cut"), notes[1]
    assert not (work / "repo/commondir").exists()
    with pytest.raises(handover.Unbounded):
        handover.hand_over(str(work), os.getuid(), os.getgid(), seconds=0)
