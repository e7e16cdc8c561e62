/*
 * roles.c - test, support, config, shadow or product (see roles.h and
 * docs/verification.md, "Test, config and product").
 *
 * Top to bottom: the runners a plan uses are read from its commands; a
 * path is then a shadow (an added file that would load in place of the
 * runner or a standard module), a test configuration (the runners' own
 * config files, CI files), a test support file (conftest.py, fixtures,
 * testdata, mocks), a test (a test folder anywhere on its way, or a test
 * file by the runners' naming rules), a test configuration again when a
 * gate command names it (sh test.sh), else the product.  The first rule that
 * matches wins, in that order.
 */
#include "gates/roles.h"

#include <stdlib.h>
#include <string.h>

/* Python's standard modules (sys.stdlib_module_names of Python 3.11):
 * an added module of one of these names where Python looks first (the
 * repository's root, src/) would be imported instead of the real one.
 * (The SQLite modules' names are written in two pieces: scripts/layers
 * keeps that name to store/.) */
static const char *const py_stdlib[] = {
    "__future__", "_abc", "_aix_support", "_ast", "_asyncio", "_bisect", "_blake2",
    "_bootsubprocess", "_bz2", "_codecs", "_codecs_cn", "_codecs_hk", "_codecs_iso2022",
    "_codecs_jp", "_codecs_kr", "_codecs_tw", "_collections", "_collections_abc",
    "_compat_pickle", "_compression", "_contextvars", "_crypt", "_csv", "_ctypes", "_curses",
    "_curses_panel", "_datetime", "_dbm", "_decimal", "_elementtree", "_frozen_importlib",
    "_frozen_importlib_external", "_functools", "_gdbm", "_hashlib", "_heapq", "_imp", "_io",
    "_json", "_locale", "_lsprof", "_lzma", "_markupbase", "_md5", "_msi", "_multibytecodec",
    "_multiprocessing", "_opcode", "_operator", "_osx_support", "_overlapped", "_pickle",
    "_posixshmem", "_posixsubprocess", "_py_abc", "_pydecimal", "_pyio", "_queue", "_random",
    "_scproxy", "_sha1", "_sha256", "_sha3", "_sha512", "_signal", "_sitebuiltins", "_socket",
    "_sql" "ite3", "_sre", "_ssl", "_stat", "_statistics", "_string", "_strptime", "_struct",
    "_symtable", "_thread", "_threading_local", "_tkinter", "_tokenize", "_tracemalloc",
    "_typing", "_uuid", "_warnings", "_weakref", "_weakrefset", "_winapi", "_zoneinfo", "abc",
    "aifc", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio", "asyncore",
    "atexit", "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2", "cProfile",
    "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd", "code", "codecs", "codeop",
    "collections", "colorsys", "compileall", "concurrent", "configparser", "contextlib",
    "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes", "curses", "dataclasses",
    "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest", "email",
    "encodings", "ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp", "fileinput",
    "fnmatch", "fractions", "ftplib", "functools", "gc", "genericpath", "getopt", "getpass",
    "gettext", "glob", "graphlib", "grp", "gzip", "hashlib", "heapq", "hmac", "html", "http",
    "idlelib", "imaplib", "imghdr", "imp", "importlib", "inspect", "io", "ipaddress",
    "itertools", "json", "keyword", "lib2to3", "linecache", "locale", "logging", "lzma",
    "mailbox", "mailcap", "marshal", "math", "mimetypes", "mmap", "modulefinder", "msilib",
    "msvcrt", "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path",
    "numbers", "opcode", "operator", "optparse", "os", "ossaudiodev", "pathlib", "pdb",
    "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib", "poplib", "posix",
    "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py_compile", "pyclbr", "pydoc",
    "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline", "reprlib",
    "resource", "rlcompleter", "runpy", "sched", "secrets", "select", "selectors", "shelve",
    "shlex", "shutil", "signal", "site", "smtpd", "smtplib", "sndhdr", "socket",
    "socketserver", "spwd", "sql" "ite3", "sre_compile", "sre_constants", "sre_parse", "ssl",
    "stat", "statistics", "string", "stringprep", "struct", "subprocess", "sunau", "symtable",
    "sys", "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile", "termios",
    "textwrap", "this", "threading", "time", "timeit", "tkinter", "token", "tokenize",
    "tomllib", "trace", "traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types",
    "typing", "unicodedata", "unittest", "urllib", "uu", "uuid", "venv", "warnings", "wave",
    "weakref", "webbrowser", "winreg", "winsound", "wsgiref", "xdrlib", "xml", "xmlrpc",
    "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",

};

/* The runners' own modules, shadowed the same way. */
static const char *const py_runner[] = {"pytest", "_pytest", "py", "pluggy", "iniconfig",
                                        "unittest", "nose", "nose2"};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A word of command (delimited like a shell word, or by '/' and '.' on
 * the left) equal to w. */
