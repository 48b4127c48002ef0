"""What a run spec's strings may hold, by where they end up (issue "nothing hijacked": docs/supervisor.md,
"The run spec"). A value is refused here, with one line, when its target cannot hold it:

- ``#SBATCH`` values and words that Cosmos-RL's job templates paste unquoted into a shell line
  (docs/reference/cosmos-rl.md §11.1-§11.2): no whitespace, no control character, no quote or shell character;
- names that become paths or Hydra config names: no ``..`` and no ``/``;
- command lines and values that we quote ourselves: no control character (a quoted word holds the rest).

Each check raises ``ValueError`` (pydantic turns it into the spec's one-line error).
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: none of them belongs in a
# spec value, and a newline in an #SBATCH value or an unquoted template word becomes a new shell line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A Slurm name (partition, account, QOS...): sbatch reads the #SBATCH line itself, Cosmos-RL's 747d1bd
# template pastes it after `-p`/`-A` (a comma list of partitions is one word).
SLURM_WORD = re.compile(r"[A-Za-z0-9_.,:@%+=-]+")
# A path pasted into a template's shell line or an #SBATCH line: the characters bash, sbatch's
# filename patterns (%) and the container mount lists (, and :) leave alone.
TEMPLATE_PATH = re.compile(r"/[A-Za-z0-9_./+@=-]*")
# A container image as pyxis takes it (registry#image:tag, a .sqsh path); pasted unquoted at 747d1bd.
CONTAINER = re.compile(r"[A-Za-z0-9_./:@+=%,-][A-Za-z0-9_./:@#+=%,-]*")
# A Hydra config name or a data feature name that becomes a folder name: one plain word.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def control_chars(value: str) -> str | None:
    """The first control character of ``value`` as ``\\xNN`` (None when there is none)."""
    m = _CONTROL.search(value)
    return None if m is None else f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}"


def no_controls(value: str, what: str) -> str:
    bad = control_chars(value)
    if bad is not None:
        raise ValueError(f"{what}: {value!r} holds the control character {bad}")
    return value


def _matching(pattern: re.Pattern[str], value: str, what: str, why: str) -> str:
    no_controls(value, what)
    if not pattern.fullmatch(value) or (pattern is PLAIN_NAME and ".." in value):
        raise ValueError(f"{what}: {value!r} {why}")
    return value


def slurm_word(value: str, what: str) -> str:
    return _matching(SLURM_WORD, value, what, "is not a Slurm name (letters, digits and _.,:@%+=- only; it goes on "
                     "an #SBATCH line and into Cosmos-RL's job template as one word)")


def template_path(value: str, what: str) -> str:
    return _matching(TEMPLATE_PATH, value, what, "must be an absolute path of letters, digits and _./+@=- only: the "
                     "job template pastes it unquoted into shell lines, #SBATCH lines and comma/colon mount lists")


def plain_name(value: str, what: str) -> str:
    return _matching(PLAIN_NAME, value, what, "is not a plain name (letters, digits, _ . -; no '/' and no '..': it "
                     "becomes a file or config name)")
