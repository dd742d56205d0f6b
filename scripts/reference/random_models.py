#!/usr/bin/env python3
"""Random well-typed `.cf` models, to run through both compilers (docs/compiler-conformance.md).

    random_models.py --out DIR [--count N] [--seed S]

writes DIR/rand_<seed>.cf for seeds S .. S+N-1. The same seed always gives the same model, so a
disagreement found at seed 1234 is reproduced with `--seed 1234 --count 1`.

Each model mixes, at random: variables of every primitive type (ints past 64 bits too) built from literals, arithmetic,
comparisons, boolean operators, conditional expressions, casts, `in`, `is defined`, dict
lookups, list comprehensions, string interpolation, f-strings with format specs and `std`
plugins; entities with attributes of every primitive type (defaults, nullable, typed lists,
dicts, typedefs), inheritance, relations with several multiplicities, indexes and index
lookups, implementations selected by `when` conditions, `for` loops and `if` statements; and
`std::testing::NullResource`s whose fields and `requires` carry the computed values to the export.

The generator tracks every value it builds (with Python's semantics, which are Inmanta's for
these operators) so a model never divides by zero, looks up a missing key, breaks a typedef or a
multiplicity: a model is meant to compile, and any error or difference between the compilers is
a disagreement to look at. Pure Python 3, no dependencies.
"""

import argparse
import json
import os
import random
import string as pystring

WORDS = ["alpha", "beta", "gamma", "delta", "web", "db", "eu", "us", "x", "a-b", "A", "", " ", "10"]
KEYS = ["k", "name", "port", "x1", "mtu", "a"]


def lit_str(s):
    return json.dumps(s)


def fmt_float(v):
    """A float literal the lexer accepts (no exponent form)."""
    text = repr(float(v))
    if "e" in text or "inf" in text or "nan" in text:
        return None
    return text


class Ctx:
    """Variables visible in the root namespace, by type, with their values."""

    def __init__(self, rnd):
        self.rnd = rnd
        self.vars = {"int": [], "float": [], "bool": [], "string": [], "list_int": [], "list_string": [], "dict": []}
        self.counter = 0

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"


BIG_INTS = [9223372036854775807, 9223372036854775808, 18446744073709551615, 18446744073709551616,
            99999999999999999999999, -9223372036854775808, -9223372036854775809, 2**100]


def small_int(rnd):
    return rnd.choice([0, 1, 2, 3, 5, 7, 10, 42, -1, -3, 100, 1000])


