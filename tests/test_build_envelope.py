"""A build is hostile code: each attack a participant's build made on the host, run for real
(the contest's own build path, sandboxed as contests are by default), and what stops it now.

Before the envelope: an upload's ``py_compile.py`` ran at build time, a build wrote 300 MB into
an upload's 16 MB, forked 300 of 300 children, left a 1 TiB sparse file, a FIFO and a link to
``/`` on the host's disk, and (where bwrap ran in a user namespace) a C++ ``#include`` printed a
root-only key from ``/etc/ssl/private`` into the team's build log.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import harness.contest.build as build_mod
from harness.contest.build import build_upload
from harness.contest.config import Runtime, init_contest, load_contest

CAP = getattr(build_mod, "BUILD_OUTPUT_MB", 64) << 20
BUILD_PROCESSES = getattr(build_mod, "BUILD_PROCESSES", 64)


def _upload(tmp_path: Path, files: dict[str, str]) -> tuple[object, Path]:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    cfg = load_contest(root)
    assert cfg.limits.get("sandbox") == "auto"
    workdir = root / "submissions" / "1"
    workdir.mkdir(parents=True)
    for name, text in {"bot.py": "print('hi')\n", **files}.items():
        (workdir / name).write_text(text)
    return cfg, workdir


def _sh(script: str) -> Runtime:
    return Runtime("attack", "bot.py", ("sh", "-c", script), ("python3", "bot.py"))


def _left(workdir: Path) -> list[os.stat_result]:
    return [os.lstat(p) for p in workdir.rglob("*")]


def test_an_uploads_own_py_compile_does_not_run_at_build_time(tmp_path: Path) -> None:
    shadow = "import pathlib\nprint('SHADOW RAN', flush=True)\npathlib.Path('shadow-ran').write_text('x')\n"
    cfg, workdir = _upload(tmp_path, {"py_compile.py": shadow})
    built, log = build_upload(cfg, cfg.runtimes["python"], workdir)  # type: ignore[attr-defined]
    assert built, log
    assert "SHADOW RAN" not in log and not (workdir / "shadow-ran").exists(), log
    assert any(p.name.startswith("bot.") and p.suffix == ".pyc" for p in (workdir / "__pycache__").iterdir())


def test_a_build_cannot_write_300_mb(tmp_path: Path) -> None:
    cfg, workdir = _upload(tmp_path, {})
    script = "for i in 1 2 3 4 5 6; do head -c 50000000 /dev/zero > big$i; done; echo wrote all"
    built, log = build_upload(cfg, _sh(script), workdir)  # type: ignore[arg-type]
    assert not built and "No space left on device" in log, log  # its tmpfs is full at the cap
    assert sum(s.st_size for s in _left(workdir)) < CAP


def test_a_build_cannot_fork_300_processes(tmp_path: Path) -> None:
    forker = ("import os, time\nn = 0\nfor i in range(300):\n    try:\n        pid = os.fork()\n"
              "    except OSError:\n        break\n    if pid == 0:\n        os.close(1); os.close(2); time.sleep(20); "
              "os._exit(0)\n    n += 1\nprint('forked', n, flush=True)\n")
    cfg, workdir = _upload(tmp_path, {"fork.py": forker})
    built, log = build_upload(cfg, Runtime("fork", "bot.py", ("python3", "fork.py"), ("python3", "bot.py")),
                              workdir)  # type: ignore[arg-type]
    forked = int(log.split("forked ", 1)[1].split()[0])
    assert forked < BUILD_PROCESSES, log


def test_without_its_cgroup_a_build_is_still_held_below_its_processes_by_rlimit_nproc(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two layers of the process bound, one at a time: where no cgroup can be made (its
    ``pids.max`` gone), RLIMIT_NPROC of the build's own uid alone stops the fork bomb."""
    forker = ("import os, time\nn = 0\nfor i in range(300):\n    try:\n        pid = os.fork()\n"
              "    except OSError:\n        break\n    if pid == 0:\n        os.close(1); os.close(2); time.sleep(20); "
              "os._exit(0)\n    n += 1\nprint('forked', n, flush=True)\n")
    cfg, workdir = _upload(tmp_path, {"fork.py": forker})
    monkeypatch.setattr(build_mod, "cgroup_base", lambda: None)
    built, log = build_upload(cfg, Runtime("fork", "bot.py", ("python3", "fork.py"), ("python3", "bot.py")),
                              workdir)  # type: ignore[arg-type]
    forked = int(log.split("forked ", 1)[1].split()[0])
    assert forked < BUILD_PROCESSES, log


