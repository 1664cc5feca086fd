"""csrc.py: what scripts/check_map.py and scripts/callgraph.py read from a C file, with no
parser but the layout the project keeps (clang-format, .clang-format: BreakBeforeBraces Linux):
comments and string literals blanked out (line numbers kept), the quoted includes, and each
function definition, a top-level `{` block whose header holds `name(`, with its first and last
line. Brace counting over the blanked text; a preprocessor line is not code."""

import re

_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank(text):
    """The text with comments, strings and character constants replaced by spaces (newlines
    kept, so line numbers stay), and preprocessor lines (with their continuations) blanked."""

    def spaces(m):
        return "".join(c if c == "\n" else " " for c in m.group(0))

    text = _TOKEN.sub(spaces, text)
    out, cont = [], False
    for line in text.split("\n"):
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.rstrip().endswith("\\")
        out.append(" " * len(line) if directive else line)
    return "\n".join(out)


def includes(text):
    """[(line number, header)] of the file's `#include "..."` lines."""
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            found.append((n, m.group(1)))
    return found


_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case"}


def functions(text):
    """[(name, first line, last line, is_static)] of the function definitions: a `{` at depth 0
    whose text since the previous top-level `;` or `}` has an identifier followed by `(` and no
    `=` (an initialiser) and is not a struct, union or enum. The first line is the header's."""
    code = blank(text)
    found, depth, line = [], 0, 1
    head_start, head = 0, []  # the text since the last top-level ';' or '}'
    start_line = None
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        if depth == 0:
            if c == "{":
                h = "".join(head)
                name = _function_name(h)
                if name:
                    first = _first_line(code, head_start, line)
                    start_line = (name, first, re.search(r"\bstatic\b", h) is not None)
                else:
                    start_line = None
                depth = 1
                head = []
                continue
            if c == ";":
                head, head_start = [], i + 1
                continue
            head.append(c)
        else:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    if start_line:
                        found.append((start_line[0], start_line[1], line, start_line[2]))
                    start_line = None
                    head, head_start = [], i + 1
    return found


def _first_line(code, head_start, brace_line):
    """The line of the first non-blank character at or after head_start."""
    j = head_start
    while j < len(code) and code[j].isspace():
        j += 1
    return code.count("\n", 0, j) + 1 if j < len(code) else brace_line


def _function_name(head):
    head = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", head)
    if "=" in head or re.search(r"\b(struct|union|enum)\s*\w*\s*$", head.strip()):
        return None
    if re.match(r"\s*(typedef\b|extern\s*$)", head):
        return None
    m = None
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", head):
        if m.group(1) not in _KEYWORDS and not m.group(1).startswith("__attribute"):
            break
    else:
        return None
    return m.group(1) if m else None


def calls(text):
    """The identifiers written as `name(` in the file's code (comments and strings aside)."""
    return set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", blank(text))) - _KEYWORDS
