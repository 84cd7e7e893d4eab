"""Every shell block of skills/memgate/SKILL.md runs as written on the bundled
examples: each `memgate …` line must exit 0, or the code its `# exits N`
comment names. Run in a scratch copy of examples/ so nothing is written into
the repository."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from test_mcp import REPO, binary

SKILL = REPO / "skills" / "memgate" / "SKILL.md"


def blocks():
    return re.findall(r"```bash\n(.*?)```", SKILL.read_text(), re.S)


def checked(block: str) -> str:
    out = []
    for line in block.splitlines():
        m = re.match(r"^(memgate .*?)(?:\s+#\s*exits (\d+))?\s*$", line)
        if not m:
            out.append(line)
            continue
        want = m.group(2) or "0"
        quoted = m.group(1).replace("'", "'\\''")
        out.append(f"{m.group(1)} >/dev/null; rc=$?; [ $rc -eq {want} ] || "
                   f"{{ echo 'exit '$rc' (want {want}): {quoted}' >&2; exit 1; }}")
    return "\n".join(out) + "\n"


def test_the_skill_has_front_matter_and_the_sections():
    text = SKILL.read_text()
    front = re.match(r"^---\nname: memgate\ndescription: (.+?)\n---\n", text, re.S)
    assert front and len(front.group(1)) > 50
    for heading in ("## When to use it", "## Commands", "## Reading the figures",
                    "## NPU notes", "## What to do on each failure", "## CI setup"):
        assert heading in text, heading


def test_every_command_in_the_skill_runs_as_written(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "memgate").symlink_to(Path(binary()).resolve())
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    found = blocks()
    assert len(found) >= 6
    commands = sum(1 for b in found for l in b.splitlines() if l.startswith("memgate "))
    assert commands >= 15
    for b in found:
        r = subprocess.run(["bash", "-c", checked(b)], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr + "\n---\n" + b
    assert (tmp_path / "golden-new" / "rank0.json").exists()
    assert (tmp_path / "profile.html").exists()
