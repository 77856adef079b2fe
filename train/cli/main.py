"""The ``canasta`` command: one entry point dispatching subcommands.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``;
its options are declared once, as a dataclass of ``train.common.options.opt`` fields (``add_options``).
Only the module of the subcommand being run is imported, so ``canasta --help`` answers without
loading numba, the engine or torch (docs/training.md: ``--help`` in under a second).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

# name -> (module, one-line help). A registry, not an if-chain: a new subcommand is one entry here.
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("train.cli.bench", "measure engine speed: random legal play, decisions and hands per second"),
    "demo": ("train.cli.demo", "play one hand with random agents and show the table and the score"),
    "train": ("train.cli.train", "train an agent with PPO on the batched engine (--config FILE, --algo)"),
    "selfplay": ("train.cli.selfplay", "PPO against a pool of its own past checkpoints"),
    "league": ("train.cli.league", "PPO against a league: past checkpoints and rule agents, drawn by PFSP"),
    "exploit": ("train.cli.exploit", "exploitability: train a fresh PPO learner against a frozen agent (or "
                "search a rule family: --family heuristic or planner), then report its win rate on "
                "duplicate deals"),
    "gauntlet": ("train.cli.gauntlet", "one agent against every style profile on duplicate deals: win rates, "
                 "held-out profiles marked, the minimum"),
    "play": ("train.cli.play", "play Canasta in the terminal against agents (--record FILE saves the hands)"),
    "replay": ("train.cli.replay", "step through recorded hands (a --record file) from any seat's view"),
    "serve": ("train.cli.serve", "the web table: play against agents and replay hands in the browser"),
    "tournament": ("train.cli.tournament", "round robin or gauntlet of agents and checkpoints with ratings"),
    "crossplay": ("train.cli.crossplay", "partner cross-play: every ordered pair of agents as partners "
                  "against fixed opponents on duplicate deals, self-play against cross-play"),
    "export": ("train.cli.export", "write a checkpoint as a MaskablePPO zip (--format sb3) or ONNX policy"),
    "import": ("train.cli.import_model", "turn a MaskablePPO zip into a safe checkpoint (needs --trust)"),
}


# Commands that report their own compile time (the others compile under a notice: train.common.warmup).
SELF_WARMING = frozenset({"bench"})

# name -> examples shown at the end of ``canasta NAME --help``.
EXAMPLES: dict[str, str] = {
    "bench": "canasta bench --rules classic_4p --batch 1 1024 4096 --json\n"
             "  canasta bench --api vec --rules classic_2p --seconds 5",
    "demo": "canasta demo --rules classic_4p --seed 7",
    "train": "canasta train --config configs/train/quickstart.yaml\n"
             "  canasta train --rules classic_2p --opponent heuristic --total-timesteps 2000000 "
             "--run-dir runs/vs_heuristic\n"
             "  canasta train --run-dir runs/vs_heuristic --total-timesteps 4000000 --resume",
    "selfplay": "canasta selfplay --config configs/train/ppo_classic_2p.yaml --run-dir runs/self "
                "--pool-size 10",
    "league": "canasta league --config configs/train/league_classic_4p.yaml\n"
              "  canasta league --rules classic_2p --league heuristic greedy zoo:classic_2p "
              "--imitate heuristic",
    "exploit": "canasta exploit zoo:classic_2p --rules classic_2p --budget 5000000 --deals 1000\n"
               "  canasta exploit heuristic:rusher --rules classic_4p --budget 500000 --deals 200\n"
               "  canasta exploit zoo:classic_2p --rules classic_2p --family heuristic --budget 200 "
               "--deals 100",
    "gauntlet": "canasta gauntlet zoo:classic_2p --rules classic_2p --deals 1000\n"
                "  canasta gauntlet zoo:classic_4p --rules classic_4p --also greedy search "
                "--json gauntlet.json",
    "play": "canasta play --rules classic_2p --opponent heuristic --seed 7 --record games.jsonl\n"
            "  canasta play --rules classic_4p --human 0 --partners greedy --opponent zoo:classic_4p",
    "replay": "canasta replay games.jsonl --hand 2 --view 0",
    "serve": "canasta serve --rules classic_2p --opponent heuristic --port 8000\n"
             "  canasta serve --rules classic_4p --opponent zoo:classic_4p --partners heuristic "
             "--show-policy --record-dir games/",
    "tournament": "canasta tournament --rules classic_2p --agents random greedy heuristic "
                  "--hands 2000 --duplicate --deal-set v1 --out results/\n"
                  "  canasta tournament --rules classic_4p --agents zoo:classic_4p heuristic "
                  "--vs zoo:classic_4p --deal-set v1",
    "crossplay": "canasta crossplay --rules classic_4p --agents heuristic heuristic:eager greedy "
                 "--opponents heuristic --deals 100\n"
                 "  canasta crossplay --rules classic_4p --agents zoo:classic_4p heuristic "
                 "heuristic:pile_fighter --opponents heuristic greedy --out results/crossplay --json",
    "export": "canasta export zoo:classic_2p --format sb3 model.zip\n"
              "  canasta export zoo:classic_2p --format onnx policy.onnx",
    "import": "canasta import model.zip runs/imported --rules classic_2p --trust",
}


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("canasta-rl")
    except metadata.PackageNotFoundError:
        return "unknown"


DEBUG_HELP = "show the full traceback of errors (also CANASTA_DEBUG=1)"


class _VersionAction(argparse.Action):
    """``--version`` that looks the version up only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object):
        super().__init__(option_strings, dest=dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(f"canasta-rl {_version()}")
        parser.exit()


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: long options spelt out in full (no abbreviations: ``serve --record FILE``
    was ``--record-dir``, ``play --hand 2`` was ``--hands 2``), and an option it does not know refused
    by the subcommand itself, with the nearest options it has (``canasta train: error: ...``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._nearest(extras)}")
        return namespace, extras

    def _nearest(self, extras: Sequence[str]) -> str:
        """``(did you mean --X or --Y?)`` for the first unknown long option: the shown options it begins,
        else the closest spellings."""
        import difflib

        typed = next((e.split("=", 1)[0] for e in extras if e.startswith("--")), None)
        if typed is None:
            return ""
        shown = [s for a in self._actions if a.help != argparse.SUPPRESS for s in a.option_strings
                 if s.startswith("--")]
        near = [s for s in shown if s.startswith(typed)][:3] or difflib.get_close_matches(typed, shown, n=3)
        return f" (did you mean {' or '.join(near)}?)" if near else ""


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The top-level parser; the options of the subcommand named in ``argv`` (if any) are added by
    importing that subcommand's module, and no other. No option may be abbreviated (``_CommandParser``)."""
    parser = argparse.ArgumentParser(
        prog="canasta", description="canasta-rl: a fast vectorized Canasta engine for reinforcement "
        "learning. Run `canasta COMMAND --help` for a command's options.", allow_abbrev=False)
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module_name, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text,
                             epilog=f"example:\n  {EXAMPLES[name]}" if name in EXAMPLES else None,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
        cmd.add_argument("--version", action=_VersionAction)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(cmd)
            cmd.set_defaults(_run=module.run)
    return parser


def _check_command(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """An unknown command is refused in one line that suggests the nearest ones (argparse lists all)."""
    chosen = next((a for a in argv if not a.startswith("-")), None)
    if chosen is None or chosen in COMMANDS or any(a != "--debug" for a in argv[:argv.index(chosen)]):
        return  # no command, a known one, or top-level options that argparse answers first
    import difflib

    near = difflib.get_close_matches(chosen, COMMANDS, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(near)}?" if near else f"one of: {', '.join(COMMANDS)}"
    parser.error(f"unknown command {chosen!r}: {hint}")


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point (``canasta = train.cli.main:main``); returns the exit status.

    A user's mistake (a ``ValueError`` such as ``RulesError``, ``RecordError`` or ``CheckpointError``,
    or an ``OSError`` about a path) ends with one line ``canasta CMD: error: ...`` and status 2, like
    argparse's own errors; other exceptions are bugs and keep their traceback. ``--debug`` or
    ``CANASTA_DEBUG=1`` shows the traceback of user errors too. Ctrl-C, even while the subcommand's
    modules load, ends with one line and status 130; a reader that closed the pipe (``| head``) ends
    it quietly, with status 141 as if killed by SIGPIPE.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = " ".join(["canasta", *[a for a in argv if a in COMMANDS][:1]])
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # what is still buffered for stdout would fail again when Python flushes it at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv: list[str]) -> int:
    from train.common.warmup import check_numba_environment

    try:
        check_numba_environment()  # before any subcommand module imports numba
    except ValueError as exc:
        print(f"canasta: error: {exc}", file=sys.stderr)
        return 2
    parser = build_parser(argv)
    _check_command(parser, argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    debug = args.debug or os.environ.get("CANASTA_DEBUG", "") not in ("", "0")
    try:
        from train.common.warmup import check_cache_dir, warm_if_cold

        check_cache_dir()
        warm_if_cold(args.command, self_warming=args.command in SELF_WARMING)
        return int(args._run(args) or 0)
    except ModuleNotFoundError as exc:
        from canasta_env.messages import missing_extra

        advice = missing_extra(exc)
        if advice is None or debug:
            raise
        print(f"canasta {args.command}: error: {advice}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise
    except (ValueError, OSError) as exc:
        if debug:
            raise
        from canasta_env.messages import one_line

        print(f"canasta {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2

if __name__ == "__main__":
    sys.exit(main())
