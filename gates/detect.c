#include "gates/detect.h"

#include <cjson/cJSON.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "util/fsutil.h"
#include "util/path.h"
#include "util/strbuf.h"

static void add_gate(cJSON *arr, const char *name, const char *type, const char *command)
{
    cJSON *g = cJSON_CreateObject();

    cJSON_AddStringToObject(g, "name", name);
    cJSON_AddStringToObject(g, "type", type);
    cJSON_AddStringToObject(g, "command", command);
    cJSON_AddBoolToObject(g, "must_pass", 1);
    cJSON_AddItemToArray(arr, g);
}

/* 1 when root/name was read into sb (the caller releases sb either way). */
static int read_small(strbuf *sb, const char *root, const char *name)
{
    char path[4096];

    strbuf_init(sb, 1 << 20);
    return path_fmt(path, sizeof(path), "%s/%s", root, name) == 0 &&
           fs_read_file(sb, path, 1 << 20) == 0;
}

/* 1 when root/name exists (0 when its path does not fit). */
static int root_has(const char *root, const char *name)
{
    char path[4096];

    return path_fmt(path, sizeof(path), "%s/%s", root, name) == 0 && fs_exists(path);
}

/* 1 when the makefile text defines target at the start of a line. */
static int make_has_target(const char *text, const char *target)
{
    char pat[128];
    regex_t re;
    int found;

    /* truncation: ok, targets are short constants */
    snprintf(pat, sizeof(pat), "^%s[ \t]*:([^=]|$)", target);
    if (regcomp(&re, pat, REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0)
        return 0;
    found = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return found;
}

static void detect_make(cJSON *arr, const char *root)
{
    static const char *const names[] = {"GNUmakefile", "makefile", "Makefile"};
    strbuf sb;

    for (size_t i = 0; i < 3; i++) {
        if (!read_small(&sb, root, names[i]))
            continue;
        if (make_has_target(strbuf_cstr(&sb), "test"))
            add_gate(arr, "make test", "test", "make test");
        else if (make_has_target(strbuf_cstr(&sb), "check"))
            add_gate(arr, "make check", "test", "make check");
        else if (make_has_target(strbuf_cstr(&sb), "all"))
            add_gate(arr, "make", "build", "make");
        strbuf_release(&sb);
        return;
    }
}

static void detect_npm(cJSON *arr, const char *root)
{
    strbuf sb;
    cJSON *pkg, *scripts;

    if (!read_small(&sb, root, "package.json"))
        return;
    pkg = cJSON_Parse(strbuf_cstr(&sb));
    strbuf_release(&sb);
    scripts = cJSON_GetObjectItemCaseSensitive(pkg, "scripts");
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(scripts, "build")))
        add_gate(arr, "npm run build", "build", "npm run build");
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(scripts, "lint")))
        add_gate(arr, "npm run lint", "lint", "npm run lint");
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(scripts, "test")))
        add_gate(arr, "npm test", "test", "npm test");
    cJSON_Delete(pkg);
}

static int file_mentions(const char *root, const char *name, const char *needle)
{
    strbuf sb;
    int yes;

    if (!read_small(&sb, root, name))
        return 0;
    yes = needle == NULL || strstr(strbuf_cstr(&sb), needle) != NULL;
    strbuf_release(&sb);
    return yes;
}

cJSON *gates_detect(const char *root)
{
    cJSON *arr = cJSON_CreateArray();

    if (!arr)
        return NULL;
    detect_make(arr, root);
    if (cJSON_GetArraySize(arr) == 0) {
        if (root_has(root, "CMakeLists.txt")) {
            add_gate(arr, "cmake build", "build",
                     "cmake -S . -B build-goald >/dev/null && cmake --build build-goald");
            add_gate(arr, "ctest", "test", "ctest --test-dir build-goald --output-on-failure");
        }
    }
    detect_npm(arr, root);
    if (file_mentions(root, "pyproject.toml", "pytest") || file_mentions(root, "pytest.ini", NULL) ||
        file_mentions(root, "setup.cfg", "[tool:pytest]"))
        add_gate(arr, "pytest", "test", "python3 -m pytest -q");
    if (root_has(root, "go.mod")) {
        add_gate(arr, "go build", "build", "go build ./...");
        add_gate(arr, "go test", "test", "go test ./...");
    }
    if (root_has(root, "Cargo.toml")) {
        add_gate(arr, "cargo build", "build", "cargo build");
        add_gate(arr, "cargo test", "test", "cargo test");
    }
    return arr;
}
