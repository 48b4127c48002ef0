"""Network file systems are found from the mount table; findings are keyed by id and subject."""

from __future__ import annotations

from pathlib import Path

from a1x_diagnostics.findings import Evidence, Finding, Severity, Status
from a1x_diagnostics.live import FindingRaised, FindingResolved, FindingTracker, FindingUpdated, finding_key
from a1x_diagnostics.live._mounts import filesystem_type, is_network_fs, parse_mountinfo

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 253:0 / / rw,relatime - ext4 /dev/vda rw
40 27 0:45 / /lustre rw,relatime shared:20 - lustre 10.0.0.1@o2ib:/fs rw,flock
41 40 0:46 / /lustre/scratch/local rw,relatime - xfs /dev/nvme0n1 rw
42 27 0:47 / /mnt/nfs\\040share rw,relatime shared:30 master:2 - nfs4 server:/export rw,vers=4.2
43 27 0:48 / /gpfs rw - gpfs gpfs0 rw
44 27 0:49 / /home rw - fuse.sshfs me@host:/home rw
this line is not mountinfo
"""


def test_mountinfo_fields_and_escapes_are_read() -> None:
    mounts = dict(parse_mountinfo(MOUNTINFO))
    assert mounts["/mnt/nfs share"] == "nfs4"
    assert mounts["/lustre"] == "lustre"
    assert len(mounts) == 7


def test_the_longest_mount_point_decides() -> None:
    assert filesystem_type("/lustre/scratch/run1/logs", MOUNTINFO) == "lustre"
    assert filesystem_type("/lustre/scratch/local/run1", MOUNTINFO) == "xfs"
    assert filesystem_type("/lustreX/run", MOUNTINFO) == "ext4"  # a prefix of the name is not a parent


def test_network_file_systems_are_recognised() -> None:
    assert is_network_fs("/lustre/scratch/run1", MOUNTINFO)
    assert is_network_fs("/mnt/nfs share/logs", MOUNTINFO)
    assert is_network_fs("/gpfs/proj", MOUNTINFO)
    assert is_network_fs("/home/me", MOUNTINFO)
    assert not is_network_fs("/lustre/scratch/local/x", MOUNTINFO)
    assert not is_network_fs("/tmp", MOUNTINFO)


def test_this_machine_mount_table_is_readable(tmp_path: Path) -> None:
    assert filesystem_type(str(tmp_path)) is not None


def _finding(id_: str, replica: str | None = None, lines: int = 1, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(
        id=id_,
        severity=severity,
        title="t",
        explanation="e",
        evidence=[Evidence(file="f", line=i, text="x") for i in range(1, lines + 1)],
        data={"replica": replica} if replica else {},
    )


def test_one_finding_per_id_and_subject_raised_updated_resolved() -> None:
    tracker = FindingTracker()
    a0, a1 = _finding("replica_died", "policy_0"), _finding("replica_died", "rollout_1", severity=Severity.CRITICAL)
    assert finding_key(a0) == "replica_died@policy_0" and finding_key(_finding("stalled")) == "stalled"
    assert tracker.update([a0, a1]) == [
        FindingRaised(finding=a0, key="replica_died@policy_0"),
        FindingRaised(finding=a1, key="replica_died@rollout_1"),
    ]
    assert tracker.status() is Status.CRITICAL
    assert tracker.update([a0, a1]) == []
    grown = _finding("replica_died", "policy_0", lines=2)
    assert tracker.update([grown, a1]) == [FindingUpdated(finding=grown, key="replica_died@policy_0")]
    assert tracker.update([grown]) == [
        FindingResolved(finding_id="replica_died", key="replica_died@rollout_1", finding=a1)
    ]
    assert tracker.status() is Status.WARNING


def test_two_findings_with_the_same_key_in_one_evaluation_are_both_kept() -> None:
    tracker = FindingTracker()
    first, second = _finding("stalled"), _finding("stalled", lines=2)
    messages = tracker.update([first, second])
    assert [m.key for m in messages if isinstance(m, FindingRaised)] == ["stalled", "stalled#2"]


def test_a_finding_that_changes_its_subject_keeps_its_key_and_is_not_raised_again() -> None:
    """A replica first named by the launcher's process list, then by the controller's id for it until its
    own log is read, then by its log again: one finding, raised once (issue 37, point 3)."""
    tracker = FindingTracker()
    by_log = _finding("replica_died", "rollout_0", severity=Severity.CRITICAL)
    by_id = _finding("replica_died", "rollout 0feca14d", severity=Severity.CRITICAL, lines=2)
    other = _finding("replica_died", "policy_0", severity=Severity.CRITICAL)
    assert tracker.update([by_log, other]) == [
        FindingRaised(finding=by_log, key="replica_died@rollout_0"),
        FindingRaised(finding=other, key="replica_died@policy_0"),
    ]
    assert tracker.update([by_id, other]) == [FindingUpdated(finding=by_id, key="replica_died@rollout_0")]
    assert tracker.update([by_id, other]) == []
    grown = _finding("replica_died", "rollout_0", severity=Severity.CRITICAL, lines=3)
    assert tracker.update([grown, other]) == [FindingUpdated(finding=grown, key="replica_died@rollout_0")]
    assert set(tracker.open) == {"replica_died@rollout_0", "replica_died@policy_0"}
    # Two subjects vanishing while two appear cannot be paired: resolved and raised, as they are.
    a, b = _finding("replica_died", "rollout_1"), _finding("replica_died", "rollout_2")
    got = tracker.update([a, b])
    assert sorted(type(m).__name__ for m in got) == ["FindingRaised"] * 2 + ["FindingResolved"] * 2
