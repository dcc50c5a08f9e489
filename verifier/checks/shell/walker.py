"""Walks parsed command lines of a whole trace, tracking the shell's directory, variables and functions, and
applies the rm and network rules. Never executes anything; all work is charged to a per-trace budget."""

from __future__ import annotations

import re
from functools import lru_cache

from verifier.checks.shell import network_rules as net
from verifier.checks.shell.ast import Compound, FuncDef, HereDoc, Pipe, Seq, Simple, Word
from verifier.checks.shell.commands import (
    CLIENTS,
    MENTION_CLIENTS,
    RUNNERS,
    SHELLS,
    TEXT_CONSUMERS,
    command_name,
    shell_script_arg,
    unwrap,
)
from verifier.checks.shell.parser import ShellSyntaxError, parse
from verifier.checks.shell.paths import dot_glob_variants, expand_braces, is_absolute, is_cache_operand, join, normalize
from verifier.checks.shell.rm_rules import SPENT, parse_rm, verdict

START_DIR = "/workspace"
MAX_DISTINCT_DIRS = 32
WORK_BUDGET = 1_000_000
MAX_TEXT_DEPTH = 10
MAX_FUNC_DEPTH = 8
FALLBACK_ARGS = 256
PARSE_CACHE_TEXT = 4096
_RM_WORD_RE = re.compile(r"(?<![\w.-])rm(?![\w.-])", re.I)
_NAMES_CURL_WGET = re.compile(r"(?<![\w.-])(curl|wget)(?![\w.-])", re.I)
_FALLBACK_TOKEN_RE = re.compile(r"[;&|()<>`\n]+|[^\s;&|()<>`]+")
_INPUT_OPS = frozenset({"<", "<<", "<<-", "<<<", "<>"})
_ECHOERS = frozenset({"echo", "printf", "print"})
_POSITIONAL_RE = re.compile(r"[0-9@*]")


class BudgetSpent(Exception):
    """The trace's resolution work budget ran out in the middle of a call."""


class Limits:
    """Per-trace caps: more than 32 distinct directories in one call, and a work budget."""

    __slots__ = ("unresolved", "budget", "spent")

    def __init__(self, budget: int = WORK_BUDGET) -> None:
        self.unresolved = False
        self.budget = budget
        self.spent = False

    def charge(self, units: int = 1) -> None:
        self.budget -= units
        if self.budget < 0:
            self.spent = True
            raise BudgetSpent


class ShellState:
    """What persists in the agent's shell: directory, dir stack, simple literal variables, functions."""

    __slots__ = ("cwd", "oldpwd", "stack", "vars", "funcs")

    def __init__(self, cwd: str | None = START_DIR) -> None:
        self.cwd = cwd
        self.oldpwd: str | None = None
        self.stack: list[str | None] = []
        self.vars: dict[str, tuple[str, ...]] = {}
        self.funcs: dict[str, object] = {}

    def copy(self) -> ShellState:
        s = ShellState(self.cwd)
        s.oldpwd = self.oldpwd
        s.stack = list(self.stack) if self.stack else []
        s.vars = dict(self.vars) if self.vars else {}
        s.funcs = dict(self.funcs) if self.funcs else {}
        return s


class Frame:
    """How the current node is reached (input, positional args, find/xargs context, which rules are on)."""

    __slots__ = (
        "stdin",
        "positional",
        "via",
        "net",
        "sub_net",
        "find_starts",
        "xargs",
        "deferred",
        "depth",
        "func_depth",
        "note",
    )

    def __init__(self) -> None:
        self.stdin = False
        self.positional: list[Word] | None = None
        self.via = False
        self.net = True
        self.sub_net = True
        self.find_starts: list[Word] | None = None
        self.xargs = False
        self.deferred = False
        self.depth = 0
        self.func_depth = 0
        self.note = ""

    def but(self, **kw: object) -> Frame:
        f = Frame.__new__(Frame)
        for k in Frame.__slots__:
            setattr(f, k, kw[k] if k in kw else getattr(self, k))
        return f


ROOT = Frame()


class CallResult:
    __slots__ = ("destructive", "network", "unparsed")

    def __init__(self) -> None:
        self.destructive: list[str] = []
        self.network: list[str] = []
        self.unparsed: str | None = None