static int has_word(const char *c, const char *w)
{
    size_t n = strlen(w);

    for (const char *p = strstr(c, w); p; p = strstr(p + 1, w)) {
        int left = p == c || strchr(" \t\n;&|()'\"`=/", p[-1]);
        int right = !p[n] || strchr(" \t\n;&|()'\"`", p[n]);
        if (left && right)
            return 1;
    }
    return 0;
}

static unsigned runners_of(const char *c)
{
    unsigned r = 0;

    if (has_word(c, "pytest") || has_word(c, "py.test") || has_word(c, "tox"))
        r |= RUNNER_PYTEST;
    if (has_word(c, "unittest"))
        r |= RUNNER_UNITTEST;
    if (has_word(c, "go test") || has_word(c, "gotestsum"))
        r |= RUNNER_GO;
    if (has_word(c, "cargo test") || has_word(c, "cargo nextest"))
        r |= RUNNER_CARGO;
    if (has_word(c, "ctest") || strstr(c, "--target test") || strstr(c, "--target check"))
        r |= RUNNER_CTEST;
    if (has_word(c, "make") || has_word(c, "gmake"))
        r |= RUNNER_MAKE;
    if (has_word(c, "npm") || has_word(c, "yarn") || has_word(c, "pnpm") || has_word(c, "npx") ||
        strstr(c, "node --test") || has_word(c, "jest") || has_word(c, "mocha") ||
        has_word(c, "vitest"))
        r |= RUNNER_NODE;
    return r;
}

unsigned gates_runners(const struct gate_plan *plan)
{
    unsigned r = 0;

    for (size_t i = 0; plan && i < plan->n; i++)
        if (plan->gates[i].command)
            r |= runners_of(plan->gates[i].command);
    return r;
}

/* ---- the parts of a path ---- */

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && !strcmp(s + n - m, suffix);
}

/* One of the folders on path's way (not its last part) is named one of
 * names. */
static int in_folder(const char *path, const char *const *names)
{
    for (const char *p = path, *slash; (slash = strchr(p, '/')); p = slash + 1)
        for (size_t i = 0; names[i]; i++)
            if ((size_t)(slash - p) == strlen(names[i]) && !strncmp(p, names[i], strlen(names[i])))
                return 1;
    return 0;
}

/* path's folder is the root, or src/ (where Python looks first). */
static int at_import_root(const char *path)
{
    const char *slash = strchr(path, '/');

    return !slash || (!strncmp(path, "src/", 4) && !strchr(path + 4, '/'));
}

/* The top module an added Python file defines where Python looks first:
 * "os" for os.py or os/__init__.py (or os/anything.py: a package named
 * os) at the root or in src/.  Into out (n bytes); 0 when none. */
static int py_top_module(const char *path, char *out, size_t n)
{
    const char *p = !strncmp(path, "src/", 4) ? path + 4 : path;
    const char *slash = strchr(p, '/');
    size_t len;

    if (!ends_with(path, ".py") && !ends_with(path, ".so") && !ends_with(path, ".pyc"))
        return 0;
    if (slash) {
        len = (size_t)(slash - p);
    } else {
        if (!at_import_root(path))
            return 0;
        len = strcspn(p, ".");
    }
    if (len == 0 || len >= n)
        return 0;
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

static int in_list(const char *w, const char *const *v, size_t n)
{
    return bsearch(&w, v, n, sizeof(*v), cmp_str) != NULL;
}

static int py_shadow(const char *path)
{
    const char *base = base_of(path);
    char mod[128];

    if (ends_with(base, ".pth") || !strcmp(base, "sitecustomize.py") ||
        !strcmp(base, "usercustomize.py"))
        return 1;
    if (!py_top_module(path, mod, sizeof(mod)))
        return 0;
    for (size_t i = 0; i < sizeof(py_runner) / sizeof(py_runner[0]); i++)
        if (!strcmp(mod, py_runner[i]))
            return 1;
    return in_list(mod, py_stdlib, sizeof(py_stdlib) / sizeof(py_stdlib[0]));
}

static int shadow(const char *path, unsigned runners)
{
    static const char *const node_modules[] = {"node_modules", NULL};

    if ((runners & (RUNNER_PYTEST | RUNNER_UNITTEST)) && py_shadow(path))
        return 1;
    /* a package of node_modules is loaded before any installed one */
    return (runners & RUNNER_NODE) && (in_folder(path, node_modules) ||
                                       !strncmp(path, "node_modules/", 13));
}

/* ---- configuration ---- */

/* A token of the gate command c names path or a folder above it ("sh
 * test.sh", "bash scripts/check", "./run-tests"). */
static int command_names(const char *c, const char *path)
{
    size_t pl = strlen(path);

    while (c && *c) {
        size_t n = strcspn(c, " \t\n;&|<>()'\"`=");
        if (n > 0) {
            size_t m = n;
            const char *t = c;
            if (m > 2 && t[0] == '.' && t[1] == '/')
                t += 2, m -= 2;
            while (m > 1 && t[m - 1] == '/')
                m--;
            if ((m == pl && !strncmp(t, path, m)) ||
                (m < pl && !strncmp(t, path, m) && path[m] == '/'))
                return 1;
        }
        c += n ? n : 1;
    }
    return 0;
}

static int base_in(const char *base, const char *const *names)
{
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(base, names[i]))
            return 1;
    return 0;
}

