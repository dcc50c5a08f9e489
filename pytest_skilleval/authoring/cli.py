"""The `skilleval` console script: offline grading, validation, authoring scaffolds and reading finished runs.

Each subcommand lives in the module that owns its logic; this file only routes argv to it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

USAGE = """usage: skilleval <command> [options]

commands:
  init                  start a new skill that runs offline at once (SKILL.md, a script, a case, replays)
  grade                 grade one trajectory offline and print the reward JSON
  validate              check a skill's dataset, config.yml, native tasks and grader without running anything
                        (a folder of skills: each skill below it)
  check-suite           run an agent that does nothing on every case: name cases that cannot fail
  create-eval-dataset   draft evals/evals.json from SKILL.md through an LLM (a starter case; --full: a covering
                        set and evals/triggers.json)
  init-custom-grader    write a starter evals/grader.py or grader.sh
  init-harbor-task      write a runnable native Harbor task under evals/harbor/<case-id>/
  doctor                check the environment (Docker, backends, --ek), the agents' credentials and the results
                        folder, PASS/FAIL each
  install-skill         copy a skill shipped with skilleval (create-custom-grader) into an agent's skills folder
  scripted-model        serve a scripted model on 127.0.0.1 so a real agent runs without an API key
  view                  print a finished run's summary again and the path of its report.html
  compare               per-case and per-dimension differences between two runs (or two agents of one run)
  trajectory            print a trial's trajectory from a finished run (--replay: ready to commit as a replay)
  optimize-description  propose better SKILL.md descriptions and measure each on the trigger set
  harbor-view           browse the Harbor trial folders a run kept (--harbor-keep-jobs) in Harbor's own viewer

Run `skilleval <command> --help` for a command's options."""


def _init(argv: list[str]) -> int:
    from pytest_skilleval.authoring.init_skill import run_init_command

    return run_init_command(argv)


def _grade(argv: list[str]) -> int:
    from pytest_skilleval.authoring.grade_case import run_grade

    return run_grade(argv)


def _validate(argv: list[str]) -> int:
    from pytest_skilleval.authoring.validate_command import run_validate_command

    return run_validate_command(argv)


def _check_suite(argv: list[str]) -> int:
    from pytest_skilleval.authoring.check_suite import run_check_suite_command

    return run_check_suite_command(argv)


def _init_custom_grader(argv: list[str]) -> int:
    from pytest_skilleval.authoring.scaffold import run_init_custom_grader

    return run_init_custom_grader(argv)


def _init_harbor_task(argv: list[str]) -> int:
    from pytest_skilleval.authoring.scaffold import run_init_harbor_task

    return run_init_harbor_task(argv)


def _create_eval_dataset(argv: list[str]) -> int:
    from pytest_skilleval.authoring.create_dataset import run_create_eval_dataset

    return run_create_eval_dataset(argv)


def _doctor(argv: list[str]) -> int:
    from pytest_skilleval.authoring.doctor import run_doctor

    return run_doctor(argv)


def _install_skill(argv: list[str]) -> int:
    from pytest_skilleval.authoring.install_skill import run_install_skill

    return run_install_skill(argv)


def _scripted_model(argv: list[str]) -> int:
    from pytest_skilleval.testing.command import run_scripted_model_command

    return run_scripted_model_command(argv)


def _view(argv: list[str]) -> int:
    from pytest_skilleval.results.view import run_view_command

    return run_view_command(argv)


def _compare(argv: list[str]) -> int:
    from pytest_skilleval.results.compare import run_compare_command

    return run_compare_command(argv)


def _trajectory(argv: list[str]) -> int:
    from pytest_skilleval.results.trajectory_out import run_trajectory_command

    return run_trajectory_command(argv)


def _optimize_description(argv: list[str]) -> int:
    from pytest_skilleval.authoring.optimize_description import run_optimize_command

    return run_optimize_command(argv)


def _harbor_view(argv: list[str]) -> int:
    from pytest_skilleval.authoring.harbor_view import run_harbor_view_command

    return run_harbor_view_command(argv)


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "init": _init,
    "grade": _grade,
    "validate": _validate,
    "check-suite": _check_suite,
    "init-custom-grader": _init_custom_grader,
    "init-harbor-task": _init_harbor_task,
    "install-skill": _install_skill,
    "scripted-model": _scripted_model,
    "view": _view,
    "compare": _compare,
    "trajectory": _trajectory,
    "doctor": _doctor,
    "optimize-description": _optimize_description,
    "harbor-view": _harbor_view,
    "create-eval-dataset": _create_eval_dataset,
}


def main(argv: list[str] | None = None) -> int:
    """Route argv to its subcommand; a reader of standard output that left early ends the command quietly."""
    try:
        try:
            return _route(list(sys.argv[1:] if argv is None else argv))
        finally:  # also when argparse exits (--help): what is buffered is written now, while a closed pipe is caught
            sys.stdout.flush()
    except BrokenPipeError:
        return _stdout_closed()


def _route(args: list[str]) -> int:
    from pytest_skilleval.harbor.process_env import default_env

    default_env()  # offline by default, as in the plugin: litellm's price map and Harbor's telemetry stay local
    if not args or args[0] in {"-h", "--help"}:
        print(USAGE)
        return 0 if args else 2
    command = COMMANDS.get(args[0])
    if command is None:
        print(f"skilleval: unknown command {args[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return command(args[1:])


def _stdout_closed() -> int:
    """The reader of standard output left early (`skilleval view | head`): end quietly, as pytest's console_main
    does and Python's documentation advises (its "Note on SIGPIPE"). What is still buffered goes to /dev/null, so
    the interpreter's last flush raises nothing; 1 is the status Python exits with on a broken pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1


if __name__ == "__main__":
    sys.exit(main())
