"""The checkpoint policy and its hash (spec-phase4 §2.1, §2.4, §2.5)."""

from __future__ import annotations

import hashlib
import json

import pytest

from maka_ref._checkpoint import (
    CheckpointError,
    decode_policy,
    policy_document,
    policy_hash,
)
from maka_ref._checkpoint.policy import (
    DEFAULT_POLICY,
    DEFAULT_POLICY_HASH,
    CheckpointPolicy,
    exclude_file_text,
    is_excluded,
)

#: The canonical document of spec-phase4 §2.5, copied from the spec text.
SPEC_DOCUMENT = (
    '{"attributes":"reject_conversion","emptyDirectories":"not_recorded","excludedPaths":[".maka-effects.jsonl",'
    '".maka-workspace.json",".maka/","runtime.sqlite","runtime.sqlite-journal","runtime.sqlite-shm",'
    '"runtime.sqlite-wal"],"executableBit":"recorded","ignoreRules":"gitignore_files_and_info_exclude",'
    '"ignoredFiles":"excluded","maxFileBytes":104857600,"maxFiles":100000,"maxTotalBytes":2147483648,'
    '"pathEncoding":"utf8_required","protocol":"maka_checkpoint_policy_v1","specialFiles":"not_recorded",'
    '"submodules":"reject","symlinks":"recorded_as_links","trackedFiles":"worktree_content",'
    '"untrackedFiles":"included_unless_ignored"}'
)
SPEC_HASH = "sha256:ab23d8c63ab28bcb66cec95a5d51d191a3b21ab579c6058ba3b6eb96386c5eca"


def _lp(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def test_default_hash_is_the_spec_formula_over_the_spec_bytes() -> None:
    """§2.4/§2.5: sha256(LP(domain) ‖ LP(SJ(policy))), recomputed here with hashlib alone."""
    recomputed = "sha256:" + hashlib.sha256(_lp(b"maka.checkpoint-policy.v1") + _lp(SPEC_DOCUMENT.encode())).hexdigest()
    assert recomputed == SPEC_HASH
    assert DEFAULT_POLICY_HASH == SPEC_HASH
    assert policy_hash(DEFAULT_POLICY) == SPEC_HASH


def test_document_round_trips_and_matches_the_spec_document() -> None:
    assert policy_document(DEFAULT_POLICY) == json.loads(SPEC_DOCUMENT)
    assert decode_policy(json.loads(SPEC_DOCUMENT)) == DEFAULT_POLICY


@pytest.mark.parametrize("change", [
    {"maxFiles": 100001}, {"maxFileBytes": 1}, {"maxTotalBytes": 2147483647},
    {"excludedPaths": [".maka-effects.jsonl", ".maka-workspace.json"]},
])
def test_any_variable_change_gives_another_hash(change: dict[str, object]) -> None:
    document = {**json.loads(SPEC_DOCUMENT), **change}
    assert policy_hash(decode_policy(document)) != SPEC_HASH


@pytest.mark.parametrize("change", [
    {"symlinks": "followed"}, {"protocol": "maka_checkpoint_policy_v2"}, {"submodules": "include"},
    {"maxFiles": 0}, {"maxFiles": True}, {"maxFiles": 1.5}, {"maxFiles": "10"}, {"maxTotalBytes": 2**53},
    {"excludedPaths": ["b", "a"]}, {"excludedPaths": ["a", "a"]}, {"excludedPaths": ["/abs"]},
    {"excludedPaths": ["a/../b"]}, {"excludedPaths": [""]}, {"excludedPaths": ["a//b"]},
    {"excludedPaths": "runtime.sqlite"}, {"extra": 1},
])
def test_a_document_that_breaks_section_2_1_is_refused(change: dict[str, object]) -> None:
    document = {**json.loads(SPEC_DOCUMENT), **change}
    with pytest.raises(CheckpointError) as caught:
        decode_policy(document)
    assert caught.value.code == "invalid_checkpoint_policy"


def test_missing_key_is_refused() -> None:
    document = json.loads(SPEC_DOCUMENT)
    del document["attributes"]
    with pytest.raises(CheckpointError, match="invalid_checkpoint_policy"):
        decode_policy(document)


def test_excluded_paths_match_entries_and_directories_only() -> None:
    policy = CheckpointPolicy(excluded_paths=(".maka/", "a b", "runtime.sqlite"))
    assert is_excluded("runtime.sqlite", policy)
    assert not is_excluded("runtime.sqlite.bak", policy)
    assert not is_excluded("sub/runtime.sqlite", policy)
    assert is_excluded(".maka", policy) and is_excluded(".maka/scripts/x", policy)
    assert not is_excluded(".makae", policy)
    # root-anchored and glob-escaped for core.excludesFile (a space would otherwise be trimmed)
    assert exclude_file_text(policy) == b"/.maka/\n/a\\ b\n/runtime.sqlite\n"
