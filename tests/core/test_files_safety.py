"""Outputs written safely, inputs that are not regular files refused (issue 22, item 4).

Atomic writes follow symbolic links (the linked file is replaced, the link stays), refuse a target
that is not a regular file (a FIFO, a device node: never replaced), give a new file the umask's
permissions and keep an existing file's. A FIFO or a device node given as an input is refused in
one line, never opened (opening a FIFO without a writer would block the command forever). The
device nodes are scratch copies made under the test's temporary folder, never the system's.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.core.files import atomic_path, atomic_write, check_output_path, output_target, read_bytes, read_text

#: the device numbers of /dev/full and /dev/null on Linux (devices.txt: char major 1, minors 7 and 3)
FULL, NULL = (1, 7), (1, 3)
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="creating a device node needs root")


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@contextlib.contextmanager
def no_hang(seconds=20):
    """A FIFO opened for reading would block: fail the test instead of hanging the suite."""

    def _hung(signum, frame):
        raise AssertionError(f"blocked for {seconds} s (a FIFO was opened)")

    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def device(path, numbers=FULL):
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*numbers))
    return path


@pytest.fixture
def one_line_exit_2(refused_in_one_line):
    """The refusal, with a FIFO that blocks the command failing the test instead of hanging it."""

    def refused(argv, capsys, needle):
        with no_hang():
            return refused_in_one_line(argv, needle)

    return refused


# -- outputs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o027, 0o640)])
def test_a_new_file_gets_the_permissions_the_umask_gives(tmp_path, mask, mode):
    # mode = 0o666 with the umask's bits cleared, computed by hand for each umask
    with umask(mask):
        atomic_write(tmp_path / "a.json", "{}\n")
        with atomic_path(tmp_path / "b.csv") as tmp:  # the writers that want a name (pandas, matplotlib)
            tmp.write_text("a\n")
    assert stat.S_IMODE(os.stat(tmp_path / "a.json").st_mode) == mode
    assert stat.S_IMODE(os.stat(tmp_path / "b.csv").st_mode) == mode


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.integers(0, 0o7777), mask=st.sampled_from([0o022, 0o077, 0o000]))
def test_a_file_written_over_keeps_its_permissions(tmp_path, mode, mask):
    f = tmp_path / "out.json"
    f.write_text("old\n")
    os.chmod(f, mode)
    with umask(mask):
        atomic_write(f, "new\n")
    assert f.read_text() == "new\n"
    assert stat.S_IMODE(os.stat(f).st_mode) == mode  # the umask does not apply to an existing file


def test_a_symbolic_link_is_written_through(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old\n")
    os.chmod(real, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to("real.json")
    atomic_write(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.json"  # the link stays a link
    assert real.read_text() == "new\n" and stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]  # no temporary left


def test_a_link_to_a_missing_file_creates_that_file(tmp_path):
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "sub" / "new.csv")
    with atomic_path(link) as tmp:
        tmp.write_text("a\n")
    assert (tmp_path / "sub" / "new.csv").read_text() == "a\n" and link.is_symlink()


def test_a_loop_of_links_is_one_line(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(ParameterError, match="cannot write there"):
        atomic_write(a, "{}")


@pytest.mark.parametrize("kind", ["fifo", pytest.param("device", marks=needs_root), "link-to-device"])
def test_a_target_that_is_not_a_regular_file_is_never_replaced(tmp_path, kind):
    target = tmp_path / "out.json"
    if kind == "fifo":
        os.mkfifo(target)
        test, what = stat.S_ISFIFO, "is a FIFO (named pipe)"
    elif ROOT:
        real = device(tmp_path / "full")
        if kind == "link-to-device":
            target.symlink_to(real)
        else:
            target = real
        test, what = stat.S_ISCHR, "is a character device"
    else:  # the link case without root: a link to a FIFO
        os.mkfifo(tmp_path / "pipe")
        target.symlink_to(tmp_path / "pipe")
        test, what = stat.S_ISFIFO, "is a FIFO (named pipe)"
    for write in (lambda: atomic_write(target, "{}"), lambda: check_output_path(target), lambda: output_target(target)):
        with no_hang(), pytest.raises(ParameterError, match=re.escape(what)):
            write()
    assert test(os.stat(target).st_mode)  # still the node it was
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


@needs_root
def test_export_to_a_copy_of_dev_full_leaves_the_device_in_place(tmp_path, capsys, one_line_exit_2):
    full = device(tmp_path / "full")
    argv = ["export", "gpipe", "-p", "2", "-m", "2", "--format", "torch-csv", "-o", str(full)]  # a name without suffix
    err = one_line_exit_2(argv, capsys, "-o=")
    assert "is a character device, not a regular file" in err
    st_ = os.stat(full)
    assert stat.S_ISCHR(st_.st_mode) and (os.major(st_.st_rdev), os.minor(st_.st_rdev)) == FULL


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "gpipe", "-p", "2", "-m", "2", "-o", "{out}"],
        ["show", "gpipe", "-p", "2", "-m", "2", "--save", "{out}"],
        ["simulate", "gpipe", "-p", "2", "-m", "2", "--trace", "{out}"],
        [
            "compare",
            "--schedules",
            "gpipe",
            "-p",
            "2",
            "-m",
            "2",
            "--costs",
            "F=1",
            "--levels",
            "slot",
            "--out",
            "{out}",
        ],
    ],
)
def test_commands_refuse_a_fifo_as_output(tmp_path, capsys, argv, one_line_exit_2):
    fifo = tmp_path / ("out.csv" if "compare" in argv else "out.json")
    os.mkfifo(fifo)
    argv = [a.replace("{out}", str(fifo)) for a in argv] + (
        ["--no-progress", "--no-verify"] if "compare" in argv else []
    )
    one_line_exit_2(argv, capsys, "is a FIFO (named pipe), not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "-p", "2", "-m", "2", "--costs", "F=1", "--levels", "slot", "--out", "{out}", "--no-progress"],
        ["sweep", "{config}", "--out", "{out}", "--no-progress"],
        ["design", "-p", "2", "-m", "2", "--placements", "linear", "--report", "{page}"],
    ],
)
def test_an_output_in_a_missing_folder_is_refused_before_the_run(tmp_path, capsys, argv, one_line_exit_2):
    config = tmp_path / "grid.yaml"
    config.write_text("schedules: [gpipe]\np: 2\nm: 2\ncosts: {F: 1}\nlevels: [slot]\n")
    missing = tmp_path / "missing"
    names = {"{out}": str(missing / "rows.csv"), "{page}": str(missing / "page.html"), "{config}": str(config)}
    argv = [names.get(a, a) for a in argv]
    one_line_exit_2(argv, capsys, f"folder {missing} does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.yaml"]  # nothing ran: not even a sweep store


@pytest.mark.parametrize("command", [["show", "gpipe"], ["optimize", "--placement", "linear"]])
def test_a_json_output_named_csv_is_refused(tmp_path, capsys, command, one_line_exit_2):
    out = tmp_path / "best.csv"
    argv = [*command, "-p", "2", "-m", "2", "--save", str(out)]
    one_line_exit_2(argv, capsys, "this writes ppverify JSON, and a .csv name tells every reader PyTorch's CSV")
    assert not out.exists()


def test_calibrate_refuses_a_trailing_slash_before_measuring(tmp_path, capsys, monkeypatch, one_line_exit_2):
    import ppverify.measure.calibrate as cal

    monkeypatch.setattr(cal, "calibrate", lambda **kw: pytest.fail("calibrate ran with a bad --out"))
    monkeypatch.chdir(tmp_path)
    one_line_exit_2(["calibrate", "--out", "c.yaml/"], capsys, "ends in '/', which names a folder")
    assert list(tmp_path.iterdir()) == []  # no c.yaml written


# -- inputs ----------------------------------------------------------------------------------------


def test_readers_refuse_a_fifo_and_a_device_without_opening_them(tmp_path):
    fifo = tmp_path / "s.json"
    os.mkfifo(fifo)
    for read in (read_text, read_bytes):
        with (
            no_hang(),
            pytest.raises(ScheduleFileError, match=r"s\.json: is a FIFO \(named pipe\), not a regular file"),
        ):
            read(fifo)
    if ROOT:
        null = device(tmp_path / "null.csv", NULL)  # reads as empty: refused too, never read as a file
        with pytest.raises(ScheduleFileError, match="is a character device"):
            read_text(null)


def _inputs(tmp_path):
    """The same FIFO under every name a command reads, and a valid sweep config next to it."""
    names = {}
    for name in ("s.json", "s.csv", "s.txt", "sys.yaml", "llm.yaml", "r.csv", "f.json", "cfg.yaml", "store.jsonl"):
        os.mkfifo(tmp_path / name)
        names[name] = str(tmp_path / name)
    good = tmp_path / "good.yaml"
    good.write_text("schedules: [gpipe]\np: 2\nm: 2\ncosts: {F: 1}\nlevels: [slot]\n")
    names["good.yaml"] = str(good)
    sched = tmp_path / "sched.yaml"
    sched.write_text(f"schedules: [{{file: {names['s.json']}}}]\np: 2\ncosts: {{F: 1}}\nlevels: [slot]\n")
    names["sched.yaml"] = str(sched)
    return names


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "s.json"],
        ["show", "s.csv", "-p", "2"],
        ["simulate", "s.txt"],
        ["import", "s.csv"],
        ["simulate", "gpipe", "-p", "2", "-m", "2", "--system", "sys.yaml", "--model", "gpt3-1.3b"],
        ["simulate", "gpipe", "-p", "2", "-m", "2", "--system", "dgx-h100", "--model", "llm.yaml"],
        ["report", "--from", "r.csv", "-o", "x.html"],
        ["report", "--from", "r.csv", "--findings-json", "f.json", "-o", "x.html"],
        ["sweep", "cfg.yaml", "--dry-run"],
        ["sweep", "good.yaml", "--store", "store.jsonl", "--dry-run"],
        ["sweep", "sched.yaml", "--dry-run"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_commands_refuse_a_fifo_as_input(tmp_path, capsys, argv, one_line_exit_2):
    names = _inputs(tmp_path)
    err = one_line_exit_2([names.get(a, a) for a in argv], capsys, "FIFO (named pipe)")
    assert "not a regular file" in err
