"""The ``poplar-py`` command: run a program on the simulated IPU, print a saved profile."""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import traceback
from types import TracebackType

import click

from . import target
from .compiler.partition import launched_rank
from .profile.html import write_html, write_html_from_json
from .profile.report import summary
from .profile.report_files import write_profile_reports


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="poplar-py")
def main() -> None:
    """poplar-py: Poplar-style graph programs on a simulated IPU (IPUModel)."""


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True})
@click.argument("program", type=click.Path(exists=True, dir_okay=False))
@click.option("--tiles", type=click.IntRange(min=1), help="Tiles per IPU that IPUModel() starts with.")
@click.option("--ipus", type=click.IntRange(min=1), help="Number of IPUs that IPUModel() starts with.")
@click.option("--arch", type=click.Choice(["ipu1", "ipu2", "ipu21"]),
              help="IPU version IPUModel() defaults to (ipu21: a Bow IPU).")
@click.option("--profile", "profile_file", type=click.Path(dir_okay=False),
              help="Write the JSON profile report of every Engine to this file.")
@click.option("--profile-html", "profile_html", type=click.Path(dir_okay=False),
              help="Write the profile as an HTML page to this file when the program ends (and the JSON "
                   "report beside it, as FILE with .json, unless --profile names one).")
@click.option("--all-ranks-output", is_flag=True,
              help="Under mpiexec, keep the standard output of every rank (only rank 0's by default).")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(program: str, tiles: int | None, ipus: int | None, arch: str | None,
        profile_file: str | None, profile_html: str | None, all_ranks_output: bool,
        args: tuple[str, ...]) -> None:
    """Run PROGRAM (a Python file) as __main__ with ARGS as its sys.argv[1:].

    The options may come before or after PROGRAM; any other option is passed to the
    program (everything after `--` is passed as it is). They set the defaults of every
    ``poplar.IPUModel()`` the program creates; fields the program sets itself win.
    Under ``mpiexec -n K``, every rank runs PROGRAM on its share of the tiles.
    """
    target.setModelDefaults(tilesPerIPU=tiles, numIPUs=ipus, IPUVersion=arch)
    if profile_html and not profile_file:
        profile_file = os.path.splitext(profile_html)[0] + ".json"
    if profile_file:
        os.environ["POPLAR_PY_PROFILE_FILE"] = os.path.abspath(profile_file)
    sys.argv = [program, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    try:
        with contextlib.ExitStack() as stack:
            if launched_rank() != 0 and not all_ranks_output:
                stack.enter_context(contextlib.redirect_stdout(stack.enter_context(open(os.devnull, "w"))))
            try:
                runpy.run_path(program, run_name="__main__")
            finally:
                target.setModelDefaults()
                if profile_html and profile_file and launched_rank() == 0:
                    _render_html(profile_file, profile_html)
    except Exception as exc:  # as Python reports it, from the program's own code on
        sys.stdout.flush()
        traceback.print_exception(type(exc), exc, _from_program(exc.__traceback__, program))
        sys.exit(1)


def _from_program(tb: TracebackType | None, program: str) -> TracebackType | None:
    """``tb`` without the launcher's frames (this module's and runpy's) before the program's first
    (none left for an error in compiling the program, which names its file and line itself)."""
    path = os.path.abspath(program)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    return tb


def _render_html(report: str, page: str) -> None:
    """After a run: bring the engines' JSON report up to date and render it as a page."""
    write_profile_reports()
    if not os.path.exists(report):
        click.echo(f"poplar-py: no Engine wrote a profile, so there is no {page}", err=True)
        return
    try:
        size = write_html_from_json(report, page)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # never hides the program's own error
        click.echo(f"poplar-py: could not write the profile page {page}: {exc}", err=True)
        return
    click.echo(f"poplar-py: profile page {page} ({size / 1024:,.0f} KiB), report {report}", err=True)


@main.command()
@click.argument("report", type=click.Path(exists=True, dir_okay=False))
@click.option("--steps", is_flag=True, help="Also list every execution step with its cycles.")
@click.option("--html", "html", type=click.Path(dir_okay=False),
              help="Write the profile as one self-contained HTML page to this file instead.")
def profile(report: str, steps: bool, html: str | None) -> None:
    """Print the summary of a saved JSON profile REPORT (profile.json), or write it as a page."""
    try:
        with open(report) as f:
            data = json.load(f)
        text = summary(data, {"showExecutionSteps": "true" if steps else "false"})
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise click.ClickException(f"{report} is not a poplar-py profile report ({exc})") from None
    if html:
        size = write_html(data, html, os.path.basename(report))
        click.echo(f"wrote {html} ({size / 1024:,.0f} KiB)")
        return
    click.echo(text, nl=False)


if __name__ == "__main__":
    main()
