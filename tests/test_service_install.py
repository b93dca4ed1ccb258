"""The systemd user unit installer of the thin client (mework_client.service)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from mework_client import service

from tests.test_systemd import REPO, parse_unit, verify_units


def fake_meworkd(directory: Path) -> Path:
    """An executable named meworkd (a copy of /bin/true, so systemd-analyze is satisfied)."""
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "meworkd"
    shutil.copy("/bin/true", exe)
    exe.chmod(0o755)
    return exe


def test_repository_units_equal_the_packaged_texts() -> None:
    # systemd/ is what a checkout shows; the constants are what an installed package ships.
    assert (REPO / "systemd" / "meworkd.service").read_text() == service.SERVICE_UNIT
    assert (REPO / "systemd" / "meworkd.socket").read_text() == service.SOCKET_UNIT


def test_install_writes_both_units(short_tmp: Path) -> None:
    exe = fake_meworkd(short_tmp / "bin")
    unit_dir = short_tmp / "config" / "systemd" / "user"
    written = service.install(unit_dir, str(exe))
    assert written == [unit_dir / "meworkd.service", unit_dir / "meworkd.socket"]
    service_text = written[0].read_text()
    assert service_text == service.SERVICE_UNIT.replace(
        "ExecStart=%h/.local/bin/meworkd --log-format json",
        f"ExecStart={exe} --log-format json",
    )
    assert parse_unit(service_text)["Service"]["ExecStart"] == [f"{exe} --log-format json"]
    assert written[1].read_text() == service.SOCKET_UNIT
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in unit_dir.iterdir()) == ["meworkd.service", "meworkd.socket"]
    verify_units(*written)


def test_install_replaces_existing_units(short_tmp: Path) -> None:
    unit_dir = short_tmp / "units"
    unit_dir.mkdir()
    (unit_dir / "meworkd.service").write_text("stale")
    first = fake_meworkd(short_tmp / "one")
    second = fake_meworkd(short_tmp / "two")
    service.install(unit_dir, first)
    written = service.install(unit_dir, second)
    assert f"ExecStart={second} " in written[0].read_text()
    assert str(first) not in written[0].read_text()
    assert sorted(p.name for p in unit_dir.iterdir()) == ["meworkd.service", "meworkd.socket"]


def test_install_makes_exec_path_absolute(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = fake_meworkd(short_tmp / "bin")
    monkeypatch.chdir(short_tmp)
    (written, _) = service.install(short_tmp / "units", "bin/meworkd")
    assert f"ExecStart={exe} --log-format json\n" in written.read_text()


@pytest.mark.parametrize(
    ("dirname", "exec_start"),
    [
        ("with space", '"{root}/with space/meworkd"'),
        ("per%cent", "{root}/per%%cent/meworkd"),
        ("dol$lar", "{root}/dol$lar/meworkd"),
        ("all of $ %", '"{root}/all of $ %%/meworkd"'),
    ],
)
def test_install_escapes_the_path(short_tmp: Path, dirname: str, exec_start: str) -> None:
    fake_meworkd(short_tmp / dirname)
    unit_dir = short_tmp / "units"
    written = service.install(unit_dir, str(short_tmp / dirname / "meworkd"))
    line = f"ExecStart={exec_start.format(root=short_tmp)} --log-format json\n"
    assert line in written[0].read_text()
    verify_units(*written)  # systemd reads the path back as the existing executable


@pytest.mark.parametrize("bad", ['/opt/a"b/meworkd', "/opt/a'b/meworkd", "/opt/a\\b/meworkd"])
def test_install_refuses_paths_systemd_cannot_run(short_tmp: Path, bad: str) -> None:
    unit_dir = short_tmp / "units"
    with pytest.raises(ValueError):
        service.install(unit_dir, bad)
    assert not unit_dir.exists()


def test_default_unit_dir(monkeypatch: pytest.MonkeyPatch, short_tmp: Path) -> None:
    monkeypatch.setenv("HOME", str(short_tmp / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(short_tmp / "xdg"))
    assert service.default_unit_dir() == short_tmp / "xdg" / "systemd" / "user"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    assert service.default_unit_dir() == short_tmp / "home" / ".config" / "systemd" / "user"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert service.default_unit_dir() == short_tmp / "home" / ".config" / "systemd" / "user"


def test_install_and_uninstall_with_defaults(
    monkeypatch: pytest.MonkeyPatch, short_tmp: Path
) -> None:
    exe = fake_meworkd(short_tmp / "bin")
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(short_tmp / "config"))
    unit_dir = short_tmp / "config" / "systemd" / "user"
    written = service.install()
    assert written == [unit_dir / "meworkd.service", unit_dir / "meworkd.socket"]
    assert f"ExecStart={exe} " in written[0].read_text()
    assert service.uninstall() == written
    assert list(unit_dir.iterdir()) == []


def test_default_exec_path(monkeypatch: pytest.MonkeyPatch, short_tmp: Path) -> None:
    on_path = fake_meworkd(short_tmp / "path")
    beside = fake_meworkd(short_tmp / "venv" / "bin")
    monkeypatch.setattr(sys, "executable", str(short_tmp / "venv" / "bin" / "python"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert service.default_exec_path() == on_path
    monkeypatch.setenv("PATH", str(short_tmp / "empty"))
    assert service.default_exec_path() == beside
    beside.unlink()
    with pytest.raises(FileNotFoundError):
        service.default_exec_path()
    with pytest.raises(FileNotFoundError):
        service.install(short_tmp / "units")
    assert not (short_tmp / "units").exists()


def test_uninstall_removes_units_and_enable_links(short_tmp: Path) -> None:
    unit_dir = short_tmp / "units"
    service_path, socket_path = service.install(unit_dir, fake_meworkd(short_tmp / "bin"))
    # What `systemctl --user enable meworkd.service` (with Also=meworkd.socket) leaves behind.
    wants = unit_dir / "default.target.wants"
    sockets = unit_dir / "sockets.target.wants"
    wants.mkdir()
    sockets.mkdir()
    (wants / "meworkd.service").symlink_to(service_path)
    (sockets / "meworkd.socket").symlink_to(socket_path)
    # Somebody else's units and links stay.
    other = unit_dir / "other.service"
    other.write_text("[Service]\nExecStart=/bin/true\n")
    (wants / "other.service").symlink_to(other)
    elsewhere = short_tmp / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "meworkd.socket").write_text("not ours")
    (unit_dir / "timers.target.wants").mkdir()
    (unit_dir / "timers.target.wants" / "meworkd.socket").symlink_to(elsewhere / "meworkd.socket")

    removed = service.uninstall(unit_dir)
    assert sorted(removed) == sorted(
        [service_path, socket_path, wants / "meworkd.service", sockets / "meworkd.socket"]
    )
    left = sorted(str(p.relative_to(unit_dir)) for p in unit_dir.rglob("*"))
    assert left == [
        "default.target.wants",
        "default.target.wants/other.service",
        "other.service",
        "sockets.target.wants",
        "timers.target.wants",
        "timers.target.wants/meworkd.socket",
    ]
    assert service.uninstall(unit_dir) == []
    assert service.uninstall(short_tmp / "never-created") == []


def test_service_module_is_stdlib_only() -> None:
    # The thin client starts fast: no mcp, no meworkd, nothing outside the standard library.
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import mework_client.service\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'mework_client'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"