@pytest.mark.parametrize("sandbox", ["auto", "none"])  # unsandboxed, the build wrote in place: cleaned after
def test_a_build_leaves_no_sparse_huge_file_no_fifo_and_no_link(tmp_path: Path, sandbox: str) -> None:
    import dataclasses

    sparse = "open('sparse', 'wb').truncate(1 << 40)\n"
    cfg, workdir = _upload(tmp_path, {"sparse.py": sparse})
    cfg = dataclasses.replace(cfg, limits={**cfg.limits, "sandbox": sandbox})  # type: ignore[type-var]
    script = "python3 sparse.py; ln -s / root-link; mkfifo fifo; exit 0"
    built, log = build_upload(cfg, _sh(script), workdir)  # type: ignore[arg-type]
    assert not built, log
    left = _left(workdir)
    assert all(stat.S_ISREG(s.st_mode) or stat.S_ISDIR(s.st_mode) for s in left), log
    assert max(s.st_size for s in left) < CAP, log
    assert sorted(p.name for p in workdir.iterdir()) == ["bot.py", "sparse.py"], log  # nothing of it is kept


# without a user namespace, bwrap runs as root and setpriv drops the build to a uid; with one, the
# build once ran as uid 0 of a namespace mapped to host root, and read root-only files
@pytest.mark.parametrize("userns", [False, True])
def test_a_cpp_include_of_a_root_only_file_under_etc_prints_nothing(tmp_path: Path, monkeypatch,  # type: ignore[no-untyped-def]
                                                                      userns: bool) -> None:
    monkeypatch.setattr(build_mod, "bwrap_userns", lambda: userns)
    secret = Path("/etc/ssl/private/tablebots-envelope-test.key")
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("TABLEBOTS_ROOT_ONLY_SECRET\n")
    secret.chmod(0o600)
    try:
        cfg, workdir = _upload(tmp_path, {"bot.cpp": f'#include "{secret}"\nint main() {{ return 0; }}\n'})
        built, log = build_upload(cfg, cfg.runtimes["cpp"], workdir)  # type: ignore[attr-defined]
    finally:
        secret.unlink()
    assert not built and "TABLEBOTS_ROOT_ONLY_SECRET" not in log, log


def test_a_build_sees_only_the_public_files_of_etc_and_is_not_root(tmp_path: Path) -> None:
    cfg, workdir = _upload(tmp_path, {})
    script = "ls /etc/ssl; ls /etc; id -u; cat /etc/shadow; exit 1"
    built, log = build_upload(cfg, _sh(script), workdir)  # type: ignore[arg-type]
    assert not built
    lines = log.splitlines()
    assert "certs" in lines and "private" not in lines and "shadow" not in lines, log
    assert "0" not in lines, log  # not uid 0, in any namespace


def test_an_unsandboxed_build_started_by_root_runs_as_the_builds_own_uid(tmp_path: Path) -> None:
    """Without the sandbox only the uid stands between a build and the host's root: the build
    drops to its own uid (the site runs as root here, as CI does)."""
    import dataclasses

    assert os.geteuid() == 0, "this test checks the drop from root: it runs as root (as CI does)"
    cfg, workdir = _upload(tmp_path, {})
    cfg = dataclasses.replace(cfg, limits={**cfg.limits, "sandbox": "none"})  # type: ignore[type-var]
    built, log = build_upload(cfg, _sh("id -u; id -g; exit 1"), workdir)  # type: ignore[arg-type]
    assert not built
    ids = [line for line in log.splitlines() if line.strip().isdigit()]
    assert len(ids) == 2 and "0" not in ids, log


