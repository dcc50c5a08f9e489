"""Syntax tree of a shell command line, as small slot classes (cheap to build for 100k calls)."""

from __future__ import annotations

from collections.abc import Iterator

# A word part is (kind, value, quoted, extra):
#   ("lit", text, quoted, None)      literal text after quote removal
#   ("var", name, quoted, None)      $NAME / $1 / $@
#   ("param", name, quoted, (raw, [Seq...]))   ${...}, with substitutions found inside it
#   ("sub", Seq, quoted, None)       $( ... ) or backticks
#   ("proc", Seq, False, None)       <( ... ) / >( ... )
#   ("arith", raw, quoted, None)     $(( ... ))
Part = tuple


class Word:
    """One shell word; `lit` is its text when it has no expansions, else None."""

    __slots__ = ("parts", "lit", "quoted", "assign")

    def __init__(self, parts: list[Part]) -> None:
        self.parts = parts
        lit_parts: list[str] | None = []
        quoted = False
        for kind, value, q, _ in parts:
            if q:
                quoted = True
            if kind == "lit" and lit_parts is not None:
                lit_parts.append(value)
            else:
                lit_parts = None
        self.lit: str | None = "".join(lit_parts) if lit_parts is not None else None
        self.quoted = quoted
        self.assign: str | None = None

    @property
    def plain(self) -> str | None:
        """The text of an unquoted literal word (how reserved words are recognized)."""
        return None if self.quoted else self.lit

    def text(self) -> str:
        """Approximate source text with expansions kept as `$NAME`, `${...}`, `$(...)`."""
        if self.lit is not None:
            return self.lit
        out = []
        for kind, value, _q, extra in self.parts:
            if kind == "lit":
                out.append(value)
            elif kind == "var":
                out.append("$" + value)
            elif kind == "param":
                out.append("${" + extra[0] + "}")
            elif kind == "arith":
                out.append("$((" + value + "))")
            else:
                out.append("$(...)")
        return "".join(out)

    def subs(self) -> Iterator[Seq]:
        """Every command list that runs while this word is expanded."""
        for kind, value, _q, extra in self.parts:
            if kind in ("sub", "proc"):
                yield value
            elif kind == "param":
                yield from extra[1]

    @classmethod
    def literal(cls, text: str, quoted: bool = True) -> Word:
        return cls([("lit", text, quoted, None)])

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Word({self.text()!r})"


class HereDoc:
    __slots__ = ("delim", "quoted", "strip", "body")

    def __init__(self, delim: str, quoted: bool, strip: bool) -> None:
        self.delim = delim
        self.quoted = quoted
        self.strip = strip
        self.body = ""


class Redir:
    __slots__ = ("op", "target", "heredoc")

    def __init__(self, op: str, target: Word, heredoc: HereDoc | None = None) -> None:
        self.op = op
        self.target = target
        self.heredoc = heredoc


class Seq:
    """Commands run one after another (`;`, `&`, newline, `&&`, `||`)."""

    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items


class Pipe:
    __slots__ = ("cmds",)

    def __init__(self, cmds: list) -> None:
        self.cmds = cmds


class Simple:
    __slots__ = ("assigns", "words", "redirs")

    def __init__(self, assigns: list[Word], words: list[Word], redirs: list[Redir]) -> None:
        self.assigns = assigns
        self.words = words
        self.redirs = redirs


class Compound:
    """subshell, group, if, while, until, for, select, case, arith, cond, coproc.

    `words` are data the compound expands (for-list, case subject and patterns, [[ ]] operands);
    `bodies` are the command lists in source order.
    """

    __slots__ = ("kind", "bodies", "words", "redirs", "var")

    def __init__(self, kind: str, bodies: list[Seq], words: list[Word] | None = None, var: str | None = None) -> None:
        self.kind = kind
        self.bodies = bodies
        self.words = words or []
        self.redirs: list[Redir] = []
        self.var = var


class FuncDef:
    __slots__ = ("name", "body")

    def __init__(self, name: str, body: object) -> None:
        self.name = name
        self.body = body


# Any node a command list holds.
Node = Seq | Pipe | Simple | Compound | FuncDef
