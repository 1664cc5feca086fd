#!/usr/bin/python3
"""check_policy_header.py: the Python policy interface (policies/python/bellows_policy.py)
against the C one (policies/bellows_policy.h), so the two cannot drift. Every member of every
struct of the header must be a documented field of its Python class (bellows_policy._HEADER
maps each struct to its class, names that differ, and members only C has, with the reason),
every documented field must be a member, and every constant (#define or enum) must have the
same value in Python under its name less BELLOWS_POLICY_ or BELLOWS_ (or be in _C_ONLY). A new
field in the header fails this test until the module documents it (and py_values.c fills it:
bellows checks that at start, and tests/test_python_policies.sh reads every field).
    tests/check_policy_header.py policies/bellows_policy.h policies/python
"""
import re
import sys


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def structs(text):
    """{struct name: [member names]} of every `typedef struct [Tag] { ... } Name;`."""
    out = {}
    for m in re.finditer(r"typedef\s+struct\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        members = []
        for decl in m.group(1).split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
            if fp:  # a function pointer
                members.append(fp.group(1))
                continue
            for part in decl.split(","):
                part = re.sub(r"\[[^\]]*\]", "", part).strip()
                members.append(re.findall(r"\w+", part)[-1])
        out[m.group(2)] = members
    return out


def constants(text):
    """{name: value} of the integer #defines and enum constants."""
    out = {}
    for m in re.finditer(r"^#define\s+(BELLOWS_\w+)(\([^)]*\))?[ \t]*(.*)$", text, re.M):
        out[m.group(1)] = None if m.group(2) else m.group(3).strip() or None
    for body in re.findall(r"enum\s*\{(.*?)\}", text, re.S):
        for item in body.split(","):
            if "=" in item:
                name, value = (x.strip() for x in item.split("=", 1))
                out[name] = value
    values = {}
    for name, value in out.items():
        if value is not None and re.fullmatch(r"[0-9]+|[0-9]+\s*<<\s*[0-9]+", value):
            values[name] = eval(value)  # digits and << only
        else:
            values[name] = value  # a string, a macro with arguments, a guard: C only
    return values


def main(header, module_dir):
    sys.path.insert(0, module_dir)
    import bellows_policy as bp
    text = strip_comments(open(header).read())
    errors = []
    header_structs = structs(text)
    for sname, members in header_structs.items():
        if sname not in bp._HEADER:
            errors.append("struct %s: not in bellows_policy._HEADER" % sname)
            continue
        cls, renamed, c_only = bp._HEADER[sname]
        fields = set(cls.FIELDS) if cls else set()
        python = {renamed.get(m, m) for m in members if m not in c_only}
        for m in members:
            if m not in c_only and renamed.get(m, m) not in fields:
                errors.append("%s.%s: not a field of %s" % (sname, m, cls and cls.__name__))
        for f in fields - python:
            errors.append("%s.FIELDS[%r]: not a member of %s" % (cls.__name__, f, sname))
        for m in set(c_only) - set(members):
            errors.append("_HEADER[%r]: %r is not a member" % (sname, m))
    for sname in set(bp._HEADER) - set(header_structs):
        errors.append("_HEADER[%r]: no such struct in the header" % sname)
    header_consts = constants(text)
    for name, value in header_consts.items():
        if name in bp._C_ONLY:
            continue
        py = re.sub(r"^BELLOWS_(POLICY_)?", "", name)
        if not hasattr(bp, py):
            errors.append("%s: no bellows_policy.%s" % (name, py))
        elif getattr(bp, py) != value:
            errors.append("%s = %r, but bellows_policy.%s = %r" % (name, value, py,
                                                                 getattr(bp, py)))
    for name in set(bp._C_ONLY) - set(header_consts):
        errors.append("_C_ONLY[%r]: no such constant in the header" % name)
    for e in errors:
        print("check_policy_header: " + e)
    n_members = sum(len(m) for m in header_structs.values())
    print("check_policy_header: %d structs (%d members), %d constants: %s"
          % (len(header_structs), n_members, len(header_consts), "FAIL" if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