class TraceWalker:
    """One per trajectory: `analyze(text, workdir)` for each exec call, in order."""

    def __init__(self, budget: int = WORK_BUDGET) -> None:
        self.state = ShellState()
        self.limits = Limits(budget)
        # per-call
        self.res = CallResult()
        self.moved: set[str] = set()
        self.line_dirs: list[str | None] = []
        self.deferred: list[tuple[Seq, ShellState, Frame]] = []
        self.action = ""
        self.plain_rm = False

    # ------------------------------------------------------------------ entry
    def analyze(self, text: str, workdir: str = "") -> CallResult:
        self.res = CallResult()
        self.moved = set()
        self.deferred = []
        self.action = text
        st = self.state
        if workdir:
            wd = workdir.strip()
            st.cwd = normalize(wd) if is_absolute(wd) else (join(st.cwd, wd) if st.cwd else None)
        self.line_dirs = [st.cwd]
        try:
            if self.limits.spent:
                raise BudgetSpent
            try:
                seq = _parse_call(text) if len(text) <= PARSE_CACHE_TEXT else parse(text)
            except (ShellSyntaxError, RecursionError) as exc:
                self._fallback(text, st, ROOT, f"command could not be parsed: {exc}")
                return self.res
            self.plain_rm = _is_plain_rm(seq)
            self.walk(seq, st, ROOT)
            self._run_deferred()
        except BudgetSpent:
            self._fallback(text, st, ROOT, "resolution work budget spent")
        except RecursionError:
            self._fallback(text, st, ROOT, "command nested too deeply")
        return self.res

    # ------------------------------------------------------------------ traversal
    def walk(self, node: object, st: ShellState, fr: Frame) -> None:
        if isinstance(node, Simple):
            self.simple(node, st, fr)
        elif isinstance(node, Seq):
            for item in node.items:
                self.walk(item, st, fr)
        elif isinstance(node, Pipe):
            for k, cmd in enumerate(node.cmds):
                self.walk(cmd, st.copy(), fr.but(stdin=True) if k and not fr.stdin else fr)
        elif isinstance(node, Compound):
            self.compound(node, st, fr)
        elif isinstance(node, FuncDef):
            st.funcs[node.name] = node.body
            self.runners_in_definition(node.body, st, fr)

    def runners_in_definition(self, body: object, st: ShellState, fr: Frame) -> None:
        """The runner rule holds after a function header even when the function is never called
        (`f(){ ssh host curl URL; }`): walk the body on a scratch result and keep only the runner warnings."""
        if not fr.net or fr.via:
            return
        saved, deferred = self.res, self.deferred
        self.res, self.deferred = CallResult(), []
        try:
            self.walk(body, st.copy(), fr)
            found = [reason for reason in self.res.network if reason.startswith("runner ")]
        finally:
            self.res, self.deferred = saved, deferred
        self.res.network.extend(found)

    def compound(self, node: Compound, st: ShellState, fr: Frame) -> None:
        self.limits.charge()
        for w in node.words:
            for sub in w.subs():
                self.defer(sub, st, fr)
        if node.redirs:
            fr = self.redirs(node.redirs, st, fr)
        if node.kind in ("subshell", "coproc"):
            st = st.copy()
        if node.kind in ("for", "select") and node.var:
            values = self.literal_values(node.words, st) if node.words else None
            if values is None:
                st.vars.pop(node.var, None)
            else:
                st.vars[node.var] = tuple(values)
        for body in node.bodies:
            self.walk(body, st, fr)

    def defer(self, seq: Seq, st: ShellState, fr: Frame) -> None:
        """Substitutions and heredoc scripts: checked against every directory the command line visits."""
        if fr.deferred:
            self.walk(seq, st.copy(), fr.but(net=fr.net and fr.sub_net))
        else:
            self.deferred.append((seq, st.copy(), fr.but(net=fr.net and fr.sub_net, deferred=True)))

    def _run_deferred(self) -> None:
        dirs = list(dict.fromkeys(self.line_dirs))[: MAX_DISTINCT_DIRS + 1]
        for seq, snap, fr in self.deferred:
            for k, d in enumerate(dirs):
                s2 = snap.copy()
                s2.cwd = d
                self.walk(seq, s2, fr if k == 0 else fr.but(net=False))

    def redirs(self, redirs: list, st: ShellState, fr: Frame) -> Frame:
        """Walk redirection targets and heredocs; returns the frame with stdin set when input is supplied."""
        has_input = False
        null_input = False
        for r in redirs:
            for sub in r.target.subs():
                self.defer(sub, st, fr)
            if r.op in _INPUT_OPS:
                if r.target.lit == "/dev/null":
                    null_input = True
                else:
                    has_input = True
            if r.heredoc is not None:
                self.heredoc(r.heredoc, st, fr)
            elif r.op == "<<<" and fr.net and not fr.via:
                reason = net.mention_upload(net.mention_tokens([r.target.text()]))
                if reason:
                    self.res.network.append(reason)
        if null_input and not has_input:
            return fr.but(stdin=False) if fr.stdin else fr
        return fr.but(stdin=True) if has_input and not fr.stdin else fr

    def heredoc(self, hd: HereDoc, st: ShellState, fr: Frame) -> None:
        body = hd.body
        if fr.net:
            for line in body.split("\n"):
                reason = net.mention_upload(net.mention_tokens([line]))
                if reason:
                    self.res.network.append(f"{reason} (in a here-document)")
                    break
        live = not hd.quoted and ("$(" in body or "`" in body)
        if not (_RM_WORD_RE.search(body) or live):
            return
        if fr.depth >= MAX_TEXT_DEPTH:
            self._fallback(body, st, fr, "here-document nested too deeply")
            return
        try:
            seq = parse(body, fr.depth + 1)
        except (ShellSyntaxError, RecursionError) as exc:
            self._fallback(body, st, fr.but(net=False), f"here-document could not be parsed: {exc}")
            return
        self.defer(seq, st, fr.but(net=False, sub_net=live and fr.net, depth=fr.depth + 1))

    def walk_text(self, text: str, st: ShellState, fr: Frame, what: str) -> None:
        """A string the shell will run (sh -c, eval, watch, a runner's remote command)."""
        if fr.depth >= MAX_TEXT_DEPTH:
            self._fallback(text, st, fr, f"{what} nested too deeply")
            return
        try:
            seq = parse(text, fr.depth + 1)
        except (ShellSyntaxError, RecursionError) as exc:
            self._fallback(text, st, fr, f"{what} could not be parsed: {exc}")
            return
        self.walk(seq, st, fr.but(depth=fr.depth + 1))

    # ------------------------------------------------------------------ words
    def expand(self, w: Word, st: ShellState, fr: Frame, multi: bool = True) -> list[Word]:
        """Whole-word positional parameters and known literal variables; anything else stays as it is."""
        if w.lit is not None:
            return [w]
        parts = w.parts
        if len(parts) == 1 and parts[0][0] in ("var", "param"):
            name = parts[0][1]
            quoted = parts[0][2]
            if fr.positional is not None and _POSITIONAL_RE.fullmatch(name or "x"):
                if name in ("@", "*"):
                    return list(fr.positional[1:])
                idx = int(name)
                return [fr.positional[idx]] if idx < len(fr.positional) else []
            if parts[0][0] == "param" and parts[0][3][0] != name:
                return [w]
            vals = st.vars.get(name)
            if vals is not None and len(vals) > 1 and multi:
                return [Word.literal(v, quoted) for v in vals]
            if vals is not None and len(vals) == 1:
                if quoted:
                    return [Word.literal(vals[0])]
                return [Word.literal(v, False) for v in vals[0].split()]
        elif st.vars and all(p[0] == "lit" or (p[0] == "var" and len(st.vars.get(p[1], ())) == 1) for p in parts):
            return [Word.literal("".join(p[1] if p[0] == "lit" else st.vars[p[1]][0] for p in parts), w.quoted)]
        return [w]

    def literal_values(self, words: list[Word], st: ShellState) -> list[str] | None:
        out: list[str] = []
        for w in words:
            lit = w.lit
            if lit is None:
                return None
            out.extend(expand_braces(lit) or [lit])
        return out

    def resolve(self, w: Word, st: ShellState, fr: Frame) -> list[str] | str | None:
        """Candidate absolute paths an rm operand can name; None when unresolved, SPENT after the budget."""
        if self.limits.spent:
            return SPENT
        lit = w.lit
        if fr.find_starts is not None and (lit is None or "{}" in lit or not is_absolute(lit)):
            out: list[str] = []
            for start in fr.find_starts:
                got = self.resolve(start, st, fr.but(find_starts=None))
                if got is None or got == SPENT:
                    return got
                out.extend(got)
            return out
        if lit is not None:
            text = lit
        else:
            first = w.parts[0]
            if first[0] in ("var", "param") and first[1] == "HOME" and (first[0] == "var" or first[3][0] == "HOME"):
                rest = Word(w.parts[1:]).text() if len(w.parts) > 1 else ""
                text = "~" + rest
            else:
                prefix = []
                for p in w.parts:
                    if p[0] != "lit":
                        break
                    prefix.append(p[1])
                pre = "".join(prefix)
                if "/" not in pre and not pre.startswith("~"):
                    return None
                text = pre[: pre.rfind("/") + 1] + "*" if "/" in pre else pre + "*"
        texts = [text]
        if "{" in text:
            expanded = expand_braces(text)
            if expanded is None:
                # More alternatives than resolution is allowed to enumerate: the budget is gone.
                self.limits.spent = True
                return SPENT
            texts = expanded
        out = []
        for t in texts:
            variants = dot_glob_variants(t)
            if variants is None:
                self.limits.spent = True
                return SPENT
            for v in variants:
                if is_absolute(v):
                    out.append(normalize(v))
                elif self.limits.unresolved or st.cwd is None:
                    return None
                else:
                    out.append(join(st.cwd, v))
        try:
            self.limits.charge(len(out))
        except BudgetSpent:
            return SPENT
        return out

    # ------------------------------------------------------------------ simple commands
    def simple(self, node: Simple, st: ShellState, fr: Frame) -> None:
        self.limits.charge()
        for w in node.assigns:
            for sub in w.subs():
                self.defer(sub, st, fr)
        for w in node.words:
            for sub in w.subs():
                if not (w is node.words[0] and w.lit is None):
                    self.defer(sub, st, fr)
        if node.redirs:
            fr = self.redirs(node.redirs, st, fr)
        if not node.words:
            for a in node.assigns:
                self.assign(a, st)
            return
        words: list[Word] = []
        for w in node.words:
            # A loop variable with several values is not expanded as the command word (the $VAR rule reads it).
            words.extend(self.expand(w, st, fr, multi=bool(words)))
        words, _wrappers, script = unwrap(words)
        if script is not None:
            self.walk_text(script, st.copy(), fr, "wrapped command")
            return
        if not words:
            return
        cmd, args = words[0], words[1:]
        name = command_name(cmd)
        if name is None:
            self.dynamic_command(cmd, args, st, fr)
            return
        self.dispatch(name, args, st, fr)

    def assign(self, a: Word, st: ShellState) -> None:
        name = a.assign or ""
        lit = a.lit
        if lit is not None and "+=" not in lit.split("=", 1)[0] + "=":
            value = lit.split("=", 1)[1]
            if value.startswith("("):
                st.vars.pop(name, None)
            else:
                st.vars[name] = (value,)
            return
        tmp = _mktemp_value(a)
        if tmp is not None:
            st.vars[name] = (tmp,)
        else:
            st.vars.pop(name, None)

    def dispatch(self, name: str, args: list[Word], st: ShellState, fr: Frame) -> None:
        if name in ("cd", "pushd", "popd"):
            self.change_dir(name, args, st, fr)
        elif name == "rm":
            self.rm(args, st, fr)
        elif name == "xargs":
            self.xargs(args, st, fr)
        elif name == "find":
            self.find(args, st, fr)
        elif name in SHELLS and (found := shell_script_arg([Word.literal(name)] + args)) is not None:
            script, rest = found
            self.walk_text(
                script.lit if script.lit is not None else script.text(),
                st.copy(),
                fr.but(positional=rest or [Word.literal(name)]),
                "shell -c script",
            )
        elif name == "eval":
            self.walk_text(" ".join(a.text() for a in args), st, fr, "eval text")
        elif name in st.funcs and fr.func_depth < MAX_FUNC_DEPTH:
            self.walk(st.funcs[name], st, fr.but(positional=[Word.literal(name)] + args, func_depth=fr.func_depth + 1))
        elif name in CLIENTS:
            if fr.net:
                reason = net.client_upload(name, [a.text() for a in args], fr.stdin)
                if reason:
                    self.res.network.append(reason)
        elif name in RUNNERS or (name == "ip" and [a.lit for a in args[:2]] == ["netns", "exec"]):
            self.runner(name, args, st, fr)
        else:
            self.mentions(name, args, fr)

    def mentions(self, name: str, args: list[Word], fr: Frame) -> None:
        if not fr.net or not args:
            return
        texts = [a.text() for a in args]
        if not any(c in t.lower() for t in texts for c in MENTION_CLIENTS):
            return
        stdin = fr.stdin and name not in TEXT_CONSUMERS
        reason = net.mention_upload(net.mention_tokens(texts), stdin)
        if reason:
            self.res.network.append(reason)

    def runner(self, name: str, args: list[Word], st: ShellState, fr: Frame) -> None:
        if fr.net and not fr.via:
            for tok in net.mention_tokens([a.text() for a in args]):
                if "://" not in tok and tok.rsplit("/", 1)[-1].lower() in MENTION_CLIENTS:
                    self.res.network.append(f"runner {name} starts a command naming {tok}")
                    break
        else:
            self.mentions(name, args, fr)
        # What the runner starts elsewhere: rm rules with an unknown directory.
        foreign = ShellState(None)
        inner = fr.but(via=True, net=False, find_starts=None, xargs=False)
        for k, w in enumerate(args):
            nm = command_name(w)
            if nm == "rm" or nm in SHELLS:
                self.simple(Simple([], args[k:], []), foreign, inner)
                return
        for w in args:
            t = w.text()
            if " " in t or ";" in t:
                self.walk_text(t, foreign.copy(), inner, "remote command")

    def dynamic_command(self, cmd: Word, args: list[Word], st: ShellState, fr: Frame) -> None:
        """`$(which curl) ...`, `$c ...`: check each client or runner the word can name."""
        subs = list(cmd.subs())
        if subs:
            named: dict[str, list[Word]] = {}
            for sub in subs:
                _names_in(sub, named, 0)
            for nm, extra in named.items():
                self.dispatch(nm, extra + args, st, fr)
            for sub in subs:
                self.defer(sub, st, fr)
            return
        if fr.net and cmd.parts[0][0] in ("var", "param"):
            texts = [a.text() for a in args]
            for nm in dict.fromkeys(m.lower() for m in _NAMES_CURL_WGET.findall(self.action)):
                reason = net.client_upload(nm, texts, fr.stdin)
                if reason:
                    self.res.network.append(f"{reason} (command word {cmd.text()} may be {nm})")
                    break
        self.mentions("", args, fr)

    # ------------------------------------------------------------------ directories
    def change_dir(self, name: str, args: list[Word], st: ShellState, fr: Frame) -> None:
        self.limits.charge()
        no_cd = False
        target: Word | None = None
        for a in args:
            lit = a.lit
            if lit in ("-L", "-P", "-e", "-@", "--"):
                continue
            if lit == "-n" and name != "cd":
                no_cd = True
                continue
            target = a
            break
        old = st.cwd
        if name == "popd":
            if target is not None and target.lit and target.lit[:1] in "+-" and target.lit[1:].isdigit():
                idx = int(target.lit[1:])
                full = [st.cwd] + st.stack
                if target.lit[0] == "-":
                    idx = len(full) - 1 - idx
                if 0 <= idx < len(full):
                    full.pop(idx)
                    if idx == 0 and full:
                        st.cwd = full[0]
                        self.note_dir(st.cwd, fr)
                    st.stack = full[1:]
                return
            if st.stack:
                if no_cd:
                    st.stack.pop(0)
                    return
                st.cwd = st.stack.pop(0)
                st.oldpwd = old
                self.note_dir(st.cwd, fr)
            return
        if target is None:
            if name == "cd":
                new: str | None = "~"
            else:
                if not st.stack:
                    return
                new, st.stack[0] = st.stack[0], old
                st.oldpwd, st.cwd = old, new
                self.note_dir(new, fr)
                return
        elif target.lit == "-" and name == "cd":
            new = st.oldpwd
        elif name == "pushd" and target.lit and target.lit[:1] in "+-" and target.lit[1:].isdigit():
            full = [st.cwd] + st.stack
            n = int(target.lit[1:]) % len(full)
            if target.lit[0] == "-":
                n = (len(full) - n) % len(full)
            full = full[n:] + full[:n]
            st.cwd, st.stack = full[0], full[1:]
            self.note_dir(st.cwd, fr)
            return
        else:
            new = self.resolve_dir(target, st)
        if name == "pushd":
            if no_cd:
                st.stack.insert(0, new)
                return
            st.stack.insert(0, old)
        st.oldpwd, st.cwd = old, new
        self.note_dir(new, fr)

    def resolve_dir(self, w: Word, st: ShellState) -> str | None:
        lit = w.lit
        if lit is None:
            first = w.parts[0]
            if first[0] == "var" and first[1] == "HOME":
                lit = "~" + (Word(w.parts[1:]).lit or "" if len(w.parts) > 1 else "")
                if len(w.parts) > 1 and Word(w.parts[1:]).lit is None:
                    return None
            else:
                return None
        if is_absolute(lit):
            return normalize(lit)
        if st.cwd is None:
            return None
        return join(st.cwd, lit)

    def note_dir(self, d: str | None, fr: Frame) -> None:
        if d is None:
            return
        if d not in self.moved:
            self.moved.add(d)
            if len(self.moved) > MAX_DISTINCT_DIRS:
                self.limits.unresolved = True
        if not fr.deferred and len(self.line_dirs) <= MAX_DISTINCT_DIRS + 1:
            self.line_dirs.append(d)

    # ------------------------------------------------------------------ rm, xargs, find
    def rm(self, args: list[Word], st: ShellState, fr: Frame) -> None:
        call = parse_rm(args)
        if fr.xargs:
            if call.recursive or call.force:
                self.res.destructive.append("xargs rm with a recursive or force option")
            return
        if not (call.recursive or call.force) or not call.operands:
            return
        if (
            call.recursive
            and self.plain_rm
            and not fr.deferred
            and fr.find_starts is None
            and all(o.lit is not None and is_cache_operand(o.lit) for o in call.operands)
        ):
            return
        for op in call.operands:
            reason = verdict(call, op, self.resolve(op, st, fr))
            if reason:
                self.res.destructive.append(reason + fr.note)
                return

    def xargs(self, args: list[Word], st: ShellState, fr: Frame) -> None:
        with_value = {
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--replace",
            "--max-lines",
            "--eof",
        }
        k = 0
        while k < len(args):
            lit = args[k].lit
            if lit is None or not lit.startswith("-") or lit == "-":
                break
            k += 1
            if lit == "--":
                break
            if lit in with_value:
                k += 1
        self.mentions("xargs", args, fr)
        rest, _w, _s = unwrap(args[k:])
        if rest:
            self.simple(Simple([], rest, []), st.copy(), fr.but(xargs=True, via=True, net=False))

    def find(self, args: list[Word], st: ShellState, fr: Frame) -> None:
        self.mentions("find", args, fr)
        k = 0
        while (
            k < len(args)
            and (opt := args[k].lit) is not None
            and (opt in ("-H", "-L", "-P") or opt.startswith(("-D", "-O")))
        ):
            k += 2 if opt == "-D" else 1
        starts: list[Word] = []
        while k < len(args):
            lit = args[k].lit
            if lit is not None and (lit.startswith("-") or lit in ("(", "!", ",")):
                break
            starts.append(args[k])
            k += 1
        if not starts:
            starts = [Word.literal(".")]
        while k < len(args):
            if args[k].lit in ("-exec", "-execdir", "-ok", "-okdir"):
                j = k + 1
                while j < len(args) and args[j].lit not in (";", "+"):
                    j += 1
                inner = args[k + 1 : j]
                if inner:
                    self.simple(
                        Simple([], inner, []),
                        st.copy(),
                        fr.but(find_starts=starts, via=True, net=False, positional=None),
                    )
                k = j
            k += 1

    # ------------------------------------------------------------------ unparseable text
    def _fallback(self, text: str, st: ShellState, fr: Frame, why: str) -> None:
        """Conservative token scan: every cd before an rm counts, in order; clients and runners by name."""
        res = self.res
        if res.unparsed is None:
            res.unparsed = why
        note = f" ({why})"
        tokens = [m.group() for m in _FALLBACK_TOKEN_RE.finditer(text)]
        segments: list[list[str]] = [[]]
        for t in tokens:
            if t[0] in ";&|()<>`\n":
                segments.append([])
            else:
                segments[-1].append(t.strip("'\"$"))
        dirs: list[str | None] = [st.cwd]
        fb = fr.but(find_starts=None, xargs=False, note=note)
        for seg in segments:
            for i, tok in enumerate(seg):
                base = tok.rsplit("/", 1)[-1].lower()
                if base in ("cd", "pushd"):
                    target = next((t for t in seg[i + 1 : i + 4] if t and not t.startswith("-")), "~")
                    new = self.resolve_dir(Word.literal(target, False), st)
                    st.oldpwd, st.cwd = st.cwd, new
                    self.note_dir(new, fr)
                    if len(dirs) <= MAX_DISTINCT_DIRS and new not in dirs:
                        dirs.append(new)
                elif base == "popd" and st.stack:
                    st.cwd = st.stack.pop(0)
                elif base == "rm" and not res.destructive:
                    words = [Word.literal(t, False) for t in seg[i + 1 : i + 1 + FALLBACK_ARGS] if t]
                    for d in dirs:
                        probe = st.copy()
                        probe.cwd = d
                        self.rm(words, probe, fb)
                        if res.destructive:
                            break
                elif fr.net and not res.network and base in RUNNERS and not fr.via:
                    if any(t.rsplit("/", 1)[-1].lower() in MENTION_CLIENTS for t in seg[i + 1 : i + 1 + FALLBACK_ARGS]):
                        res.network.append(f"runner {base} names a client{note}")
            if fr.net and not res.network:
                reason = net.mention_upload(seg[: FALLBACK_ARGS * 4])
                if reason:
                    res.network.append(reason + note)
        try:
            self.limits.charge(len(tokens) // 64 + 1)
        except BudgetSpent:
            pass


@lru_cache(maxsize=4096)
def _parse_call(text: str) -> Seq:
    """Agents repeat commands (ls, git status, pytest); the tree is never mutated, so it can be shared."""
    return parse(text)


def _is_plain_rm(seq: Seq) -> bool:
    """The cache exemption is for a tool call that is one plain `rm` and nothing else."""
    if len(seq.items) != 1 or not isinstance(seq.items[0], Simple):
        return False
    node = seq.items[0]
    return (
        not node.assigns
        and bool(node.words)
        and node.words[0].lit is not None
        and command_name(node.words[0]) == "rm"
        and all(w.lit is not None for w in node.words)
    )


def _names_in(node: object, named: dict[str, list[Word]], depth: int) -> None:
    """Clients, runners and rm named by any command of a substitution (with echoed arguments)."""
    if depth > 8:
        return
    if isinstance(node, Seq):
        for item in node.items:
            _names_in(item, named, depth + 1)
    elif isinstance(node, Pipe):
        for item in node.cmds:
            _names_in(item, named, depth + 1)
    elif isinstance(node, Compound):
        for body in node.bodies:
            _names_in(body, named, depth + 1)
    elif isinstance(node, Simple) and node.words:
        echo = command_name(node.words[0]) in _ECHOERS
        for i, w in enumerate(node.words[1:], start=1):
            nm = command_name(w)
            if nm in CLIENTS or nm in RUNNERS or nm == "rm":
                if nm not in named:
                    named[nm] = list(node.words[i + 1 :]) if echo else []
                if echo:
                    break
        for w in node.words:
            for sub in w.subs():
                _names_in(sub, named, depth + 1)


def _mktemp_value(a: Word) -> str | None:
    """`X=$(mktemp ...)` names a fresh path under /tmp (unless -p/--tmpdir points elsewhere)."""
    subs = [p for p in a.parts if p[0] == "sub"]
    if len(subs) != 1 or len(a.parts) > 2:
        return None
    seq = subs[0][1]
    if len(seq.items) != 1 or not isinstance(seq.items[0], Simple):
        return None
    words = seq.items[0].words
    if not words or command_name(words[0]) != "mktemp":
        return None
    for i, w in enumerate(words[1:], start=1):
        lit = w.lit or ""
        if lit in ("-p", "--tmpdir") and i + 1 < len(words):
            d = words[i + 1].lit
            return (d.rstrip("/") + "/tmp.mktemp") if d and d.startswith("/") else None
        if lit.startswith("--tmpdir="):
            d = lit.split("=", 1)[1]
            return (d.rstrip("/") + "/tmp.mktemp") if d.startswith("/") else None
    return "/tmp/tmp.mktemp"
