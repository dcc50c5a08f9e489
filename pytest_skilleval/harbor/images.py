"""The container image a skill's trials run in: its Dockerfile, and (under Docker) one build per skill and run.

The recipe, in order:
- the base: the default (`python:3.12-slim` plus `bash curl git jq ripgrep`), or `--base-image IMAGE` used as it
  is (nothing installed, so an offline image works), or the skill's own `evals/environment/Dockerfile`
  (`harbor.custom_dockerfile_mode`: `preserve` keeps its `FROM`; `rebase` swaps its first `FROM` for the base
  image when one is given);
- our layers: every agent's skill-discovery folder emptied, `/workspace/{input,output}` made, `WORKDIR /workspace`.

The skill itself is never in the image: Harbor's skills mechanism adds it in the with-skill arm only, so the two
arms share one image and the baseline can never find the skill on disk. Grading runs on the host, so no verifier
packages are installed either.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from verifier.skill_folders import SKILL_DISCOVERY_DIRS

DEFAULT_BASE_IMAGE = "python:3.12-slim"
DEFAULT_TOOLS = ("bash", "curl", "git", "jq", "ripgrep")
MAX_CUSTOM_DOCKERFILE_BYTES = 20_000
CUSTOM_DOCKERFILE = Path("environment") / "Dockerfile"  # relative to evals/
IMAGE_REPOSITORY_PREFIX = "skilleval/"
LABEL_SKILL = "org.skilleval.skill"
_FROM_RE = re.compile(r"^(\s*FROM\s+)(\S+)(.*)$", re.IGNORECASE)
_COPY_ENV_RE = re.compile(r"^\s*(COPY|ADD)\b[^\n]*\senvironment/", re.IGNORECASE | re.MULTILINE)


class ImageError(ValueError):
    """An image that cannot be defined or built; the message names the file or the image."""


@dataclass(frozen=True)
class ImagePlan:
    """How one skill's image is made: the Dockerfile text and the folder it builds in (None: no files needed)."""

    skill_name: str
    dockerfile: str
    context: Path | None

    @property
    def digest(self) -> str:
        """Content identity: the Dockerfile plus every file of the build context."""
        sha = hashlib.sha256(self.dockerfile.encode())
        if self.context is not None:
            for path in sorted(p for p in self.context.rglob("*") if p.is_file() and not p.is_symlink()):
                sha.update(path.relative_to(self.context).as_posix().encode() + b"\0")
                sha.update(path.read_bytes())
        return sha.hexdigest()[:12]

    @property
    def tag(self) -> str:
        """`skilleval/<skill>:<digest>`: `docker image ls` shows which skill it is for and which recipe."""
        name = re.sub(r"[^a-z0-9._-]+", "-", self.skill_name.lower()).strip("-._") or "skill"
        return f"{IMAGE_REPOSITORY_PREFIX}{name}:{self.digest}"


def _non_comment_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def custom_dockerfile_problems(path: Path) -> list[str]:
    """Why a skill's evals/environment/Dockerfile cannot be used, each without the file's name (the caller says
    which file); empty when it can."""
    try:
        size = path.stat().st_size
    except OSError as error:
        return [f"cannot read: {error}"]
    if size > MAX_CUSTOM_DOCKERFILE_BYTES:
        return [f"{size} bytes; a skill's Dockerfile may have at most {MAX_CUSTOM_DOCKERFILE_BYTES}"]
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = [line for line in _non_comment_lines(text) if not line.lstrip().upper().startswith("ARG ")]
    problems = []
    if not lines or not _FROM_RE.match(lines[0]):
        problems.append("the first instruction must be FROM")
    if _COPY_ENV_RE.search(text):
        problems.append("COPY/ADD paths are relative to evals/environment/; drop the 'environment/' prefix")
    return problems


def _rebased(text: str, base_image: str) -> str:
    out, done = [], False
    for line in text.splitlines():
        match = _FROM_RE.match(line)
        if match and not done:
            line, done = f"{match.group(1)}{base_image}{match.group(3)}", True
        out.append(line)
    return "\n".join(out) + "\n"


def our_layers() -> str:
    """What goes on top of any base: empty skill-discovery folders, the workspace layout, the working directory."""
    dirs = " ".join(SKILL_DISCOVERY_DIRS)
    return (
        "# pytest-skilleval: no agent may find a skill in the image; Harbor adds it in the with-skill arm only.\n"
        f"RUN rm -rf {dirs} && mkdir -p /workspace/input /workspace/output\n"
        "WORKDIR /workspace\n"
        "# Harbor keeps the sandbox alive with `sleep infinity`, which ignores SIGTERM: stop in 0 s, not 10 s.\n"
        "STOPSIGNAL SIGKILL\n"
    )


def default_base() -> str:
    tools = " ".join(DEFAULT_TOOLS)
    return (
        f"FROM {DEFAULT_BASE_IMAGE}\n"
        "RUN apt-get update \\\n"
        f" && apt-get install -y --no-install-recommends {tools} \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
    )


