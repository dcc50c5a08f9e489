"""codex's patch format as the replay agent applies it (pytest_skilleval/harbor/replay_edits.py): the rules of codex's
apply-patch crate for finding each chunk, and the calls recognised as a patch."""

from __future__ import annotations

import pytest

from pytest_skilleval.harbor.replay_edits import PatchError, parse_patch, patch_call, updated_text

PATCH = "*** Begin Patch\n*** Update File: a.py\n{body}\n*** End Patch"


def _update(text: str, body: str) -> str:
    (hunk,) = parse_patch(PATCH.format(body=body))
    return updated_text(text, hunk.chunks, hunk.path)


def test_chunks_are_found_after_their_context_and_in_order() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    body = "@@ def b():\n-    return 1\n+    return 2"
    assert _update(text, body) == "def a():\n    return 1\n\ndef b():\n    return 2\n"


def test_whitespace_is_ignored_only_when_no_exact_match_exists() -> None:
    """The matched lines, context included, become the chunk's lines as the patch writes them (as in codex)."""
    assert _update("x = 1   \ny = 2\n", " x = 1\n-y = 2\n+y = 3") == "x = 1\ny = 3\n"
    assert _update("x = 1\nx = 1  \n", "-x = 1  \n+z") == "x = 1\nz\n"
    assert _update("  x\n", "-x\n+z") == "z\n"


def test_an_end_of_file_chunk_matches_the_last_lines() -> None:
    assert _update("k\nv\nk\nv\n", "-k\n+K\n v\n*** End of File") == "k\nv\nK\nv\n"


def test_a_chunk_that_is_not_there_fails_like_codex() -> None:
    with pytest.raises(PatchError, match="Failed to find expected lines in a.py"):
        _update("one\n", "-two\n+three")


def test_add_delete_and_move_are_read() -> None:
    hunks = parse_patch(
        "*** Begin Patch\n*** Add File: n.txt\n+hi\n*** Delete File: old.txt\n"
        "*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch"
    )
    assert [(h.kind, h.path, h.contents, h.move_to) for h in hunks] == [
        ("add", "n.txt", "hi\n", None),
        ("delete", "old.txt", "", None),
        ("update", "a.txt", "", "b.txt"),
    ]
    with pytest.raises(PatchError, match="must be '\\*\\*\\* Begin Patch'"):
        parse_patch("*** Add File: x\n+y\n*** End Patch")


@pytest.mark.parametrize(
    ("tool", "arguments", "patch", "workdir"),
    [
        ("exec_command", {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\nP\nEOF"}, "*** Begin Patch\nP", "/workspace"),
        ("exec_command", {"cmd": "cd src && apply_patch <<EOF\nQ\nEOF", "workdir": "/w"}, "Q", "/w/src"),
        ("shell", {"command": ["apply_patch", "R"]}, "R", "/workspace"),
        ("shell", {"command": ["bash", "-lc", "apply_patch <<'X'\nS\nX"]}, "S", "/workspace"),
        ("apply_patch", {"input": "T"}, "T", "/workspace"),
    ],
)
def test_codex_patch_calls_are_recognised(tool: str, arguments: dict, patch: str, workdir: str) -> None:
    call = patch_call(tool, arguments, "/workspace")
    assert call is not None and (call.patch, call.workdir) == (patch, workdir)


@pytest.mark.parametrize("command", ["echo apply_patch", "apply_patch <<EOF\nP\nEOF; rm -rf /", "cat <<EOF\nP\nEOF"])
def test_other_commands_are_not_patches(command: str) -> None:
    assert patch_call("exec_command", {"cmd": command}, "/workspace") is None
