#!/usr/bin/env python3
"""schema_diff.py SQLITE_DB PG_URI - compare goald's two schemas.

SQLITE_DB is a database the real binary created (migrations/*.sql);
PG_URI a PostgreSQL database holding migrations/pg/*.sql.  Compares the
tables; per table the columns in order (PostgreSQL's extra `rowid` aside),
their types (INTEGER -> bigint, REAL -> double precision, TEXT -> text),
NOT NULL, defaults, identity; the primary key; foreign keys (columns,
target, ON DELETE); unique constraints; CHECK constraints; every index
(unique, columns or expressions, DESC, WHERE).  Expressions are compared
normalised: lower case, no casts, no parentheses, no spaces, PostgreSQL's
`x = ANY (ARRAY[...])` read as `x IN (...)`, `x IN ('v')` as `x = 'v'`, SQLite's `BETWEEN` as `>= AND
<=`, ifnull as coalesce, goald_json_valid as json_valid.  Prints every
difference and exits 1 on any.
"""
import re
import sqlite3
import subprocess
import sys

SKIP_TABLES = {"schema_migrations"}  # the migration runner's own table
TYPES = {"INTEGER": "bigint", "REAL": "double precision", "TEXT": "text"}
ON_DELETE = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
SEP = "\x1f"


def norm(expr):
    """The comparable form of an SQL expression from either side."""
    if expr is None:
        return None
    e = expr
    e = re.sub(r"::[a-z_]+( precision| varying)?(\[\])?", "", e, flags=re.I)
    e = re.sub(r"(\w+) = ANY \(ARRAY\[(.*?)\]\)", r"\1 IN (\2)", e, flags=re.I)
    e = re.sub(r"(\w+) IN \(('[^',]*')\)", r"\1 = \2", e, flags=re.I)  # PG's form of one
    e = re.sub(r"(\w+)\s+BETWEEN\s+(\S+)\s+AND\s+(\S+)", r"\1 >= \2 AND \1 <= \3", e, flags=re.I)
    e = e.lower()
    e = re.sub(r"\bifnull\(", "coalesce(", e)
    e = re.sub(r"\bgoald_json_valid\(", "json_valid(", e)
    return re.sub(r"[()\s]", "", e)