def image_plan(
    skill_dir: Path, base_image: str | None, custom_mode: str = "rebase", custom_dockerfile: Path | None = None
) -> ImagePlan:
    """The recipe for one skill. `custom_dockerfile` defaults to the skill's evals/environment/Dockerfile."""
    custom = custom_dockerfile if custom_dockerfile is not None else skill_dir / "evals" / CUSTOM_DOCKERFILE
    if custom.is_file():
        problems = custom_dockerfile_problems(custom)
        if problems:
            raise ImageError("; ".join(f"{custom}: {problem}" for problem in problems))
        text = custom.read_text(encoding="utf-8")
        if custom_mode == "rebase" and base_image:
            text = _rebased(text, base_image)
        head = text if text.endswith("\n") else text + "\n"
        return ImagePlan(skill_dir.name, head + our_layers(), custom.parent)
    head = f"FROM {base_image}\n" if base_image else default_base()
    return ImagePlan(skill_dir.name, head + our_layers(), None)


def _ignore_reserved_input(directory: str, names: list[str]) -> list[str]:
    """evals/environment/input/ is reserved for the case inputs and never part of the image."""
    return ["input"] if Path(directory).name == "environment" and "input" in names else []


def write_context(plan: ImagePlan, destination: Path) -> Path:
    """A build folder holding the Dockerfile and the custom Dockerfile's files (never input/)."""
    if destination.exists():
        shutil.rmtree(destination)
    if plan.context is not None:
        shutil.copytree(plan.context, destination, symlinks=True, ignore=_ignore_reserved_input)
    else:
        destination.mkdir(parents=True)
    (destination / "Dockerfile").write_text(plan.dockerfile, encoding="utf-8")
    return destination


def image_exists(tag: str, docker: str = "docker") -> bool:
    return subprocess.run([docker, "image", "inspect", tag], capture_output=True, timeout=60).returncode == 0


def ensure_image(
    plan: ImagePlan,
    run_id: str,
    rebuild: bool = False,
    docker: str = "docker",
    timeout: float = 1800,
    run_only: bool = False,
) -> str:
    """Build the skill's image once (a lock keeps parallel pytest workers from building it twice); its tag.

    The tag is content-addressed, so a run reuses an identical image and a changed recipe gets a new tag.
    `rebuild` builds again without Docker's layer cache (harbor.base_image_mode: rebuild). `run_only`
    (base_image_mode: disabled) tags the image for this run alone: it is removed at the run's end, so another
    run at the same moment with the same recipe must not be using it.
    """
    tag = f"{plan.tag}-{run_id}" if run_only else plan.tag
    lock_dir = Path(tempfile.gettempdir()) / "skilleval-image-locks"
    lock_dir.mkdir(exist_ok=True)
    stem = tag.replace("/", "_").replace(":", "_")  # the tag as one file name
    with open(lock_dir / f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # rebuild: once per run; this run's first builder leaves a marker the others (xdist workers) see.
        marker = lock_dir / f"{stem}.{run_id}.rebuilt"
        if image_exists(tag, docker) and (not rebuild or marker.exists()):
            return tag
        with tempfile.TemporaryDirectory(prefix="skilleval-image-") as tmp:
            context = write_context(plan, Path(tmp) / "context")
            argv = [
                docker,
                "build",
                "-t",
                tag,
                "--label",
                f"{LABEL_SKILL}={plan.skill_name}",
                "--label",
                f"org.skilleval.run={run_id}",
            ]
            if rebuild:
                argv.append("--no-cache")
            built = subprocess.run([*argv, str(context)], capture_output=True, text=True, timeout=timeout)
        if built.returncode != 0:
            tail = (built.stderr or built.stdout).strip()[-1500:]
            raise ImageError(f"docker build of {tag} for skill {plan.skill_name} failed:\n{tail}")
        if rebuild:
            marker.touch()
    return tag


def adapt_native_dockerfile(env_dir: Path, base_image: str | None, custom_mode: str) -> None:
    """A native task's own environment/Dockerfile, staged copy only: rebased like a skill's custom Dockerfile and
    given our layers, so its baseline has no skill on disk either. A task without one (compose, image) is kept."""
    dockerfile = env_dir / "Dockerfile"
    if not dockerfile.is_file() or dockerfile.is_symlink():
        return
    text = dockerfile.read_text(encoding="utf-8")
    if custom_mode == "rebase" and base_image:
        text = _rebased(text, base_image)
    dockerfile.unlink()
    dockerfile.write_text(text.rstrip("\n") + "\n" + our_layers(), encoding="utf-8")


def task_dockerfile(image: str, has_inputs: bool) -> str:
    """A generated task's environment/Dockerfile when the skill's image is already built."""
    lines = [f"FROM {image}"]
    if has_inputs:
        lines.append("COPY input/ /workspace/input/")
    return "\n".join(lines) + "\n"