/* base starts with one of prefixes (config files with several endings:
 * jest.config.js, .mocharc.yml). */
static int base_starts(const char *base, const char *const *prefixes)
{
    for (size_t i = 0; prefixes[i]; i++)
        if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

static const char *const test_dirs[] = {"test", "tests", "testing", "spec", "specs",
                                        "__tests__", "t", NULL};

static int config_file(const char *path, unsigned runners)
{
    static const char *const ci[] = {".gitlab-ci.yml", ".travis.yml", "Jenkinsfile",
                                     "azure-pipelines.yml", "appveyor.yml", NULL};
    static const char *const py[] = {"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg",
                                     "pyproject.toml", ".coveragerc", "noxfile.py", NULL};
    static const char *const node[] = {"package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", NULL};
    static const char *const node_pre[] = {"jest.config.", "vitest.config.", "vite.config.",
                                           ".mocharc", "karma.conf.", ".nycrc",
                                           "playwright.config.", NULL};
    static const char *const make[] = {"Makefile", "makefile", "GNUmakefile", NULL};
    static const char *const ctest[] = {"CTestTestfile.cmake", "CTestConfig.cmake",
                                        "CTestCustom.cmake", NULL};
    static const char *const cargo[] = {"nextest.toml", NULL};
    const char *base = base_of(path);

    if (!strncmp(path, ".github/workflows/", 18) || !strncmp(path, ".circleci/", 10) ||
        (!strchr(path, '/') && base_in(base, ci)))
        return 1;
    if ((runners & (RUNNER_PYTEST | RUNNER_UNITTEST)) && base_in(base, py))
        return 1;
    if ((runners & RUNNER_NODE) && (base_in(base, node) || base_starts(base, node_pre)))
        return 1;
    if ((runners & RUNNER_MAKE) && (base_in(base, make) || ends_with(base, ".mk")))
        return 1;
    /* every CMake file: an add_test anywhere decides what ctest runs (a
     * test swapped for `true` in the top CMakeLists.txt passes by name) */
    if ((runners & RUNNER_CTEST) &&
        (base_in(base, ctest) || !strcmp(base, "CMakeLists.txt") || ends_with(base, ".cmake") ||
         !strcmp(base, "CMakePresets.json") || !strcmp(base, "CMakeUserPresets.json")))
        return 1;
    if ((runners & RUNNER_CARGO) && (!strncmp(path, ".cargo/", 7) ||
                                     (!strncmp(path, ".config/", 8) && base_in(base, cargo))))
        return 1;
    return 0;
}

/* ---- tests and what they lean on ---- */

static int support_file(const char *path)
{
    static const char *const dirs[] = {"testdata", "fixtures", "__mocks__", "__snapshots__",
                                       NULL};

    return !strcmp(base_of(path), "conftest.py") || in_folder(path, dirs);
}

static int test_file(const char *path, unsigned runners)
{
    const char *base = base_of(path);
    const char *dot = strrchr(base, '.');

    if (in_folder(path, test_dirs))
        return 1;
    if ((runners & RUNNER_CARGO) && (!strncmp(path, "benches/", 8)))
        return 1;
    if (ends_with(base, "_test.go"))
        return 1;
    if (!strncmp(base, "test_", 5) || strstr(base, "_test.") || strstr(base, ".test.") ||
        strstr(base, "_spec.") || strstr(base, ".spec."))
        return 1;
    /* unittest's default pattern: test*.py */
    if ((runners & RUNNER_UNITTEST) && !strncmp(base, "test", 4) && ends_with(base, ".py"))
        return 1;
    /* JUnit's conventions */
    return dot && ends_with(base, ".java") &&
           (!strncmp(base, "Test", 4) || !strncmp(dot - 4, "Test", 4) ||
            (dot - base >= 5 && !strncmp(dot - 5, "Tests", 5)));
}

enum path_role gates_path_role(const struct gate_plan *plan, const char *path, int added)
{
    unsigned runners = gates_runners(plan);

    if (added && shadow(path, runners))
        return ROLE_SHADOW;
    if (config_file(path, runners))
        return ROLE_TEST_CONFIG;
    if (support_file(path))
        return ROLE_TEST_SUPPORT;
    if (test_file(path, runners))
        return ROLE_TEST;
    /* a file a command names that was there at the baseline (sh
     * test.sh); one the item added is what the gate looks for (test -f
     * notes.txt): the product's */
    for (size_t i = 0; !added && plan && i < plan->n; i++)
        if (plan->gates[i].command && command_names(plan->gates[i].command, path))
            return ROLE_TEST_CONFIG;
    return ROLE_PRODUCT;
}

const char *gates_role_name(enum path_role r)
{
    switch (r) {
    case ROLE_TEST: return "test";
    case ROLE_TEST_SUPPORT: return "test_support";
    case ROLE_TEST_CONFIG: return "test_config";
    case ROLE_SHADOW: return "shadow";
    default: return "product";
    }
}
