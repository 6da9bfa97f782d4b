"""`python3 -I -S seal.py CMD...`: run CMD so that no process it starts can change another
process of the same user: the checker's commands (a grader, a verifier, a check's own
command) run the candidate's code as their own user, and without this that code could
rewrite the grader's memory and so what it prints (docs/trust.md, "Parsers").

Two kernel features, both inherited by every descendant and never lifted:
- a seccomp filter that refuses ptrace, process_vm_readv/writev and pidfd_getfd (and every
  system call of a foreign ABI: i386 through `int 0x80`, x32, which name them by other
  numbers);
- a Landlock domain in which no file under /proc may be opened for writing
  (/proc/<pid>/mem is how a process writes another's memory without ptrace), every other
  folder as before.

Seccomp is there wherever podman runs; a kernel without Landlock (before 5.19, or not
enabled) keeps the seccomp half and SKILLBENCH_SEALED says so (`ptrace-only`).
Standard library only, like executor.py beside it; it runs on the image's python3.
"""

import ctypes
import errno
import os
import stat
import struct
import sys

_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

# audit arch -> (the system calls that reach another process's memory, the x32 bit or 0)
_ARCHES = {
    0xC000003E: ((101, 310, 311, 438), 0x40000000),  # x86_64: ptrace, process_vm_*, pidfd_getfd
    0xC00000B7: ((117, 270, 271, 438), 0),  # aarch64
}
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO


def _failed(what):
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def _insn(code, k, jt=0, jf=0):
    return struct.pack("=HBBI", code, jt, jf, k)


def _filter():
    """The BPF program: per known arch, deny its listed calls (and x32's), allow the rest;
    deny everything of any other arch."""
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
    prog = [_insn(ld, 4)]  # seccomp_data.arch
    for arch, (calls, x32) in _ARCHES.items():
        tests = ([(jge, x32)] if x32 else []) + [(jeq, nr) for nr in calls]
        # block: load nr, the tests, allow, deny; a test's jump lands on the deny
        block = [_insn(ld, 0)]
        for i, (op, k) in enumerate(tests):
            block.append(_insn(op, k, jt=len(tests) - i))
        block += [_insn(ret, _ALLOW), _insn(ret, _DENY)]
        prog.append(_insn(jeq, arch, jt=0, jf=len(block)))
        prog += block
    prog.append(_insn(ret, _DENY))
    code = b"".join(prog)
    buf = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(buf))
    return buf, ctypes.create_string_buffer(fprog, len(fprog))


def _seccomp():
    buf, fprog = _filter()  # (buf kept alive until the call)
    if _LIBC.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        raise _failed("seccomp")
    del buf


# LANDLOCK_ACCESS_FS_WRITE_FILE, and _REFER: a domain that does not handle REFER refuses
# every rename or link into another folder (EXDEV), which package installers do all the time
_WRITE_FILE, _REFER = 1 << 1, 1 << 13
_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446  # the same numbers on every architecture
_PATH_BENEATH, _VERSION = 1, 1  # LANDLOCK_RULE_PATH_BENEATH, LANDLOCK_CREATE_RULESET_VERSION


def _landlock():
    """Writing files (and moving them between folders) stays allowed beneath every top-level
    entry but /proc. False when the kernel has no Landlock, or one before REFER (5.19)."""
    if _LIBC.syscall(_CREATE, None, 0, _VERSION) < 2:
        return False
    attr = struct.pack("=Q", _WRITE_FILE | _REFER)
    ruleset = _LIBC.syscall(_CREATE, attr, len(attr), 0)
    if ruleset < 0:
        raise _failed("landlock_create_ruleset")
    try:
        for entry in sorted(os.listdir("/")):
            if entry == "proc":
                continue
            try:
                fd = os.open("/" + entry, os.O_PATH | os.O_CLOEXEC)
            except OSError:  # a link to nowhere: nothing to write beneath
                continue
            try:
                folder = stat.S_ISDIR(os.fstat(fd).st_mode)  # (REFER is a right of folders only)
                rule = struct.pack("=Qi", _WRITE_FILE | (_REFER if folder else 0), fd)
                if _LIBC.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, rule, 0) != 0:
                    raise _failed(f"landlock_add_rule /{entry}")
            finally:
                os.close(fd)
        if _LIBC.syscall(_RESTRICT, ruleset, 0) != 0:
            raise _failed("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return True


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    try:
        if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _failed("no_new_privs")
        # root (a verifier written for root, installing into /) keeps its writes anywhere:
        # its scripts run last, after every other check (docs/trust.md)
        landlocked = os.geteuid() != 0 and _landlock()
        _seccomp()
    except OSError as exc:  # never run the command unsealed
        print(f"skillbench: could not seal the command ({exc.strerror})", file=sys.stderr)
        sys.exit(2)
    os.environ["SKILLBENCH_SEALED"] = "full" if landlocked else "ptrace-only"
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
