"""The durability model alone (crashlab/_lab/powerloss/model.py): no mount, no FUSE, so these
run everywhere. Expected values are written out by hand from the promise in
docs/crashlab-powerloss.md (fsync(2), its NOTES on directories, open(2) O_SYNC)."""

from __future__ import annotations

from crashlab._lab.powerloss.model import Entry, Model, sectors, torn_keep

ROOT = 1


def _model_with_file(size: int = 100) -> Model:
    """Root with one durable file ``f`` (node 2) of ``size`` bytes, as at mount time."""
    model = Model(ROOT)
    model.existing(ROOT, "f", Entry(2, "file"), 0o644)
    return model


def _tree(model: Model) -> dict[str, int]:
    return {path: entry.node for path, entry, _mode in model.cut(current_sizes={}).tree}


def test_only_overwritten_durable_bytes_are_saved_and_once() -> None:
    model = _model_with_file()
    assert model.before_write(2, 90, 20, current_size=100) == [(90, 100)]  # 100.. is beyond the durable size
    model.save(2, 90, b"d" * 10)
    model.wrote(2, 90, 20, synchronous=False)
    assert model.before_write(2, 95, 10, current_size=110) == []  # already saved, then beyond
    assert model.before_truncate(2, 50, current_size=110) == [(50, 90)]
    model.save(2, 50, b"c" * 40)
    plan = model.cut(current_sizes={2: 50})
    [revert] = plan.reverts
    assert revert.size == 100
    assert revert.restore == ((50, b"c" * 40), (90, b"d" * 10))


def test_fsync_and_o_sync_writes_are_durable() -> None:
    model = _model_with_file()
    model.before_write(2, 0, 10, current_size=100)
    model.save(2, 0, b"x" * 10)
    model.wrote(2, 0, 10, synchronous=False)
    assert model.dirty() == {2: 100}
    model.sync_file(2)
    assert model.dirty() == {} and model.cut(current_sizes={}).reverts == ()
    model.before_write(2, 100, 5, current_size=100)
    model.wrote(2, 100, 5, synchronous=True)  # a descriptor opened O_SYNC / O_DSYNC
    assert model.dirty() == {}


def test_a_new_file_is_durable_empty_once_its_directory_is_synced() -> None:
    model = Model(ROOT)
    model.created(5, "file", 0o644)
    model.changed([(ROOT, "new", Entry(5, "file"))], label="create /new")
    model.before_write(5, 0, 4, current_size=0)
    model.wrote(5, 0, 4, synchronous=False)
    assert _tree(model) == {}  # the entry is not durable: the file is gone
    assert model.cut(current_sizes={5: 4}).undone == ("create /new",)
    model.sync_dir(ROOT)
    assert _tree(model) == {"new": 5}
    [revert] = model.cut(current_sizes={5: 4}).reverts
    assert (revert.node, revert.size, revert.lost_bytes) == (5, 0, 4)  # name durable, data not


def test_unlink_and_rename_are_undone_until_the_directory_is_synced() -> None:
    model = _model_with_file()
    model.existing(ROOT, "g", Entry(3, "file"), 0o644)
    model.changed([(ROOT, "g", None)], removed=[3], label="unlink /g")
    model.changed([(ROOT, "f", None), (ROOT, "h", Entry(2, "file"))], label="rename /f -> /h")
    assert _tree(model) == {"f": 2, "g": 3}
    model.sync_dir(ROOT)
    assert _tree(model) == {"h": 2}


def test_a_rename_across_directories_is_one_unit() -> None:
    model = Model(ROOT)
    model.existing(ROOT, "a", Entry(10, "dir"), 0o755)
    model.existing(ROOT, "b", Entry(11, "dir"), 0o755)
    model.existing(10, "x", Entry(12, "file"), 0o644)
    model.changed([(10, "x", None), (11, "x", Entry(12, "file"))], label="rename /a/x -> /b/x")
    model.sync_dir(11)  # only the destination: the source's half comes with it
    assert _tree(model) == {"a": 10, "b": 11, "b/x": 12}


def test_committing_an_operation_commits_the_earlier_history_of_its_objects() -> None:
    model = Model(ROOT)
    for name, node in (("x", 20), ("y", 21), ("z", 22)):
        model.existing(ROOT, name, Entry(node, "dir"), 0o755)
    model.existing(20, "d", Entry(30, "dir"), 0o700)
    model.changed([(20, "d", None), (21, "d", Entry(30, "dir"))], label="rename /x/d -> /y/d")
    model.changed([(21, "d", None), (22, "d", Entry(30, "dir"))], label="rename /y/d -> /z/d")
    model.sync_dir(22)
    tree = _tree(model)
    assert [p for p, n in tree.items() if n == 30] == ["z/d"]  # never in two places
    assert [mode for path, _e, mode in model.cut(current_sizes={}).tree if path == "z/d"] == [0o700]


def test_sectors_split_at_absolute_offsets() -> None:
    assert sectors(1000, 3000, 512) == [(1000, 1024), (1024, 1536), (1536, 2048), (2048, 2560), (2560, 3072),
                                        (3072, 3584), (3584, 4000)]
    assert sectors(4096, 8192, 4096) == [(4096, 8192), (8192, 12288)]
    assert sectors(10, 5, 512) == [(10, 15)]


def test_a_torn_write_keeps_a_strict_sector_aligned_prefix() -> None:
    for granularity in (512, 4096):
        kept = {torn_keep(1000, 20000, granularity, seed) for seed in range(40)}
        assert len(kept) > 1, "the seed chooses how much survives"
        for keep in kept:
            assert 0 < keep < 20000
            assert (1000 + keep) % granularity == 0
        assert torn_keep(1000, 20000, granularity, 7) == torn_keep(1000, 20000, granularity, 7)
    assert torn_keep(0, 300, 512, 3) == 300  # one sector: written whole or not at all


def test_the_torn_write_is_the_last_write_call_not_a_mapped_page_writeback() -> None:
    model = _model_with_file()
    model.before_write(2, 0, 10, current_size=100)
    model.save(2, 0, b"o" * 10)
    model.wrote(2, 0, 10, synchronous=False)
    model.created(4, "file", 0o644)
    model.before_write(4, 0, 4096, current_size=0)
    model.wrote(4, 0, 4096, synchronous=False, writeback=True)  # e.g. SQLite's -shm pages
    assert model.last_unsynced_write() == (2, 0, 10)
    plan = model.cut(current_sizes={}, torn_granularity=512, seed=1)
    assert plan.torn is not None and (plan.torn.node, plan.torn.keep) == (2, 10)
    model.sync_file(2)
    assert model.last_unsynced_write() is None
    assert model.cut(current_sizes={}, torn_granularity=512).torn is None
