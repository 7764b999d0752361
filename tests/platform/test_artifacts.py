"""The artifact store on real folders and archives built here: one digest per project however it
arrives, stored once; hostile uploads (paths leaving the folder, links out, devices, bombs, huge
streams) refused with nothing left behind in the store or outside it."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from inferd.core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge
from inferd.platform.artifacts import ArtifactStore, Bundle

MB = 1 << 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def store(root: Path) -> ArtifactStore:
    return ArtifactStore(root, max_bytes=MB, max_members=50)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "models").mkdir(parents=True)
    (folder / "main.py").write_text("def handler(request, context):\n    return {}\n")
    (folder / "inferd.yaml").write_text("dialect: abeja\n")
    (folder / "models" / "weights.bin").write_bytes(bytes(range(256)) * 40)
    (folder / "run.sh").write_text("#!/bin/sh\n")
    (folder / "run.sh").chmod(0o755)
    (folder / "empty").mkdir()
    return folder


def leftovers(root: Path) -> list[str]:
    """What the store holds besides its bundles: nothing, after any failure."""
    return sorted(path.name for path in root.iterdir() if path.name != "sha256")


def bundles(root: Path) -> list[str]:
    return sorted(path.name for path in (root / "sha256").iterdir())


def tar_gz(folder: Path, arcname: str = ".") -> io.BytesIO:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        tar.add(folder, arcname=arcname)
    data.seek(0)
    return data


def zipped(folder: Path) -> io.BytesIO:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            info = zipfile.ZipInfo.from_file(path, path.relative_to(folder).as_posix())
            archive.writestr(info, b"" if path.is_dir() else path.read_bytes())
    data.seek(0)
    return data


def hostile_tar(*members: tuple[tarfile.TarInfo, bytes]) -> io.BytesIO:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for info, content in members:
            info.size = len(content) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(content) if info.isreg() else None)
    data.seek(0)
    return data


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


# -- bundles -----------------------------------------------------------------------------------------


def test_a_folder_gives_one_digest_whatever_its_times_modes_and_clutter(
    store: ArtifactStore, root: Path, project: Path, tmp_path: Path
) -> None:
    first = store.put_folder(project)
    assert first.digest.startswith("sha256:") and first.path == root / "sha256" / f"{first.digest[7:]}.tar.gz"
    assert first.size == first.path.stat().st_size
    written = first.path.stat()
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(project, copy)  # new times
    (copy / "main.py").chmod(0o600)  # not executable: same mode in the bundle
    os.utime(copy / "inferd.yaml", (1, 1))
    for clutter in (".git", "__pycache__", "models/__pycache__", ".inferd"):
        (copy / clutter).mkdir(exist_ok=True)
        (copy / clutter / "junk").write_text("x")
    (copy / "main.cpython-311.pyc").write_bytes(b"\0")
    (copy / "etc").symlink_to("/etc")  # leaves the folder: left out
    assert store.put_folder(copy) == first
    assert first.path.stat().st_mtime_ns == written.st_mtime_ns and first.path.stat().st_ino == written.st_ino
    assert bundles(root) == [first.path.name] and leftovers(root) == []
    (copy / "run.sh").chmod(0o644)  # the executable bit is content
    assert store.put_folder(copy).digest != first.digest
    (copy / "run.sh").chmod(0o755)
    (copy / "main.py").write_text("changed")
    assert store.put_folder(copy).digest != first.digest


def test_a_bundle_is_discarded_only_when_nothing_names_it_and_no_put_holds_it(
    store: ArtifactStore, root: Path, project: Path
) -> None:
    named: set[str] = set()
    first = store.put_folder(project)
    again = store.put_folder(project)  # the same content, pushed meanwhile: held twice
    assert again.digest == first.digest
    store.release(first.digest)
    assert not store.discard(first.digest, named.__contains__) and first.path.is_file()  # still held
    named.add(first.digest)  # the second put's caller recorded it
    store.release(again.digest)
    assert not store.discard(first.digest, named.__contains__) and first.path.is_file()  # named
    named.clear()
    assert store.discard(first.digest, named.__contains__) and not first.path.exists()
    assert not store.discard(first.digest, named.__contains__)  # gone already
    assert not store.discard("sha256:../../etc", named.__contains__)
    assert store.put_folder(project).path.is_file()  # put again, it comes back
    assert leftovers(root) == []


def test_a_bundle_unpacks_to_the_project(store: ArtifactStore, project: Path, tmp_path: Path) -> None:
    (project / "models" / "latest").symlink_to(project / "models" / "weights.bin")  # absolute, inside
    bundle = store.put_folder(project)
    out = store.unpack(bundle.digest, tmp_path / "services" / "svc-1")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "empty", "inferd.yaml", "main.py", "models", "models/latest", "models/weights.bin", "run.sh",
    ]  # fmt: skip
    assert (out / "models" / "weights.bin").read_bytes() == (project / "models" / "weights.bin").read_bytes()
    assert os.readlink(out / "models" / "latest") == "weights.bin"
    assert (out / "models" / "latest").read_bytes() == (project / "models" / "weights.bin").read_bytes()
    assert (
        os.stat(out / "run.sh").st_mode & stat.S_IXUSR and not os.stat(out / "main.py").st_mode & stat.S_IXUSR
    )
    with tarfile.open(store.open(bundle.digest)) as tar:
        assert {(m.mtime, m.uid, m.gid, m.uname) for m in tar} == {(0, 0, 0, "")}
    with pytest.raises(Conflict, match="exists already"):
        store.unpack(bundle.digest, out)
    assert (tmp_path / "services").iterdir().__next__() == out  # nothing but the unpacked folder
    with pytest.raises(NotFound, match="sha256:0000"):
        store.unpack("sha256:" + "0" * 64, tmp_path / "x")
    with pytest.raises(InvalidInput, match="digest"):
        store.open("md5:1234")
    assert bundle.digest in store and "sha256:" + "0" * 64 not in store


@pytest.mark.parametrize(
    "pack", [tar_gz, zipped, lambda folder: tar_gz(folder, "")], ids=["tar.gz", "zip", "no-dot"]
)
def test_an_upload_of_a_project_is_the_same_bundle_as_its_folder(
    store: ArtifactStore, root: Path, project: Path, pack: Callable[[Path], io.BytesIO]
) -> None:
    from_folder = store.put_folder(project)
    uploaded = store.put_archive(pack(project), "project.tar.gz")
    assert uploaded == from_folder
    assert bundles(root) == [from_folder.path.name] and leftovers(root) == []


def test_a_plain_tar_upload_is_accepted(store: ArtifactStore, project: Path) -> None:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        tar.add(project, arcname=".")
    data.seek(0)
    assert store.put_archive(data, "application/x-tar") == store.put_folder(project)


# -- hostile uploads ---------------------------------------------------------------------------------

HOSTILE = {
    "parent": ([(member("../evil"), b"x")], "'../evil'", "'..'"),
    "deep parent": ([(member("ok/../../evil"), b"x")], "'ok/../../evil'", "'..'"),
    "absolute": ([(member("/tmp/evil"), b"x")], "'/tmp/evil'", "absolute"),
    "backslash": ([(member("..\\evil"), b"x")], "backslash", "'..\\\\evil'"),
    "symlink to /etc": ([(member("etc", tarfile.SYMTYPE, "/etc"), b"")], "'etc'", "leading out"),
    "symlink up": ([(member("up", tarfile.SYMTYPE, "../../outside"), b"")], "'up'", "leading out"),
    "symlink chain": (
        [(member("b", tarfile.SYMTYPE, "."), b""), (member("a", tarfile.SYMTYPE, "b/.."), b"")],
        "'a'",
        "leading out",
    ),
    "file under a link": (
        [(member("d", tarfile.SYMTYPE, "sub"), b""), (member("d/f"), b"x")],
        "'d'",
        "cannot be created",
    ),
    "hardlink out": ([(member("passwd", tarfile.LNKTYPE, "/etc/passwd"), b"")], "'passwd'", "hard link"),
    "device": ([(member("null", tarfile.CHRTYPE), b"")], "'null'", "character device"),
    "fifo": ([(member("pipe", tarfile.FIFOTYPE), b"")], "'pipe'", "fifo"),
    "twice": ([(member("a.py"), b"1"), (member("a.py"), b"2")], "'a.py'", "cannot be created"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_a_hostile_tar_is_refused_naming_the_member(
    store: ArtifactStore, root: Path, tmp_path: Path, case: str
) -> None:
    members, *words = HOSTILE[case]
    with pytest.raises(InvalidInput) as caught:
        store.put_archive(hostile_tar((member("main.py"), b"ok"), *members), "upload.tar.gz")
    for word in words:
        assert word in str(caught.value)
    assert leftovers(root) == [] and bundles(root) == []
    assert not (tmp_path / "evil").exists() and not Path("/tmp/evil").exists()


def test_hostile_zip_members_are_refused(store: ArtifactStore, root: Path) -> None:
    def upload(name: str, content: bytes = b"x", mode: int = 0o100644) -> None:
        data = io.BytesIO()
        with zipfile.ZipFile(data, "w") as archive:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, content)
        data.seek(0)
        store.put_archive(data, "upload.zip")

    with pytest.raises(InvalidInput, match=r"'\.\./evil'"):
        upload("../evil")
    with pytest.raises(InvalidInput, match="absolute"):
        upload("/evil")
    with pytest.raises(InvalidInput, match=r"'etc'.*leading out"):
        upload("etc", b"/etc", stat.S_IFLNK | 0o777)
    with pytest.raises(InvalidInput, match=r"'up'.*leading out"):
        upload("up", b"../..", stat.S_IFLNK | 0o777)
    with pytest.raises(InvalidInput, match="'dev'"):
        upload("dev", b"", stat.S_IFCHR | 0o600)
    assert leftovers(root) == [] and bundles(root) == []


def test_an_archive_expanding_past_the_cap_stops_there(store: ArtifactStore, root: Path) -> None:
    zeros = b"\0" * (8 * MB)
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.bin", zeros)
    assert data.tell() < MB // 8
    data.seek(0)
    with pytest.raises(PayloadTooLarge, match="expands past"):
        store.put_archive(data, "bomb.zip")
    with pytest.raises(PayloadTooLarge, match="expands past"):
        store.put_archive(hostile_tar((member("bomb.bin"), zeros)), "bomb.tar.gz")
    many_small = [(member(f"part{index}.bin"), b"\0" * (MB // 8)) for index in range(9)]
    with pytest.raises(PayloadTooLarge, match="expands past"):  # counted across members
        store.put_archive(hostile_tar(*many_small), "parts.tar.gz")
    with pytest.raises(PayloadTooLarge, match="expands past"):  # hard links copy bytes too
        store.put_archive(
            hostile_tar(
                (member("a"), b"\0" * (MB // 2)),
                *[(member(f"l{i}", tarfile.LNKTYPE, "a"), b"") for i in range(3)],
            ),
            "links.tar.gz",
        )
    assert leftovers(root) == [] and bundles(root) == []


def test_a_huge_upload_is_cut_off_at_the_cap(store: ArtifactStore, root: Path) -> None:
    class Endless(io.RawIOBase):
        read_bytes = 0

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            size = MB if size < 0 else size
            self.read_bytes += size
            return b"\0" * size

    stream = Endless()
    with pytest.raises(PayloadTooLarge, match=f"larger than {MB} bytes"):
        store.put_archive(stream, "huge.tar.gz")  # type: ignore[arg-type]
    assert stream.read_bytes == MB + 1
    assert leftovers(root) == []


def test_too_many_members_are_refused(store: ArtifactStore, root: Path) -> None:
    with pytest.raises(PayloadTooLarge, match="more than 50 members"):
        store.put_archive(hostile_tar(*[(member(f"f{i}"), b"") for i in range(51)]), "many.tar.gz")
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for index in range(51):
            archive.writestr(f"f{index}", b"")
    data.seek(0)
    with pytest.raises(PayloadTooLarge, match="more than 50 members"):
        store.put_archive(data, "many.zip")
    assert leftovers(root) == []


@pytest.mark.parametrize(
    "content", [b"", b"just some text, not an archive", b"\x1f\x8b\x08\x00broken gzip", b"PK\x03\x04broken"]
)
def test_what_is_not_an_archive_is_refused(store: ArtifactStore, root: Path, content: bytes) -> None:
    with pytest.raises(InvalidInput, match=r"upload\.bin"):
        store.put_archive(io.BytesIO(content), "upload.bin")
    assert leftovers(root) == []


def test_a_truncated_archive_is_refused(store: ArtifactStore, root: Path, project: Path) -> None:
    whole = tar_gz(project).getvalue()
    with pytest.raises(InvalidInput, match="not a readable"):
        store.put_archive(io.BytesIO(whole[: len(whole) // 2]), "cut.tar.gz")
    assert leftovers(root) == [] and bundles(root) == []


def test_unpack_checks_a_stored_bundle_too(store: ArtifactStore, root: Path, tmp_path: Path) -> None:
    digest = "sha256:" + "f" * 64
    planted = hostile_tar((member("main.py"), b"ok"), (member("etc", tarfile.SYMTYPE, "/etc"), b""))
    (root / "sha256" / f"{'f' * 64}.tar.gz").write_bytes(planted.getvalue())
    into = tmp_path / "services" / "svc-1"
    with pytest.raises(InvalidInput, match="'etc'"):
        store.unpack(digest, into)
    assert not into.exists() and list((tmp_path / "services").iterdir()) == []


def test_bundle_is_plain_data() -> None:
    bundle = Bundle("sha256:" + "a" * 64, 3, Path("x"))
    assert bundle == Bundle("sha256:" + "a" * 64, 3, Path("x"))