class Expr:
    """Typed random expressions: gen_T(ctx, depth) -> (code, value)."""

    def __init__(self, rnd):
        self.rnd = rnd

    def pick_var(self, ctx, t):
        if ctx.vars[t] and self.rnd.random() < 0.5:
            return self.rnd.choice(ctx.vars[t])
        return None

    # ---------------------------------------------------------------- int
    def gen_int(self, ctx, depth):
        r = self.rnd
        v = self.pick_var(ctx, "int")
        if v:
            return v
        if depth <= 0:
            n = small_int(r)
            return (str(n), n)
        choice = r.randrange(15)
        if choice == 0:
            a, b = self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            return (f"({a[0]} + {b[0]})", a[1] + b[1])
        # ints past 64 bits (Inmanta's ints are Python's): literals, products and powers
        if choice == 12:
            n = r.choice(BIG_INTS)
            return (str(n), n)
        if choice == 13:
            a = self.gen_int(ctx, depth - 1)
            f = r.choice([2**40, 10**12, 3**30, 9223372036854775807])
            if abs(a[1] * f) < 10**60:
                return (f"({a[0]} * {f})", a[1] * f)
            return a
        if choice == 14:
            b, e = r.choice([2, 3, 10, -7]), r.randrange(20, 90)
            return (f"({b} ** {e})", b**e)
        if choice == 1:
            a, b = self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            return (f"({a[0]} - {b[0]})", a[1] - b[1])
        if choice == 2:
            a, b = self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            if abs(a[1] * b[1]) < 10**9:
                return (f"({a[0]} * {b[0]})", a[1] * b[1])
            return a
        if choice == 3:
            a, b = self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            if b[1] != 0:
                return (f"({a[0]} % {b[0]})", a[1] % b[1])
            return a
        if choice == 4:
            f = self.gen_float(ctx, depth - 1)
            if abs(f[1]) < 1e15:
                return (f"int({f[0]})", int(f[1]))
            return (str(small_int(r)), None) if False else self.gen_int(ctx, 0)
        if choice == 5:
            l = self.gen_list(ctx, depth - 1, r.choice(["int", "string"]))
            return (f"std::len({l[0]})", len(l[1])) if r.random() < 0.5 else (f"std::count({l[0]})", len(l[1]))
        if choice == 6:
            s = self.gen_string(ctx, depth - 1)
            return (f"std::length({s[0]})", len(s[1]))
        if choice == 7:
            c, a, b = self.gen_bool(ctx, depth - 1), self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            return (f"({c[0]} ? {a[0]} : {b[0]})", a[1] if c[1] else b[1])
        if choice == 8:
            n = r.randrange(0, 500)
            return (f'int("{n}")', n)
        if choice == 9:
            a = self.gen_int(ctx, depth - 1)
            e = r.randrange(0, 4)
            if abs(a[1]) < 1000:
                return (f"({a[0]} ** {e})", a[1] ** e)
            return a
        if choice == 10:
            d = self.gen_dict(ctx, depth - 1, want="int")
            if d:
                return d
        if choice == 11:
            b = self.gen_bool(ctx, depth - 1)
            return (f"int({b[0]})", int(b[1]))
        n = small_int(r)
        return (str(n), n)

    # ---------------------------------------------------------------- float
    def gen_float(self, ctx, depth):
        r = self.rnd
        v = self.pick_var(ctx, "float")
        if v:
            return v
        if depth <= 0:
            f = r.choice([0.5, 1.5, 2.25, -0.75, 3.0, 0.1, 10.0, 1234.5678])
            return (fmt_float(f), f)
        choice = r.randrange(7)
        if choice == 0:
            a, b = self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            if b[1] != 0:
                return (f"({a[0]} / {b[0]})", a[1] / b[1])
        if choice == 1:
            a, b = self.gen_float(ctx, depth - 1), self.gen_float(ctx, depth - 1)
            return (f"({a[0]} + {b[0]})", a[1] + b[1])
        if choice == 2:
            a, b = self.gen_float(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            if abs(a[1] * b[1]) < 1e12:
                return (f"({a[0]} * {b[0]})", a[1] * b[1])
        if choice == 3:
            a = self.gen_int(ctx, depth - 1)
            return (f"float({a[0]})", float(a[1]))
        if choice == 4:
            txt = r.choice(["1.5", "2", "-0.25", "100.125"])
            return (f'float("{txt}")', float(txt))
        if choice == 5:
            a, b = self.gen_float(ctx, depth - 1), self.gen_float(ctx, depth - 1)
            return (f"({a[0]} - {b[0]})", a[1] - b[1])
        f = r.choice([0.5, 2.5, -1.25])
        return (fmt_float(f), f)

    # ---------------------------------------------------------------- bool
    def gen_bool(self, ctx, depth):
        r = self.rnd
        v = self.pick_var(ctx, "bool")
        if v:
            return v
        if depth <= 0:
            b = r.random() < 0.5
            return ("true" if b else "false", b)
        choice = r.randrange(11)
        if choice == 0:
            a, b = self.gen_int(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            op = r.choice(["<", ">", "<=", ">=", "==", "!="])
            return (f"({a[0]} {op} {b[0]})", eval(f"{a[1]!r} {op} {b[1]!r}"))
        if choice == 1:
            a, b = self.gen_float(ctx, depth - 1), self.gen_int(ctx, depth - 1)
            op = r.choice(["<", ">", "<=", ">="])
            return (f"({a[0]} {op} {b[0]})", eval(f"{a[1]!r} {op} {b[1]!r}"))
        if choice == 2:
            a, b = self.gen_string(ctx, depth - 1), self.gen_string(ctx, depth - 1)
            op = r.choice(["==", "!="])
            return (f"({a[0]} {op} {b[0]})", (a[1] == b[1]) == (op == "=="))
        if choice == 3:
            a, b = self.gen_bool(ctx, depth - 1), self.gen_bool(ctx, depth - 1)
            return (f"({a[0]} and {b[0]})", a[1] and b[1])
        if choice == 4:
            a, b = self.gen_bool(ctx, depth - 1), self.gen_bool(ctx, depth - 1)
            return (f"({a[0]} or {b[0]})", a[1] or b[1])
        if choice == 5:
            a = self.gen_bool(ctx, depth - 1)
            return (f"not ({a[0]})", not a[1])
        if choice == 6:
            t = r.choice(["int", "string"])
            item = self.gen_int(ctx, depth - 1) if t == "int" else self.gen_string(ctx, depth - 1)
            l = self.gen_list(ctx, depth - 1, t)
            neg = r.random() < 0.3
            return (f"({item[0]} {'not in' if neg else 'in'} {l[0]})", (item[1] in l[1]) != neg)
        if choice == 7:
            d = self.gen_dict(ctx, depth - 1)
            k = r.choice(KEYS)
            return (f"({lit_str(k)} in {d[0]})", k in d[1])
        if choice == 8:
            s = self.gen_string(ctx, depth - 1)
            return (f"bool({s[0]})", bool(s[1]))
        if choice == 9:
            a = self.gen_int(ctx, depth - 1)
            return (f"bool({a[0]})", bool(a[1]))
        if choice == 10 and ctx.vars["list_int"]:
            name, val = r.choice(ctx.vars["list_int"])
            return (f"({name} is defined)", len(val) > 0)
        b = r.random() < 0.5
        return ("true" if b else "false", b)

    # ---------------------------------------------------------------- string
    def gen_string(self, ctx, depth, opaque_ok=False):
        """A string expression; with opaque_ok it may be one whose value is not tracked (None)."""
        r = self.rnd
        v = self.pick_var(ctx, "string")
        if v:
            return v
        if depth <= 0:
            s = r.choice(WORDS)
            return (lit_str(s), s)
        choice = r.randrange(14)
        if choice == 0:
            a, b = self.gen_string(ctx, depth - 1), self.gen_string(ctx, depth - 1)
            return (f"({a[0]} + {b[0]})", a[1] + b[1])
        if choice == 1:
            a = self.gen_int(ctx, depth - 1)
            return (f"string({a[0]})", str(a[1]))
        if choice == 2:
            a = self.gen_string(ctx, depth - 1)
            fn = r.choice(["upper", "lower", "capitalize"])
            return (f"std::{fn}({a[0]})", getattr(a[1], fn)())
        if choice == 3:
            a = self.gen_string(ctx, depth - 1)
            old, new = r.choice(["a", "-", "e", " "]), r.choice(["", "_", "XY"])
            return (f"std::replace({a[0]}, {lit_str(old)}, {lit_str(new)})", a[1].replace(old, new))
        if choice == 4:
            a = self.gen_string(ctx, depth - 1)
            n = r.randrange(0, 6)
            return (f"std::limit({a[0]}, {n})", a[1][:n])
        if choice == 5 and ctx.vars["int"]:
            name, val = r.choice(ctx.vars["int"])
            spec, out = r.choice([("", str(val)), (":05d", f"{val:05d}"), (":>6", f"{val:>6}"), (":x", None), (":,", f"{val:,}")])
            if spec == ":x":
                out = format(val, "x")
            return (f'f"n={{{name}{spec}}}!"', f"n={out}!")
        if choice == 6 and ctx.vars["float"]:
            name, val = r.choice(ctx.vars["float"])
            spec = r.choice([".2f", ".0f", "8.3f", "", ".1%"])
            return (f'f"{{{name}:{spec}}}"' if spec else f'f"{{{name}}}"', format(val, spec))
        if choice == 7 and opaque_ok:
            t = r.choice(["int", "string", "bool", "float"])
            if ctx.vars[t]:
                name, val = r.choice(ctx.vars[t])
                return (f'"<{{{{{name}}}}}>"', None)
        if choice == 8:
            d = self.gen_dict(ctx, depth - 1, want="string")
            if d:
                return d
        if choice == 9:
            l = self.gen_list(ctx, depth - 1, "string")
            if l[1]:
                i = r.randrange(len(l[1]))
                return (f"std::at({l[0]}, {i})", l[1][i])
        if choice == 10:
            c, a, b = self.gen_bool(ctx, depth - 1), self.gen_string(ctx, depth - 1), self.gen_string(ctx, depth - 1)
            return (f"({c[0]} ? {a[0]} : {b[0]})", a[1] if c[1] else b[1])
        if choice == 11 and opaque_ok:
            b = self.gen_bool(ctx, depth - 1)
            return (f"string({b[0]})", None)
        if choice == 12 and opaque_ok:
            f = self.gen_float(ctx, depth - 1)
            return (f"string({f[0]})", None)
        if choice == 13 and opaque_ok:
            d = self.gen_dict(ctx, depth - 1)
            return (f"std::json_dumps({d[0]})", None)
        s = r.choice(WORDS)
        return (lit_str(s), s)

    # ---------------------------------------------------------------- lists and dicts
    def gen_list(self, ctx, depth, t):
        r = self.rnd
        key = "list_" + t
        v = self.pick_var(ctx, key)
        if v:
            return v
        elem = self.gen_int if t == "int" else self.gen_string
        choice = r.randrange(5) if depth > 0 else 0
        if choice == 1 and t == "int":
            n = r.randrange(0, 5)
            if r.random() < 0.5:
                return (f"std::sequence({n})", list(range(n)))
            s = small_int(r)
            return (f"std::sequence({n}, start={s})", list(range(s, s + n)))
        if choice == 2 and t == "string":
            parts = [r.choice(["a", "b", "cd", ""]) for _ in range(r.randrange(1, 4))]
            return (f"std::split({lit_str(','.join(parts))}, \",\")", ",".join(parts).split(","))
        if choice == 3:
            src = self.gen_list(ctx, depth - 1, "int")
            if t == "int":
                k = small_int(r)
                guard = r.random() < 0.5
                vals = [x + k for x in src[1] if (not guard or x > 1)]
                return (f"[x + {k} for x in {src[0]}{' if x > 1' if guard else ''}]", vals)
            return (f'[f"i{{x}}" for x in {src[0]}]', [f"i{x}" for x in src[1]])
        if choice == 4 and ctx.vars[key]:
            (n1, v1), (n2, v2) = r.choice(ctx.vars[key]), r.choice(ctx.vars[key])
            return (f"[{n1}, {n2}]", v1 + v2)  # nested lists flatten
        items = [elem(ctx, max(depth - 1, 0)) for _ in range(r.randrange(0, 4))]
        return ("[" + ", ".join(c for c, _ in items) + "]", [val for _, val in items])

    def gen_dict(self, ctx, depth, want=None):
        """A dict literal; with `want`, a lookup of a key of that type in a fresh dict literal."""
        r = self.rnd
        if want is None:
            v = self.pick_var(ctx, "dict")
            if v:
                return v
        keys = r.sample(KEYS, r.randrange(1 if want else 0, 4))
        entries = []
        value = {}
        for k in keys:
            if want == "int" or (want is None and r.random() < 0.5):
                e = self.gen_int(ctx, max(depth - 1, 0))
            else:
                e = self.gen_string(ctx, max(depth - 1, 0))
            entries.append(f"{lit_str(k)}: {e[0]}")
            value[k] = e[1]
        code = "{" + ", ".join(entries) + "}"
        if want:
            # only keys whose generated type is `want`
            ok = [k for k in keys if isinstance(value[k], int) == (want == "int") and not isinstance(value[k], bool)]
            ok = [k for k in ok if (want == "int") or isinstance(value[k], str) or value[k] is None]
            if not ok:
                return None
            k = r.choice(ok)
            name = ctx.fresh("d")
            ctx.pending.append(f"{name} = {code}")
            return (f"{name}[{lit_str(k)}]", value[k])
        return (code, value)


ATTR_TYPES = ["string", "int", "float", "bool", "string[]", "int[]", "dict", "string?", "int?", "pct"]


class Model:
    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.ctx = Ctx(self.rnd)
        self.ctx.pending = []
        self.expr = Expr(self.rnd)
        self.lines = ["import std::testing", ""]
        self.body = []
        self.extra = []

    def emit_var(self, t):
        depth = self.rnd.randrange(0, 4)
        gen = {
            "int": self.expr.gen_int,
            "float": self.expr.gen_float,
            "bool": self.expr.gen_bool,
            "string": lambda c, d: self.expr.gen_string(c, d, opaque_ok=True),
            "dict": self.expr.gen_dict,
        }.get(t)
        if gen is None:
            code, val = self.expr.gen_list(self.ctx, depth, t[5:])
        else:
            code, val = gen(self.ctx, depth)
        name = self.ctx.fresh()
        self.flush_pending()
        self.body.append(f"{name} = {code}")
        if val is not None or t == "dict":
            self.ctx.vars[t].append((name, val))
        return name

    def flush_pending(self):
        """Helper statements (dicts for lookups) are top-level statements of their own."""
        self.extra.extend(self.ctx.pending)
        self.ctx.pending.clear()

    def attr_value(self, t, depth=1):
        """Code (and value) for a constructor argument of attribute type t."""
        e, r = self.expr, self.rnd
        if t == "string":
            return e.gen_string(self.ctx, depth)
        if t == "int":
            # resources export their int attributes, past 64 bits too (exact JSON numbers)
            return e.gen_int(self.ctx, depth)
        if t == "pct":
            n = r.randrange(0, 101)
            return (str(n), n)
        if t == "float":
            return e.gen_float(self.ctx, depth)
        if t == "bool":
            return e.gen_bool(self.ctx, depth)
        if t == "string[]":
            return e.gen_list(self.ctx, depth, "string")
        if t == "int[]":
            return e.gen_list(self.ctx, depth, "int")
        if t == "dict":
            return e.gen_dict(self.ctx, depth)
        if t in ("string?", "int?"):
            if r.random() < 0.4:
                return ("null", None)
            return self.attr_value(t[:-1], depth)
        raise ValueError(t)

    def default_literal(self, t):
        r = self.rnd
        return {
            "string": lit_str(r.choice(WORDS)),
            "int": str(small_int(r)),
            "pct": str(r.randrange(0, 101)),
            "float": r.choice(["0.5", "1.0", "-2.5"]),
            "bool": r.choice(["true", "false"]),
            "string[]": r.choice(['["a", "b"]', "[]"]),
            "int[]": r.choice(["[1, 2]", "[]"]),
            "dict": r.choice(['{"a": 1}', "{}"]),
            "string?": r.choice(["null", '"n"']),
            "int?": r.choice(["null", "0"]),
        }[t]

    def build(self):
        r = self.rnd
        if r.random() < 0.5:
            self.lines.append("typedef pct as int matching self >= 0 and self <= 100")
        else:
            self.lines.append("typedef pct as int matching self in std::sequence(101)")
        # plain variables of every type
        for _ in range(r.randrange(3, 12)):
            self.emit_var(r.choice(["int", "float", "bool", "string", "list_int", "list_string", "dict", "int", "string"]))
        # entities
        n_ent = r.randrange(1, 4)
        ents = []
        for i in range(n_ent):
            attrs = [("name", "string", None)]
            for j in range(r.randrange(1, 5)):
                t = r.choice(ATTR_TYPES)
                default = self.default_literal(t) if r.random() < 0.4 else None
                attrs.append((f"a{i}_{j}", t, default))
            parent = ents[-1]["name"] if ents and r.random() < 0.3 else None
            ents.append({"name": f"E{i}", "attrs": attrs, "parent": parent})
        for ent in ents:
            ext = f" extends {ent['parent']}" if ent["parent"] else ""
            self.lines.append(f"entity {ent['name']}{ext}:")
            own = ent["attrs"] if not ent["parent"] else ent["attrs"][1:]
            for name, t, default in own:
                self.lines.append(f"    {t} {name}" + (f" = {default}" if default is not None else ""))
            self.lines.append("end")
            if not ent["parent"]:
                self.lines.append(f"index {ent['name']}({'name'})")
        # all attributes of an entity, inherited first
        by_name = {e["name"]: e for e in ents}

        def all_attrs(e):
            own = e["attrs"] if not e["parent"] else e["attrs"][1:]
            return (all_attrs(by_name[e["parent"]]) if e["parent"] else []) + list(own)

        # relations between entities (lower bounds 0 so instances never miss a value)
        rels = []
        if n_ent >= 2 and r.random() < 0.8:
            a, b = r.sample(ents, 2)
            m = r.choice(["[0:]", "[0:1]", "[0:3]", "[:5]"])
            back = r.choice(["[0:]", "[0:1]", None])
            arrow = r.choice(["--", "->", "<-"])
            if back:
                self.lines.append(f"{a['name']}.peers {m} {arrow} {b['name']}.owners {back}")
            else:
                self.lines.append(f"{a['name']}.peers {m} {arrow} {b['name']}")
            rels.append((a, b, m, back))
        # implementations: each entity exports NullResources carrying its attribute values
        for ent in ents:
            en = ent["name"]
            args = [f'name="{en}-{{{{self.name}}}}"', f'agentname="ag{r.randrange(3)}"']
            for name, t, _ in all_attrs(ent):
                if t in ("int", "pct") and r.random() < 0.6:
                    args.append(f"int_value=self.{name}")
                    break
            strs = [n for n, t, _ in all_attrs(ent) if t == "string"]
            ints = [n for n, t, _ in all_attrs(ent) if t in ("int", "pct")]
            floats = [n for n, t, _ in all_attrs(ent) if t == "float"]
            parts = [f"{{{{self.{n}}}}}" for n in strs[:2]]
            if ints and r.random() < 0.5:
                parts.append(f"{{self.{ints[0]}:04d}}")
                value = 'f"' + "|".join(p.replace("{{", "{").replace("}}", "}") for p in parts) + '"'
            elif floats and r.random() < 0.5:
                value = f'"v=" + string(self.{floats[0]})'
            else:
                value = '"' + "|".join(parts) + '"'
            args.append(f"value={value}")
            r.shuffle(args)
            body = [f"    r = std::testing::NullResource({', '.join(args)})"]
            for a, b, m, back in rels:
                if a is ent:
                    if m == "[0:1]":
                        body.append("    if self.peers is defined:")
                        body.append('        std::testing::NullResource(name="peer-{{self.name}}-{{self.peers.name}}", requires=[r])')
                        body.append("    end")
                    else:
                        body.append("    for p in self.peers:")
                        body.append('        std::testing::NullResource(name="peer-{{self.name}}-{{p.name}}", requires=r)')
                        body.append("    end")
                        body.append(f'    std::testing::NullResource(name="count-{{{{self.name}}}}", int_value=std::count(self.peers))')
            self.lines.append(f"implementation export_{en.lower()} for {en}:")
            self.lines.extend(body)
            self.lines.append("end")
            bools = [n for n, t, _ in all_attrs(ent) if t == "bool"]
            if bools and r.random() < 0.7:
                self.lines.append(f"implement {en} using export_{en.lower()} when self.{bools[0]}")
                self.lines.append(f"implement {en} using std::none when not self.{bools[0]}")
            elif ints and r.random() < 0.5:
                k = small_int(r)
                self.lines.append(f"implement {en} using export_{en.lower()}, std::none when self.{ints[0]} > {k}")
                self.lines.append(f"implement {en} using std::none")
            else:
                self.lines.append(f"implement {en} using export_{en.lower()}")
        # instances: constructors, a loop, conditionals, index lookups
        names = {}
        for ent in ents:
            root = ent
            while root["parent"]:
                root = by_name[root["parent"]]
            names.setdefault(root["name"], set())
        made = {e["name"]: [] for e in ents}

        def construct(ent, name_code, name_val, indent=""):
            args = [f"name={name_code}"]
            for an, t, default in all_attrs(ent)[1:]:
                if default is not None and r.random() < 0.5:
                    continue
                code, _ = self.attr_value(t)
                args.append(f"{an}={code}")
            r.shuffle(args)
            self.flush_pending()
            return f"{indent}{ent['name']}({', '.join(args)})"

        def root_of(ent):
            while ent["parent"]:
                ent = by_name[ent["parent"]]
            return ent["name"]

        for ent in ents:
            for k in range(r.randrange(1, 4)):
                nm = f"{ent['name'].lower()}_{k}"
                if nm in names[root_of(ent)]:
                    continue
                names[root_of(ent)].add(nm)
                var = self.ctx.fresh("i")
                line = construct(ent, lit_str(nm), nm)
                self.body.append(f"{var} = {line}")
                made[ent["name"]].append((var, nm))
            if r.random() < 0.5:
                n = r.randrange(1, 4)
                loop = f"L{ent['name']}"
                if all(f"{loop}{i}" not in names[root_of(ent)] for i in range(n)):
                    self.body.append(f"for i in std::sequence({n}):")
                    self.body.append(construct(ent, f'"{loop}{{{{i}}}}"', None, "    "))
                    self.body.append("end")
                    for i in range(n):
                        names[root_of(ent)].add(f"{loop}{i}")
        # relation values
        for a, b, m, back in rels:
            if not made[a["name"]] or not made[b["name"]]:
                continue
            owner = made[a["name"]][0][0]
            targets = [v for v, _ in made[b["name"]]]
            if m == "[0:1]" or back == "[0:1]":
                targets = targets[:1]
            limit = {"[0:3]": 3, "[:5]": 5}.get(m)
            if limit:
                targets = targets[:limit]
            if targets:
                self.body.append(f"{owner}.peers += [{', '.join(targets)}]" if m != "[0:1]" else f"{owner}.peers = {targets[0]}")
        # index lookups and conditionals
        for ent in ents:
            if made[ent["name"]] and r.random() < 0.6:
                var, nm = r.choice(made[ent["name"]])
                found = self.ctx.fresh("found")
                self.body.append(f'{found} = {root_of(ent)}[name="{nm}"]')
                self.body.append(f"same_{found} = {found} == {var}")
        if r.random() < 0.7:
            c = self.expr.gen_bool(self.ctx, 2)
            self.flush_pending()
            n = self.ctx.fresh("cond")
            self.body.append(f"if {c[0]}:")
            self.body.append(f'    std::testing::NullResource(name="{n}-then")')
            if r.random() < 0.5:
                c2 = self.expr.gen_bool(self.ctx, 1)
                self.flush_pending()
                self.body.append(f"elif {c2[0]}:")
                self.body.append(f'    std::testing::NullResource(name="{n}-elif")')
            self.body.append("else:")
            self.body.append(f'    std::testing::NullResource(name="{n}-else")')
            self.body.append("end")
        # a few more variables that read everything above
        for _ in range(r.randrange(0, 5)):
            self.emit_var(r.choice(["int", "string", "bool", "float", "list_int"]))
        # shuffle top-level statement order: the language is order independent
        self.flush_pending()
        blocks = self.split_blocks(self.body) + [[l] for l in self.extra]
        r.shuffle(blocks)
        return "\n".join(self.lines + [""] + [l for b in blocks for l in b]) + "\n"

    @staticmethod
    def split_blocks(lines):
        """Top-level statements, a multi-line if/for kept whole."""
        blocks, cur, depth = [], [], 0
        for l in lines:
            if not l:
                continue
            cur.append(l)
            s = l.strip()
            if not l.startswith(" ") and (s.startswith("for ") or s.startswith("if ")):
                depth += 1
            elif not l.startswith(" ") and s == "end":
                depth -= 1
            if depth == 0 and not l.startswith(" ") and not s.startswith(("elif", "else")):
                blocks.append(cur)
                cur = []
        if cur:
            blocks.append(cur)
        return blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for seed in range(args.seed, args.seed + args.count):
        with open(os.path.join(args.out, f"rand_{seed}.cf"), "w") as f:
            f.write(f"# random_models.py --seed {seed}\n")
            f.write(Model(seed).build())


if __name__ == "__main__":
    main()