def strip_comments(sql):
    out, i, quote = [], 0, False
    while i < len(sql):
        c = sql[i]
        if c == "'":
            quote = not quote
        elif not quote and sql.startswith("--", i):
            j = sql.find("\n", i)
            i = len(sql) if j < 0 else j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def depths(text, start=0):
    """(index, char, depth) of each char outside quotes, depth counting the
    parentheses open after it."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        c = text[i]
        if c == "'":
            quote = not quote
        elif not quote:
            depth += {"(": 1, ")": -1}.get(c, 0)
            yield i, c, depth


def balanced(sql, start):
    """The text inside the parenthesis that opens at sql[start], and where it closes."""
    for i, c, depth in depths(sql, start):
        if c == ")" and depth == 0:
            return sql[start + 1:i], i
    raise ValueError("unbalanced parentheses: " + sql[start:start + 80])


def split_top(text):
    """text split at its commas outside parentheses and quotes."""
    cuts = [i for i, c, depth in depths(text) if c == "," and depth == 0]
    bounds = zip([-1] + cuts, cuts + [len(text)])
    return [text[x + 1:y].strip() for x, y in bounds]


def index_key(cols, where):
    """cols: [(expression, desc)]."""
    return (tuple((norm(e), d) for e, d in cols), norm(where) or "")


def sqlite_schema(path):
    db = sqlite3.connect(path)
    s = {}
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for t in tables:
        if t in SKIP_TABLES:
            continue
        sql = strip_comments(db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (t,)).fetchone()[0])
        cols = db.execute(f'PRAGMA table_info("{t}")').fetchall()
        pk = [c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5])]
        int_pk = len(pk) == 1 and any(c[1] == pk[0] and c[2].upper() == "INTEGER" for c in cols)
        autoinc = bool(re.search(r"\bAUTOINCREMENT\b", sql, re.I))
        columns = []
        for _cid, name, ctype, notnull, dflt, cpk in cols:
            ident = "BY DEFAULT" if (int_pk and cpk and autoinc) else ""
            columns.append((name, TYPES.get(ctype.upper(), "?" + ctype),
                            bool(notnull or cpk), norm(dflt), ident))
        fks = {}
        for fid, _seq, target, frm, to, _upd, on_delete, _m in db.execute(
                f'PRAGMA foreign_key_list("{t}")'):
            f = fks.setdefault(fid, [target, [], [], on_delete.upper()])
            f[1].append(frm)
            f[2].append(to)
        fkset = {(",".join(f[1]), f[0], ",".join(f[2]), f[3]) for f in fks.values()}
        uniques, indexes = set(), {}
        for _seq, iname, unique, origin, _partial in db.execute(f'PRAGMA index_list("{t}")'):
            if origin == "u":
                info = db.execute(f'PRAGMA index_info("{iname}")').fetchall()
                uniques.add(",".join(r[2] for r in sorted(info)))
            elif origin == "c":
                isql = strip_comments(db.execute(
                    "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?",
                    (iname,)).fetchone()[0])
                m = re.search(r"\bON\s+\"?\w+\"?\s*\(", isql, re.I)
                inner, end = balanced(isql, m.end() - 1)
                cols_ = []
                for part in split_top(inner):
                    d = re.search(r"\s+DESC$", part, re.I) is not None
                    cols_.append((re.sub(r"\s+(ASC|DESC)$", "", part, flags=re.I), d))
                w = re.search(r"\bWHERE\b(.*)$", isql[end + 1:], re.I | re.S)
                indexes[iname] = (bool(unique),) + index_key(cols_, w.group(1) if w else None)
        checks = []
        for m in re.finditer(r"\bCHECK\s*\(", sql, re.I):
            checks.append(norm(balanced(sql, m.end() - 1)[0]))
        s[t] = dict(columns=columns, pk=",".join(pk), int_pk=int_pk, fks=fkset,
                    uniques=uniques, indexes=indexes, checks=sorted(checks))
    db.close()
    return s


def psql(uri, query):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-F", SEP, "-v", "ON_ERROR_STOP=1",
                        uri, "-c", query], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"schema_diff: psql failed: {r.stderr.strip()}")
    return [line.split(SEP) for line in r.stdout.split("\n") if line]


KEYS = """(SELECT string_agg(a.attname, ',' ORDER BY k.n)
             FROM unnest({arr}) WITH ORDINALITY k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = {rel} AND a.attnum = k.attnum)"""


def pg_schema(uri):
    s = {}
    for (t,) in psql(uri, "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON"
                          " n.oid = c.relnamespace WHERE n.nspname = 'public'"
                          " AND c.relkind IN ('r', 'p')"):
        if t not in SKIP_TABLES:
            s[t] = dict(columns=[], rowid=None, pk="", fks=set(), uniques=set(), indexes={},
                        checks=[])
    for t, name, _pos, nullable, dtype, dflt, ident, gen in psql(
            uri, "SELECT table_name, column_name, ordinal_position, is_nullable, data_type,"
                 " coalesce(column_default, ''), is_identity, coalesce(identity_generation, '')"
                 " FROM information_schema.columns WHERE table_schema = 'public'"
                 " ORDER BY table_name, ordinal_position"):
        if t not in s:
            continue
        col = (name, dtype, nullable == "NO", norm(dflt or None), gen if ident == "YES" else "")
        if name == "rowid":
            s[t]["rowid"] = (col, len(s[t]["columns"]))
        else:
            s[t]["columns"].append(col)
    cons = psql(uri, "SELECT c.conrelid::regclass::text, c.contype, "
                     + KEYS.format(arr="c.conkey", rel="c.conrelid") + ", "
                     + "coalesce(c.confrelid::regclass::text, ''), coalesce("
                     + KEYS.format(arr="c.confkey", rel="c.confrelid") + ", ''),"
                     " c.confdeltype, pg_get_constraintdef(c.oid)"
                     " FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
                     " WHERE n.nspname = 'public' AND c.conrelid <> 0")
    for t, ctype, cols, target, tcols, deltype, cdef in cons:
        if t not in s:
            continue
        if ctype == "p":
            s[t]["pk"] = cols
        elif ctype == "u":
            s[t]["uniques"].add(cols)
        elif ctype == "f":
            s[t]["fks"].add((cols, target, tcols, ON_DELETE.get(deltype, deltype)))
        elif ctype == "c":
            s[t]["checks"].append(norm(re.sub(r"^CHECK ", "", cdef)))
    for t, iname, unique, cols, pred in psql(
            uri, "SELECT t.relname, i.relname, x.indisunique,"
                 " (SELECT string_agg(pg_get_indexdef(x.indexrelid, k, true)"
                 "   || CASE WHEN x.indoption[k - 1] & 1 = 1 THEN ' DESC' ELSE '' END,"
                 "   E'\\x1e' ORDER BY k) FROM generate_series(1, x.indnkeyatts) k),"
                 " coalesce(pg_get_expr(x.indpred, x.indrelid, true), '')"
                 " FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
                 " JOIN pg_class t ON t.oid = x.indrelid"
                 " JOIN pg_namespace n ON n.oid = t.relnamespace"
                 " WHERE n.nspname = 'public'"
                 " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid"
                 "                 AND c.contype IN ('p', 'u'))"):
        if t not in s:
            continue
        cols_ = [(re.sub(r" DESC$", "", c), c.endswith(" DESC")) for c in cols.split("\x1e")]
        s[t]["indexes"][iname] = (unique == "t",) + index_key(cols_, pred or None)
    for t in s:
        s[t]["checks"].sort()
    return s


def compare(lite, pg):
    diffs = []

    def d(msg):
        diffs.append(msg)

    for t in sorted(set(lite) - set(pg)):
        d(f"table {t}: in SQLite, missing in PostgreSQL")
    for t in sorted(set(pg) - set(lite)):
        d(f"table {t}: in PostgreSQL, not in SQLite")
    for t in sorted(set(lite) & set(pg)):
        a, b = lite[t], pg[t]
        an = [c[0] for c in a["columns"]]
        bn = [c[0] for c in b["columns"]]
        if an != bn:
            d(f"{t}: columns differ: SQLite {an}, PostgreSQL {bn}")
        bcols = {c[0]: c for c in b["columns"]}
        for col in a["columns"]:
            other = bcols.get(col[0])
            if other is None:
                continue
            for what, i in (("type", 1), ("NOT NULL", 2), ("default", 3), ("identity", 4)):
                if col[i] != other[i]:
                    d(f"{t}.{col[0]}: {what}: SQLite {col[i]!r}, PostgreSQL {other[i]!r}")
        want_rowid = not a["int_pk"]
        if want_rowid and b["rowid"] is None:
            d(f"{t}: no INTEGER PRIMARY KEY in SQLite, so PostgreSQL needs a rowid column")
        if b["rowid"] is not None:
            (_n, dtype, _nn, _df, gen), pos = b["rowid"]
            if not want_rowid:
                d(f"{t}: rowid in PostgreSQL, but SQLite's rowid is the INTEGER PRIMARY KEY")
            elif (dtype, gen) != ("bigint", "ALWAYS"):
                # anywhere among the columns: a later ALTER TABLE ... ADD
                # COLUMN puts its column after it
                d(f"{t}.rowid: want BIGINT GENERATED ALWAYS AS IDENTITY;"
                  f" got {dtype} {gen or 'no identity'} at position {pos + 1}")
        for key, what in (("pk", "primary key"), ("fks", "foreign keys"),
                          ("uniques", "unique constraints"), ("checks", "CHECK constraints")):
            if a[key] != b[key]:
                if isinstance(a[key], (set, list)):
                    only_a = [x for x in a[key] if x not in b[key]]
                    only_b = [x for x in b[key] if x not in a[key]]
                    d(f"{t}: {what}: only in SQLite {only_a}, only in PostgreSQL {only_b}")
                else:
                    d(f"{t}: {what}: SQLite {a[key]!r}, PostgreSQL {b[key]!r}")
        for i in sorted(set(a["indexes"]) | set(b["indexes"])):
            x, y = a["indexes"].get(i), b["indexes"].get(i)
            if x != y:
                d(f"{t}: index {i}: SQLite {x}, PostgreSQL {y}")
    return diffs


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: schema_diff.py SQLITE_DB PG_URI")
    lite, pg = sqlite_schema(sys.argv[1]), pg_schema(sys.argv[2])
    diffs = compare(lite, pg)
    for x in diffs:
        print("DIFF: " + x)
    if diffs:
        print(f"schema_diff: {len(diffs)} difference(s)")
        return 1
    ncols = sum(len(v["columns"]) for v in lite.values())
    nidx = sum(len(v["indexes"]) for v in lite.values())
    nchk = sum(len(v["checks"]) for v in lite.values())
    nfk = sum(len(v["fks"]) for v in lite.values())
    if len(lite) < 10 or ncols < 100 or nidx < 20 or nchk < 20 or nfk < 20:
        print(f"schema_diff: suspiciously little compared ({len(lite)} tables, {ncols} columns)")
        return 1
    print(f"schema_diff: equal: {len(lite)} tables, {ncols} columns, {nfk} foreign keys,"
          f" {nchk} checks, {nidx} indexes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
