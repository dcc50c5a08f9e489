"""A bounded recursive-descent parser for POSIX/bash command lines.

Why our own parser: bashlex rejects `case`, `coproc`, `$(( ))`, arrays and `[[ ]]`, and is too slow for the
checks' target (benchmarks/bench_checks.py). This one reads each character once (substitutions are parsed
inline, not re-lexed), never executes anything, and raises `ShellSyntaxError` on what it cannot read or on
nesting deeper than `MAX_DEPTH`, so callers can fall back to a conservative scan.
"""

from __future__ import annotations

import re

from verifier.checks.shell.ast import Compound, FuncDef, HereDoc, Node, Pipe, Redir, Seq, Simple, Word

MAX_DEPTH = 40
ARITH_SCAN_LIMIT = 4096

_BREAK = frozenset(" \t\r\n;&|()<>")
_PLAIN_RE = re.compile(r"[^ \t\r\n;&|()<>\\'\"$`]+")
_DQ_PLAIN_RE = re.compile(r'[^"\\$`]+')
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=")
_PARAM_NAME_RE = re.compile(r"[#!]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
_IO_NUMBER_RE = re.compile(r"\d+(?=[<>])")
_BACKTICK_RE = re.compile(r"\\.|`", re.S)
_OPS = (
    ";;&",
    ";;",
    ";&",
    ";",
    "&&",
    "&>>",
    "&>",
    "&",
    "||",
    "|&",
    "|",
    "<<<",
    "<<-",
    "<<",
    "<&",
    "<>",
    "<",
    ">>",
    ">&",
    ">|",
    ">",
    "(",
    ")",
)
REDIR_OPS = frozenset({"<<<", "<<-", "<<", "<&", "<>", "<", ">>", ">&", ">|", ">", "&>", "&>>"})
_CLOSERS = frozenset({"then", "fi", "do", "done", "esac", "}", "elif", "else", "in", ";;"})
_EOF = ("eof", None)


class ShellSyntaxError(ValueError):
    """The text is not a command line this parser can split into shell words."""


def _match(pattern: re.Pattern[str], src: str, pos: int) -> re.Match[str]:
    """`pattern` matched at `pos`; the callers have checked the first character, so no match is a syntax error."""
    m = pattern.match(src, pos)
    if m is None:
        raise ShellSyntaxError(f"unexpected character {src[pos : pos + 1]!r}")
    return m


def parse(text: str, depth: int = 0) -> Seq:
    """Parse a whole command line (a script)."""
    return Parser(text, depth).parse_script()


class Parser:
    def __init__(self, src: str, depth: int = 0) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.depth = depth
        self.buf: list[tuple] = []
        self.pending: list[HereDoc] = []
        if depth > MAX_DEPTH:
            raise ShellSyntaxError("nesting too deep")

    # ---------------------------------------------------------------- lexer
    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ShellSyntaxError("nesting too deep")

    def next_token(self) -> tuple:
        if self.buf:
            return self.buf.pop()
        src, n, i = self.src, self.n, self.pos
        while i < n:
            c = src[i]
            if c in " \t\r":
                i += 1
            elif c == "\\" and i + 1 < n and src[i + 1] == "\n":
                i += 2
            elif c == "#":
                j = src.find("\n", i)
                i = n if j < 0 else j
            else:
                break
        self.pos = i
        if i >= n:
            return _EOF
        c = src[i]
        if c == "\n":
            self.pos = i + 1
            if self.pending:
                self._read_heredocs()
            return ("op", "\n")
        if c in "<>" and i + 1 < n and src[i + 1] == "(":
            return ("w", self.read_word())
        if c in ";&|()<>":
            for op in _OPS:
                if src.startswith(op, i):
                    self.pos = i + len(op)
                    return ("op", op)
        if c.isdigit():
            m = _IO_NUMBER_RE.match(src, i)
            if m:
                self.pos = m.end()
                return self.next_token()
        return ("w", self.read_word())

    def peek(self) -> tuple:
        if not self.buf:
            self.buf.append(self.next_token())
        return self.buf[-1]

    def _read_heredocs(self) -> None:
        src, n = self.src, self.n
        for hd in self.pending:
            lines = []
            while self.pos < n:
                j = src.find("\n", self.pos)
                end = n if j < 0 else j
                line = src[self.pos : end]
                self.pos = n if j < 0 else j + 1
                if hd.strip:
                    line = line.lstrip("\t")
                if line.rstrip("\r") == hd.delim:
                    break
                lines.append(line)
            hd.body = "\n".join(lines)
        self.pending = []

    def read_word(self) -> Word:
        src, n = self.src, self.n
        i = start = self.pos
        parts: list[tuple] = []
        while i < n:
            c = src[i]
            if c in _BREAK:
                if c in "<>" and i == start and i + 1 < n and src[i + 1] == "(":
                    self.pos = i + 2
                    parts.append(("proc", self._parse_sub(), False, None))
                    i = self.pos
                    continue
                if (
                    c == "("
                    and len(parts) == 1
                    and parts[0][0] == "lit"
                    and not parts[0][2]
                    and _ASSIGN_RE.fullmatch(parts[0][1])
                ):
                    self.pos = i + 1
                    self._read_array(parts)
                    i = self.pos
                    continue
                break
            if c == "\\":
                if i + 1 >= n:
                    parts.append(("lit", "\\", False, None))
                    i += 1
                elif src[i + 1] == "\n":
                    i += 2
                else:
                    parts.append(("lit", src[i + 1], True, None))
                    i += 2
            elif c == "'":
                j = src.find("'", i + 1)
                if j < 0:
                    raise ShellSyntaxError("unterminated single quote")
                parts.append(("lit", src[i + 1 : j], True, None))
                i = j + 1
            elif c == '"':
                self.pos = i + 1
                self._read_dq(parts)
                i = self.pos
            elif c == "$":
                self.pos = i
                self._read_dollar(parts, False)
                i = self.pos
            elif c == "`":
                self.pos = i
                self._read_backtick(parts, False)
                i = self.pos
            else:
                m = _match(_PLAIN_RE, src, i)
                parts.append(("lit", m.group(), False, None))
                i = m.end()
        self.pos = i
        if not parts:
            raise ShellSyntaxError(f"unexpected character {src[i : i + 1]!r}")
        word = Word(_merge(parts))
        first = word.parts[0]
        if first[0] == "lit" and not first[2]:
            assign = _ASSIGN_RE.match(first[1])
            if assign:
                word.assign = assign.group(1)
        return word

    def _read_array(self, parts: list) -> None:
        src, n = self.src, self.n
        parts.append(("lit", "(", False, None))
        while True:
            while self.pos < n and src[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos >= n:
                raise ShellSyntaxError("unterminated array")
            if src[self.pos] == ")":
                self.pos += 1
                parts.append(("lit", ")", False, None))
                return
            if src[self.pos] in ";&|(<>":
                raise ShellSyntaxError("bad array element")
            parts.extend(self.read_word().parts)
            parts.append(("lit", " ", False, None))

    def _read_dq(self, parts: list) -> None:
        src, n = self.src, self.n
        i = self.pos
        buf: list[str] = []
        first = len(parts)
        while True:
            if i >= n:
                raise ShellSyntaxError("unterminated double quote")
            c = src[i]
            if c == '"':
                i += 1
                break
            if c == "\\":
                nxt = src[i + 1 : i + 2]
                if nxt and nxt in '$`"\\\n':
                    if nxt != "\n":
                        buf.append(nxt)
                    i += 2
                else:
                    buf.append("\\")
                    i += 1
            elif c == "$" or c == "`":
                if buf:
                    parts.append(("lit", "".join(buf), True, None))
                    buf = []
                self.pos = i
                if c == "$":
                    self._read_dollar(parts, True)
                else:
                    self._read_backtick(parts, True)
                i = self.pos
            else:
                m = _match(_DQ_PLAIN_RE, src, i)
                buf.append(m.group())
                i = m.end()
        if buf or len(parts) == first:
            # An empty "" still makes a (quoted, empty) word.
            parts.append(("lit", "".join(buf), True, None))
        self.pos = i

    def _arith_end(self, i: int) -> int | None:
        """End of `$(( ... ))` starting inside at i, or None when it is really `$( ( ... ) )`."""
        src = self.src
        depth = 0
        limit = min(self.n, i + ARITH_SCAN_LIMIT)
        while i < limit:
            c = src[i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    return i + 2 if src[i + 1 : i + 2] == ")" else None
                depth -= 1
            i += 1
        return None

    def _read_dollar(self, parts: list, quoted: bool) -> None:
        src, n = self.src, self.n
        i = self.pos + 1
        c = src[i : i + 1]
        if c == "(":
            if src[i + 1 : i + 2] == "(":
                end = self._arith_end(i + 2)
                if end is not None:
                    parts.append(("arith", src[i + 2 : end - 2], quoted, None))
                    self.pos = end
                    return
            self.pos = i + 1
            parts.append(("sub", self._parse_sub(), quoted, None))
        elif c == "{":
            self.pos = i + 1
            self._read_param(parts, quoted)
        elif c == "'" and not quoted:
            j = i + 1
            out = []
            while j < n and src[j] != "'":
                if src[j] == "\\" and j + 1 < n:
                    out.append({"n": "\n", "t": "\t"}.get(src[j + 1], src[j + 1]))
                    j += 2
                else:
                    out.append(src[j])
                    j += 1
            if j >= n:
                raise ShellSyntaxError("unterminated $'...'")
            parts.append(("lit", "".join(out), True, None))
            self.pos = j + 1
        elif c == '"' and not quoted:
            self.pos = i + 1
            self._read_dq(parts)
        elif c and (c.isalpha() or c == "_"):
            m = _match(_NAME_RE, src, i)
            parts.append(("var", m.group(), quoted, None))
            self.pos = m.end()
        elif c and (c.isdigit() or c in "@*#?$!-"):
            parts.append(("var", c, quoted, None))
            self.pos = i + 1
        else:
            parts.append(("lit", "$", quoted, None))
            self.pos = i

    def _read_param(self, parts: list, quoted: bool) -> None:
        src, n = self.src, self.n
        start = self.pos
        m = _PARAM_NAME_RE.match(src, start)
        name = m.group().lstrip("#!") if m else ""
        i = m.end() if m else start
        subs: list[Seq] = []
        level = 0
        while True:
            if i >= n:
                raise ShellSyntaxError("unterminated ${")
            c = src[i]
            if c == "}":
                if level == 0:
                    break
                level -= 1
                i += 1
            elif c == "{":
                level += 1
                i += 1
            elif c == "\\":
                i += 2
            elif c == "'" and not quoted:
                j = src.find("'", i + 1)
                if j < 0:
                    raise ShellSyntaxError("unterminated single quote")
                i = j + 1
            elif c in '"$`':
                scratch: list = []
                if c == '"':
                    self.pos = i + 1
                    self._read_dq(scratch)
                elif c == "$":
                    self.pos = i
                    self._read_dollar(scratch, quoted)
                else:
                    self.pos = i
                    self._read_backtick(scratch, quoted)
                i = self.pos
                for p in scratch:
                    if p[0] in ("sub", "proc"):
                        subs.append(p[1])
                    elif p[0] == "param":
                        subs.extend(p[3][1])
            else:
                i += 1
        parts.append(("param", name, quoted, (src[start:i], subs)))
        self.pos = i + 1

    def _read_backtick(self, parts: list, quoted: bool) -> None:
        src = self.src
        out = []
        last = self.pos + 1
        for m in _BACKTICK_RE.finditer(src, self.pos + 1):
            tok = m.group()
            if tok == "`":
                out.append(src[last : m.start()])
                self.pos = m.end()
                break
            if tok[1] in "$`\\":
                out.append(src[last : m.start()])
                out.append(tok[1])
                last = m.end()
        else:
            raise ShellSyntaxError("unterminated backtick")
        body = Parser("".join(out), self.depth + 1).parse_script()
        parts.append(("sub", body, quoted, None))

    def _parse_sub(self) -> Seq:
        self._enter()
        saved, self.pending = self.pending, []
        body = self.parse_list(stop_ops=frozenset({")"}))
        tok = self.next_token()
        if tok != ("op", ")"):
            raise ShellSyntaxError("unterminated $(")
        self.pending = saved + self.pending
        self.depth -= 1
        return body

    # ---------------------------------------------------------------- grammar
    def parse_script(self) -> Seq:
        body = self.parse_list()
        tok = self.next_token()
        if tok[0] != "eof":
            raise ShellSyntaxError(f"unexpected {_show(tok)}")
        return body

    def skip_newlines(self) -> None:
        while self.peek() == ("op", "\n"):
            self.next_token()

    def parse_list(self, stop_ops: frozenset = frozenset(), stop_words: frozenset = frozenset()) -> Seq:
        items = []
        while True:
            tok = self.peek()
            kind, val = tok
            if kind == "eof":
                break
            if kind == "op":
                if val in ("\n", ";", "&"):
                    self.next_token()
                    continue
                if val in stop_ops:
                    break
            elif val.plain is not None and val.plain in stop_words:
                break
            items.append(self.parse_and_or())
        return Seq(items)

    def parse_and_or(self) -> Node:
        first = self.parse_pipeline()
        parts = None
        while True:
            tok = self.peek()
            if tok[0] == "op" and tok[1] in ("&&", "||"):
                self.next_token()
                self.skip_newlines()
                if parts is None:
                    parts = [first]
                parts.append(self.parse_pipeline())
            else:
                break
        return first if parts is None else Seq(parts)

    def parse_pipeline(self) -> Node:
        while True:
            tok = self.peek()
            if tok[0] == "w" and tok[1].plain in ("!", "time"):
                self.next_token()
                if tok[1].plain == "time" and self.peek()[0] == "w" and self.peek()[1].plain == "-p":
                    self.next_token()
                continue
            break
        cmds = [self.parse_command()]
        while True:
            tok = self.peek()
            if tok[0] == "op" and tok[1] in ("|", "|&"):
                self.next_token()
                self.skip_newlines()
                cmds.append(self.parse_command())
            else:
                break
        return cmds[0] if len(cmds) == 1 else Pipe(cmds)

    def expect_word(self, word: str) -> None:
        tok = self.next_token()
        if tok[0] != "w" or tok[1].plain != word:
            raise ShellSyntaxError(f"expected {word!r}, got {_show(tok)}")

    def parse_redirs(self, node: Simple | Compound) -> None:
        while True:
            tok = self.peek()
            if tok[0] == "op" and tok[1] in REDIR_OPS:
                self.next_token()
                node.redirs.append(self.parse_redir(tok[1]))
            else:
                return

    def parse_redir(self, op: str) -> Redir:
        tok = self.next_token()
        if tok[0] != "w":
            raise ShellSyntaxError(f"redirection {op} without a target")
        target = tok[1]
        if op in ("<<", "<<-"):
            delim = "".join(p[1] for p in target.parts if p[0] == "lit") if target.lit is None else target.lit
            hd = HereDoc(delim, target.quoted, op == "<<-")
            self.pending.append(hd)
            return Redir(op, target, hd)
        return Redir(op, target)

    def parse_command(self) -> Node:
        tok = self.peek()
        kind, val = tok
        if kind == "op":
            if val == "(":
                self.next_token()
                if self.src[self.pos : self.pos + 1] == "(" and not self.buf:
                    end = self._arith_end(self.pos + 1)
                    if end is not None:
                        node = Compound("arith", [], [Word.literal(self.src[self.pos + 1 : end - 2])])
                        self.pos = end
                        self.parse_redirs(node)
                        return node
                self._enter()
                body = self.parse_list(stop_ops=frozenset({")"}))
                if self.next_token() != ("op", ")"):
                    raise ShellSyntaxError("unterminated (")
                self.depth -= 1
                node = Compound("subshell", [body])
                self.parse_redirs(node)
                return node
            if val in REDIR_OPS:
                return self.parse_simple()
            raise ShellSyntaxError(f"unexpected {_show(tok)}")
        if kind == "eof":
            raise ShellSyntaxError("unexpected end of input")
        kw = val.plain
        if kw in _COMPOUND_STARTS:
            self.next_token()
            self._enter()
            node = getattr(self, _COMPOUND_STARTS[kw])(kw)
            self.depth -= 1
            if not isinstance(node, FuncDef):
                self.parse_redirs(node)
            return node
        if kw in _CLOSERS:
            raise ShellSyntaxError(f"unexpected {kw!r}")
        return self.parse_simple()

    def parse_simple(self) -> Simple | FuncDef:
        node = Simple([], [], [])
        while True:
            tok = self.peek()
            kind, val = tok
            if kind == "w":
                self.next_token()
                if not node.words and val.assign is not None:
                    node.assigns.append(val)
                    continue
                node.words.append(val)
                if len(node.words) == 1 and not node.assigns and not node.redirs and self.peek() == ("op", "("):
                    self.next_token()
                    if self.next_token() != ("op", ")"):
                        raise ShellSyntaxError("bad function definition")
                    self.skip_newlines()
                    self._enter()
                    body = self.parse_command()
                    self.depth -= 1
                    return FuncDef(val.text(), body)
            elif kind == "op" and val in REDIR_OPS:
                self.next_token()
                node.redirs.append(self.parse_redir(val))
            else:
                break
        if not (node.assigns or node.words or node.redirs):
            raise ShellSyntaxError(f"unexpected {_show(self.peek())}")
        return node

    def _p_group(self, kw: str) -> Compound:
        body = self.parse_list(stop_words=frozenset({"}"}))
        self.expect_word("}")
        return Compound("group", [body])

    def _p_if(self, kw: str) -> Compound:
        bodies = []
        while True:
            bodies.append(self.parse_list(stop_words=frozenset({"then"})))
            self.expect_word("then")
            bodies.append(self.parse_list(stop_words=frozenset({"elif", "else", "fi"})))
            tok = self.next_token()
            word = tok[1].plain if tok[0] == "w" else None
            if word == "elif":
                continue
            if word == "else":
                bodies.append(self.parse_list(stop_words=frozenset({"fi"})))
                self.expect_word("fi")
            elif word != "fi":
                raise ShellSyntaxError("unterminated if")
            return Compound("if", bodies)

    def _p_while(self, kw: str) -> Compound:
        cond = self.parse_list(stop_words=frozenset({"do"}))
        self.expect_word("do")
        body = self.parse_list(stop_words=frozenset({"done"}))
        self.expect_word("done")
        return Compound(kw, [cond, body])

    def _loop_body(self) -> Seq:
        while self.peek() in (("op", ";"), ("op", "\n")):
            self.next_token()
        tok = self.next_token()
        word = tok[1].plain if tok[0] == "w" else None
        if word == "do":
            body = self.parse_list(stop_words=frozenset({"done"}))
            self.expect_word("done")
        elif word == "{":
            body = self.parse_list(stop_words=frozenset({"}"}))
            self.expect_word("}")
        else:
            raise ShellSyntaxError("expected 'do'")
        return body

    def _p_for(self, kw: str) -> Compound:
        tok = self.peek()
        if tok == ("op", "("):
            self.next_token()
            end = self._arith_end(self.pos + 1) if self.src[self.pos : self.pos + 1] == "(" and not self.buf else None
            if end is None:
                raise ShellSyntaxError("bad arithmetic for")
            self.pos = end
            return Compound("for", [self._loop_body()])
        tok = self.next_token()
        if tok[0] != "w":
            raise ShellSyntaxError(f"bad {kw}")
        var = tok[1].text()
        words: list[Word] | None = None
        self.skip_newlines()
        if self.peek()[0] == "w" and self.peek()[1].plain == "in":
            self.next_token()
            words = []
            while self.peek()[0] == "w":
                words.append(self.next_token()[1])
        return Compound("for" if kw == "for" else "select", [self._loop_body()], words, var=var)

    def _p_case(self, kw: str) -> Compound:
        tok = self.next_token()
        if tok[0] != "w":
            raise ShellSyntaxError("bad case")
        words = [tok[1]]
        bodies = []
        self.skip_newlines()
        self.expect_word("in")
        while True:
            self.skip_newlines()
            tok = self.peek()
            if tok[0] == "w" and tok[1].plain == "esac":
                self.next_token()
                break
            if tok == ("op", "("):
                self.next_token()
            while True:
                tok = self.next_token()
                if tok[0] != "w":
                    raise ShellSyntaxError("bad case pattern")
                words.append(tok[1])
                sep = self.next_token()
                if sep == ("op", ")"):
                    break
                if sep != ("op", "|"):
                    raise ShellSyntaxError("bad case pattern")
            bodies.append(self.parse_list(stop_ops=frozenset({";;", ";&", ";;&"}), stop_words=frozenset({"esac"})))
            tok = self.peek()
            if tok[0] == "op" and tok[1] in (";;", ";&", ";;&"):
                self.next_token()
            elif tok[0] == "eof":
                raise ShellSyntaxError("unterminated case")
        return Compound("case", bodies, words)

    def _p_function(self, kw: str) -> FuncDef:
        tok = self.next_token()
        if tok[0] != "w":
            raise ShellSyntaxError("bad function")
        if self.peek() == ("op", "("):
            self.next_token()
            if self.next_token() != ("op", ")"):
                raise ShellSyntaxError("bad function definition")
        self.skip_newlines()
        return FuncDef(tok[1].text(), self.parse_command())

    def _p_coproc(self, kw: str) -> Compound:
        first = self.next_token()
        if first[0] == "w" and first[1].plain not in _COMPOUND_STARTS:
            nxt = self.peek()
            if nxt[0] == "w" and nxt[1].plain in _COMPOUND_STARTS or nxt == ("op", "("):
                body = self.parse_command()  # `coproc NAME { ...; }`
                return Compound("coproc", [Seq([body])])
        self.buf.append(first)
        return Compound("coproc", [Seq([self.parse_command()])])

    def _p_cond(self, kw: str) -> Compound:
        words = []
        while True:
            tok = self.next_token()
            if tok[0] == "eof":
                raise ShellSyntaxError("unterminated [[")
            if tok[0] == "w":
                if tok[1].plain == "]]":
                    break
                words.append(tok[1])
        return Compound("cond", [], words)


_COMPOUND_STARTS = {
    "{": "_p_group",
    "if": "_p_if",
    "while": "_p_while",
    "until": "_p_while",
    "for": "_p_for",
    "select": "_p_for",
    "case": "_p_case",
    "function": "_p_function",
    "coproc": "_p_coproc",
    "[[": "_p_cond",
}


def _merge(parts: list[tuple]) -> list[tuple]:
    """Join adjacent literal parts with the same quoting (keeps words small)."""
    if len(parts) < 2:
        return parts
    out = [parts[0]]
    for p in parts[1:]:
        q = out[-1]
        if p[0] == "lit" and q[0] == "lit" and p[2] == q[2]:
            out[-1] = ("lit", q[1] + p[1], q[2], None)
        else:
            out.append(p)
    return out


def _show(tok: tuple) -> str:
    if tok[0] == "eof":
        return "end of input"
    if tok[0] == "op":
        return repr(tok[1])
    return repr(tok[1].text())
