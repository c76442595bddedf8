"""The fenced code blocks of a Markdown page and their markers (`<!-- ... -->` lines above)."""

import dataclasses
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KNOWN_FIXTURES = ("tiny_release", "tiny_hf", "tiny_run", "tiny_finetuned", "tiny_ner", "tiny_tfalbert",
                  "tiny_keras_hub")


LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)")
_COMMENT = re.compile(r"^\s*<!--(.*)-->\s*$")


@dataclasses.dataclass
class Block:
    path: Path
    line: int              # 1-based line of the opening fence
    language: str          # as written after the fence, lower-cased ("" for none)
    code: str
    not_tested: str = None   # the reason, when marked
    fixtures: tuple = ()
    problems: tuple = ()     # malformed markers

    @property
    def kind(self):
        return LANGUAGES.get(self.language)

    @property
    def name(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _markers(lines, fence_index):
    """(not_tested, fixtures, problems) from the comment lines directly above the fence."""
    not_tested, fixtures, problems = None, (), []
    k = fence_index - 1
    while k >= 0 and _COMMENT.match(lines[k]):
        body = _COMMENT.match(lines[k]).group(1).strip()
        if body.startswith("not tested"):
            reason = body[len("not tested"):].lstrip(":").strip()
            if not reason:
                problems.append("`not tested` without a reason")
            not_tested = reason or "?"
        elif body.startswith("test fixture"):
            names = body[len("test fixture"):].lstrip(":s").strip()
            fixtures = tuple(n.strip() for n in names.split(",") if n.strip())
            unknown = [n for n in fixtures if n not in KNOWN_FIXTURES]
            if unknown or not fixtures:
                problems.append(f"unknown fixture(s) {unknown or names!r}; known: {', '.join(KNOWN_FIXTURES)}")
        k -= 1
    if not_tested and fixtures:
        problems.append("both `not tested` and `test fixture`")
    return not_tested, fixtures, tuple(problems)


def parse_blocks(path):
    """The fenced code blocks of a Markdown file, with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, language = match.groups()
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and not lines[j].strip().strip(fence[0])):
            j += 1
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:j])
        not_tested, fixtures, problems = _markers(lines, i)
        blocks.append(Block(path, i + 1, language.lower(), code + "\n", not_tested, fixtures, problems))
        i = j + 1
    return blocks