def test_the_site_never_reads_a_file_of_a_version_whole(tmp_path: Path) -> None:
    """What a build left (here planted, as an unsandboxed build could): a 300 MB file read four
    times took the site from 46 MB to 1.21 GB, a 1 TiB sparse one gave a 500. Now a page reads
    at most 1 MB of it, and never a FIFO or through a link."""
    import re
    import tracemalloc
    import warnings

    warnings.filterwarnings("ignore", message=".*httpx.*")
    from starlette.testclient import TestClient

    from harness.contest.auth import add_team
    from harness.contest.db import ContestDB
    from harness.contest.server import create_app

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    db.close()
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        r = client.post("/api/submissions", headers={"Authorization": f"Bearer {token}"}, data={"runtime": "python"},
                        files={"file": ("bot.py", b"print('hi')\n")})
        assert r.status_code == 201
        folder = root / "submissions" / str(r.json()["id"])
        with open(folder / "big.bin", "wb") as fh:
            fh.truncate(300 << 20)
        with open(folder / "huge.bin", "wb") as fh:
            fh.truncate(1 << 40)
        os.mkfifo(folder / "fifo")
        os.symlink("/etc/passwd", folder / "passwd")
        os.symlink("/", folder / "rootdir")
        page = client.get("/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
        tracemalloc.start()
        try:
            shown = [client.get(f"/me/submissions/{folder.name}/files/big.bin") for _ in range(4)]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 32 << 20, peak  # the page's cap (1 MB) and its rendering, not the file
        assert all(r.status_code == 200 and r.text.endswith("more bytes not shown ...]\n") for r in shown)
        r = client.get(f"/me/submissions/{folder.name}/files/huge.bin")
        assert r.status_code == 200 and f"[... {(1 << 40) - (1 << 20)} more bytes not shown" in r.text
        for name in ("fifo", "passwd", "rootdir/etc/passwd"):
            r = client.get(f"/me/submissions/{folder.name}/files/{name}")
            assert r.status_code == 404 and "root:" not in r.text, name
        listing = client.get(f"/me/submissions/{folder.name}").text
        assert "passwd" not in listing and "fifo" not in listing and "bot.py" in listing


def test_ranked_games_without_the_sandbox_are_refused_unless_unsafe_which_the_leaderboard_shows(tmp_path: Path) -> None:
    import re
    import warnings

    from click.testing import CliRunner

    warnings.filterwarnings("ignore", message=".*httpx.*")
    from starlette.testclient import TestClient

    from harness.cli import cli
    from harness.contest.server import create_app

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text()
    (root / "contest.yaml").write_text(re.sub(r"sandbox: auto", "sandbox: none", text))
    for argv in (["run", str(root), "--no-progress"], ["finals", str(root), "--top", "2", "--rounds", "1"],
                 ["serve", str(root), "--port", "1"]):
        refused = CliRunner().invoke(cli, ["contest", *argv])
        assert refused.exit_code == 1 and "refusing to play ranked games here: no sandbox" in refused.output, \
            refused.output
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        assert "unsafely" not in client.get("/").text
        # (no team has a version: the finals stop there, after recording that they were asked unsafely)
        unsafe = CliRunner().invoke(cli, ["contest", "finals", str(root), "--top", "2", "--rounds", "1", "--unsafe"])
        assert "warning: playing unsafely (--unsafe): no sandbox" in unsafe.output, unsafe.output
        page = client.get("/").text
        assert "Played unsafely (--unsafe):</b> no sandbox" in page, page
        assert client.get("/api/leaderboard").json()["unsafe"].startswith("no sandbox")


def test_a_builds_processes_together_cannot_hold_more_than_its_memory(tmp_path: Path) -> None:
    """Six children of 200 MB each, at build.memory_mb 256: each fits its own address space
    (RLIMIT_AS), but the build's cgroup bounds them together (256 MB + its tmpfs places)."""
    import dataclasses

    hog = ("import os, time\nfor i in range(6):\n    if os.fork() == 0:\n        b = bytearray(200 << 20)\n"
           "        for j in range(0, len(b), 4096):\n            b[j] = 1\n        print('held', flush=True)\n"
           "        time.sleep(2)\n        os._exit(0)\n"
           "for i in range(6):\n    os.wait()\n")
    cfg, workdir = _upload(tmp_path, {"hog.py": hog})
    cfg = dataclasses.replace(cfg, build_memory_mb=256)  # type: ignore[type-var]
    built, log = build_upload(cfg, Runtime("hog", "bot.py", ("python3", "hog.py"), ("python3", "bot.py")),
                              workdir)  # type: ignore[arg-type]
    assert not built and "went over 256 MB (build.memory_mb)" in log, log


def test_a_builds_log_gives_the_time_it_took(tmp_path: Path) -> None:
    """The last line of a build's log says how long it took (the team reads it beside its
    build.seconds): within the time the build call itself took, whatever the load."""
    import re
    import time

    cfg, workdir = _upload(tmp_path, {})
    start = time.monotonic()
    built, log = build_upload(cfg, cfg.runtimes["python"], workdir)  # type: ignore[attr-defined]
    elapsed = time.monotonic() - start
    assert built, log
    took = float(re.fullmatch(r"build ok \((\d+\.\d) s\)", log.rstrip("\n").splitlines()[-1]).group(1))  # type: ignore[union-attr]
    assert 0 <= took <= elapsed + 0.05, (took, elapsed)
