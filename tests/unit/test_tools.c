/* Unit tests: the agent tools, their limits, notices, envelope and events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/event.h"
#include "store/store.h"
#include "tests/unit/testutil.h"
#include "util/redact.h"
#include "tools/diff.h"
#include "tools/tool.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/utf8.h"

static char root[600];
static char spill[600];
static struct tool_result R;
static const char *const *allowed;
static store *events_store;
static int default_spill; /* 1: the tools pick the spill folder themselves */

static const char *call(const char *name, const char *args)
{
    struct tool_ctx c;

    tool_result_release(&R);
    memset(&c, 0, sizeof(c));
    c.root = root;
    c.spill_dir = default_spill ? NULL : spill;
    c.allowed = allowed;
    c.st = events_store;
    assert_int_equal(tool_call(&c, name, args, &R), 0);
    return strbuf_cstr(&R.output);
}

/* call with a JSON object built from key/value pairs: "s:path", "x.txt", ... */
static const char *callv(const char *name, ...)
{
    cJSON *o = cJSON_CreateObject();
    va_list ap;
    const char *k;
    char *text;
    const char *out;

    va_start(ap, name);
    while ((k = va_arg(ap, const char *)) != NULL) {
        if (k[0] == 's')
            cJSON_AddStringToObject(o, k + 2, va_arg(ap, const char *));
        else if (k[0] == 'i')
            cJSON_AddNumberToObject(o, k + 2, va_arg(ap, int));
        else if (k[0] == 'b')
            cJSON_AddBoolToObject(o, k + 2, va_arg(ap, int));
    }
    va_end(ap);
    text = cJSON_PrintUnformatted(o);
    out = call(name, text);
    cJSON_free(text);
    cJSON_Delete(o);
    return out;
}

static void put(const char *rel, const char *data, size_t len)
{
    char p[1200], d[1200];

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    fs_dirname(d, sizeof(d), p);
    assert_int_equal(fs_mkdir_p(d, 0755), 0);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void puts_file(const char *rel, const char *s)
{
    put(rel, s, strlen(s));
}

static char *slurp(const char *rel, size_t *len)
{
    char p[1200];
    strbuf sb = STRBUF_INIT;

    if (rel[0] == '/')
        snprintf(p, sizeof(p), "%s", rel);
    else
        snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(fs_read_file(&sb, p, 1 << 28), 0);
    return strbuf_detach(&sb, len);
}

static int valid_utf8(const char *s, size_t len)
{
    strbuf sb = STRBUF_INIT;
    int ok;

    assert_int_equal(utf8_sanitize(&sb, s, len, NULL), 0);
    ok = sb.len == len && !memcmp(sb.buf ? sb.buf : "", s, len);
    strbuf_release(&sb);
    return ok;
}

static void fresh_root(const char *name)
{
    snprintf(root, sizeof(root), "%s/%s", testutil_dir, name);
    fs_remove_tree(root);
    assert_int_equal(fs_mkdir_p(root, 0755), 0);
    snprintf(spill, sizeof(spill), "%s/spill", testutil_dir);
}

static void assert_class(const char *cls)
{
    if (R.ok || strcmp(tool_class_name(R.error_class), cls))
        fail_msg("expected error class %s, got ok=%d class=%s output=%s", cls, R.ok,
                 tool_class_name(R.error_class), strbuf_cstr(&R.output));
}

static void assert_ok(void)
{
    if (!R.ok)
        fail_msg("expected ok, got %s: %s", tool_class_name(R.error_class), strbuf_cstr(&R.output));
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("expected to find [%s] in [%.3000s]", needle, hay);
}

static void assert_ends(const char *hay, const char *tail)
{
    size_t h = strlen(hay), t = strlen(tail);
    if (h < t || strcmp(hay + h - t, tail))
        fail_msg("expected [%.2000s] to end with [%s]", hay, tail);
}

/* --- registry and envelope ------------------------------------------------ */

static void test_registry(void **state)
{
    static const char *names[] = {"ls",   "find",      "grep",     "read",      "write",
                                  "edit", "bash",      "run_gates", "complete", "ask_human",
                                  "run_at_start"};
    static const struct tool_def dup = {"read", "again", "{}", NULL};
    cJSON *s, *it;
    size_t n = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_non_null(tool_find(names[i]));
    assert_int_equal(tool_count(), 11);
    for (size_t i = 0; i < tool_count(); i++)
        for (size_t j = i + 1; j < tool_count(); j++)
            assert_string_not_equal(tool_at(i)->name, tool_at(j)->name);
    assert_int_equal(tool_register(&dup), ERR_INVALID);
    assert_int_equal(tool_count(), 11);
    s = tool_schemas(NULL);
    cJSON_ArrayForEach(it, s)
    {
        const cJSON *params = cJSON_GetObjectItem(it, "parameters");
        assert_true(cJSON_IsString(cJSON_GetObjectItem(it, "name")));
        assert_true(cJSON_IsString(cJSON_GetObjectItem(it, "description")));
        assert_string_equal(cJSON_GetObjectItem(params, "type")->valuestring, "object");
        n++;
    }
    assert_int_equal(n, 11);
    cJSON_Delete(s);
    /* the exact argument names of docs/design.md §6 */
    s = tool_schemas(NULL);
    cJSON_ArrayForEach(it, s)
    {
        const char *nm = cJSON_GetObjectItem(it, "name")->valuestring;
        const cJSON *props =
            cJSON_GetObjectItem(cJSON_GetObjectItem(it, "parameters"), "properties");
        char keys[256] = "";
        const cJSON *k;
        cJSON_ArrayForEach(k, props)
        {
            strncat(keys, k->string, sizeof(keys) - strlen(keys) - 2);
            strcat(keys, ",");
        }
        if (!strcmp(nm, "ls"))
            assert_string_equal(keys, "path,limit,");
        else if (!strcmp(nm, "find"))
            assert_string_equal(keys, "pattern,path,limit,");
        else if (!strcmp(nm, "grep"))
            assert_string_equal(keys, "pattern,path,glob,ignore_case,literal,context,limit,");
        else if (!strcmp(nm, "read"))
            assert_string_equal(keys, "path,offset,limit,");
        else if (!strcmp(nm, "write"))
            assert_string_equal(keys, "path,content,mode,");
        else if (!strcmp(nm, "edit"))
            assert_string_equal(keys, "path,old_text,new_text,all,");
        else if (!strcmp(nm, "bash"))
            assert_string_equal(keys, "command,timeout_s,");
        else if (!strcmp(nm, "complete"))
            assert_string_equal(keys, "summary,");
        else if (!strcmp(nm, "ask_human"))
            assert_string_equal(keys, "question,");
        else if (!strcmp(nm, "run_gates"))
            assert_string_equal(keys, "");
        else if (!strcmp(nm, "run_at_start"))
            assert_string_equal(keys, "command,files,timeout_s,");
    }
    cJSON_Delete(s);
}

static void test_unknown_and_validation(void **state)
{
    cJSON *env;

    (void)state;
    fresh_root("valid");
    call("rm", "{}");
    assert_class("validation");
    assert_contains(strbuf_cstr(&R.output), "unknown tool \"rm\"");
    call("read", "{\"path\": 1}");
    assert_class("validation");
    assert_string_equal(strbuf_cstr(&R.output), "read: path: expected a string, got integer");
    call("read", "{}");
    assert_class("validation");
    assert_string_equal(strbuf_cstr(&R.output), "read: path: required");
    call("read", "{\"path\":\"a\",\"bogus\":1}");
    assert_class("validation");
    assert_contains(strbuf_cstr(&R.output), "unknown argument \"bogus\"");
    call("ls", "{\"limit\":0}");
    assert_class("validation");
    assert_string_equal(strbuf_cstr(&R.output), "ls: limit: expected at least 1, got 0");
    call("write", "{\"path\":\"a\",\"content\":\"x\",\"mode\":\"truncate\"}");
    assert_class("validation");
    assert_contains(strbuf_cstr(&R.output), "expected one of overwrite, append");
    call("ls", "{not json");
    assert_class("validation");
    call("read", "[1]");
    assert_class("validation");
    /* the envelope */
    env = tool_result_json(&R);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(env, "ok")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(env, "is_error")));
    assert_string_equal(cJSON_GetObjectItem(env, "error_class")->valuestring, "validation");
    static const char *keys[] = {"exit_code",    "output",      "truncated",
                                 "truncated_by", "total_lines", "total_bytes",
                                 "next_offset",  "spill_path",  "meta"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_non_null(cJSON_GetObjectItem(env, keys[i]));
    cJSON_Delete(env);
}

static void test_allowed_actions(void **state)
{
    static const char *const only_read[] = {"read", "edit", NULL};

    (void)state;
    fresh_root("allowed");
    puts_file("a.txt", "x\n");
    allowed = only_read;
    call("bash", "{\"command\":\"true\"}");
    assert_class("policy");
    assert_string_equal(strbuf_cstr(&R.output),
                        "bash: not among the goal's allowed actions (read, edit)");
    call("write", "{\"path\":\"b\",\"content\":\"\"}");
    assert_class("policy");
    assert_false(fs_exists(root) && access("b", F_OK) == 0);
    call("grep", "{\"pattern\":\"x\"}"); /* read grants ls, find, grep */
    assert_ok();
    call("read", "{\"path\":\"a.txt\"}");
    assert_ok();
    cJSON *s = tool_schemas(only_read);
    assert_int_equal(cJSON_GetArraySize(s), 7); /* ls find grep read edit complete ask_human */
    cJSON_Delete(s);
    allowed = NULL;
}

static int hook_calls;
static int hook(void *arg, struct tool_ctx *ctx, const char *name, const cJSON *args,
                struct tool_result *res)
{
    (void)arg;
    (void)ctx;
    hook_calls++;
    return strbuf_addf(&res->output, "hooked %s: %s", name,
                       cJSON_GetObjectItem(args, "summary")->valuestring);
}

static void test_hooked_tools(void **state)
{
    struct tool_ctx c;

    (void)state;
    fresh_root("hooked");
    call("complete", "{\"summary\":\"done\"}");
    assert_class("validation");
    assert_string_equal(strbuf_cstr(&R.output), "complete: only available inside a run");
    call("run_gates", "{}");
    assert_class("validation");
    memset(&c, 0, sizeof(c));
    c.root = root;
    c.hook = hook;
    tool_result_release(&R);
    tool_call(&c, "complete", "{\"summary\":\"all good\"}", &R);
    assert_ok();
    assert_int_equal(hook_calls, 1);
    assert_string_equal(strbuf_cstr(&R.output), "hooked complete: all good");
    tool_result_release(&R);
    tool_call(&c, "complete", "{}", &R); /* validated before the hook */
    assert_class("validation");
    assert_int_equal(hook_calls, 1);
}

/* --- ls -------------------------------------------------------------------- */

static void test_ls(void **state)
{
    (void)state;
    fresh_root("ls");
    puts_file("b.txt", "");
    puts_file(".hidden", "");
    puts_file("A.txt", "");
    puts_file("sub/c", "");
    callv("ls", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), ".hidden\nA.txt\nb.txt\nsub/");
    callv("ls", "s:path", "sub", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "c");
    callv("ls", "i:limit", 2, NULL);
    assert_ok();
    assert_true(R.truncated);
    assert_string_equal(strbuf_cstr(&R.output),
                        ".hidden\nA.txt\n\n[2 entries limit reached (4 in all). Use limit=4 for "
                        "more]");
    assert_int_equal(R.total_lines, 4);
    assert_int_equal(fs_mkdir_p(strcat(strcpy((char[700]){0}, root), "/empty"), 0755), 0);
    callv("ls", "s:path", "empty", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "(empty directory)");
    callv("ls", "s:path", "b.txt", NULL);
    assert_class("validation");
    callv("ls", "s:path", "nope", NULL);
    assert_class("not_found");
    callv("ls", "s:path", root, NULL); /* absolute, inside */
    assert_ok();
    callv("ls", "s:path", "/etc", NULL);
    assert_class("policy");
}

static void test_ls_bytes_limit(void **state)
{
    char name[200];

    (void)state;
    fresh_root("lsbytes");
    /* 500 names of 150 bytes: 75 KB of listing */
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof(name), "%03d%0146d", i, 0);
        puts_file(name, "");
    }
    callv("ls", NULL);
    assert_ok();
    assert_true(R.truncated);
    assert_string_equal(R.truncated_by, "bytes");
    assert_true(R.output.len <= 51200 + 200);
    assert_contains(strbuf_cstr(&R.output), "[50KB limit reached: showing 341 entries]");
}

/* --- read ------------------------------------------------------------------ */

static void make_lines(const char *rel, int n, int width)
{
    strbuf sb = STRBUF_INIT;

    for (int i = 1; i <= n; i++) {
        assert_int_equal(strbuf_addf(&sb, "%d", i), 0);
        for (int k = snprintf(NULL, 0, "%d", i); k < width; k++)
            assert_int_equal(strbuf_addc(&sb, 'x'), 0);
        assert_int_equal(strbuf_addc(&sb, '\n'), 0);
    }
    put(rel, sb.buf, sb.len);
    strbuf_release(&sb);
}

static void test_read_paging(void **state)
{
    (void)state;
    fresh_root("read");
    make_lines("big.txt", 5000, 1);
    callv("read", "s:path", "big.txt", NULL);
    assert_ok();
    assert_true(R.truncated);
    assert_string_equal(R.truncated_by, "lines");
    assert_int_equal(R.next_offset, 2001);
    assert_int_equal(R.total_lines, 5000);
    assert_true(!strncmp(strbuf_cstr(&R.output), "1\n2\n3\n", 6));
    assert_ends(strbuf_cstr(&R.output),
                "\n2000\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]");
    callv("read", "s:path", "big.txt", "i:offset", 2001, NULL);
    assert_true(!strncmp(strbuf_cstr(&R.output), "2001\n", 5));
    assert_ends(strbuf_cstr(&R.output),
                "\n4000\n\n[Showing lines 2001-4000 of 5000. Use offset=4001 to continue.]");
    callv("read", "s:path", "big.txt", "i:offset", 4001, NULL);
    assert_false(R.truncated);
    assert_int_equal(R.next_offset, 0);
    assert_ends(strbuf_cstr(&R.output), "\n4999\n5000");
    callv("read", "s:path", "big.txt", "i:offset", 10, "i:limit", 3, NULL);
    assert_string_equal(strbuf_cstr(&R.output),
                        "10\n11\n12\n\n[4988 more lines in file. Use offset=13 to continue.]");
    assert_int_equal(R.next_offset, 13);
    callv("read", "s:path", "big.txt", "i:offset", 4999, "i:limit", 5, NULL);
    assert_string_equal(strbuf_cstr(&R.output), "4999\n5000");
    callv("read", "s:path", "big.txt", "i:offset", 5001, NULL);
    assert_class("validation");
    assert_string_equal(strbuf_cstr(&R.output),
                        "big.txt: offset 5001 is beyond the end of the file (5000 lines)");
    callv("read", "s:path", "big.txt", "i:offset", 0, NULL);
    assert_class("validation");
    /* an integer too big for int64 is clamped, not converted (fuzz_tool_args) */
    call("read", "{\"path\":\"big.txt\",\"offset\":1e300,\"limit\":1e300}");
    assert_class("validation");
    assert_contains(strbuf_cstr(&R.output), "is beyond the end of the file (5000 lines)");
}

static void test_read_bytes_and_utf8(void **state)
{
    strbuf sb = STRBUF_INIT;

    (void)state;
    fresh_root("readb");
    make_lines("wide.txt", 1000, 99); /* 100 bytes a line: 512 lines fit in 50 KB */
    callv("read", "s:path", "wide.txt", NULL);
    assert_true(R.truncated);
    assert_string_equal(R.truncated_by, "bytes");
    assert_int_equal(R.next_offset, 513);
    assert_ends(strbuf_cstr(&R.output),
                "\n\n[Showing lines 1-512 of 1000 (50KB limit). Use offset=513 to continue.]");
    /* one 80 KB line of 2-byte characters, then a short line */
    for (int i = 0; i < 40000; i++)
        assert_int_equal(strbuf_adds(&sb, "\xc3\xa9"), 0);
    assert_int_equal(strbuf_adds(&sb, "\nend\n"), 0);
    put("utf.txt", sb.buf, sb.len);
    callv("read", "s:path", "utf.txt", NULL);
    assert_ok();
    assert_true(R.truncated);
    {
        const char *o = strbuf_cstr(&R.output);
        const char *notice = strstr(o, "\n\n[Line 1 is");
        assert_non_null(notice);
        assert_true((size_t)(notice - o) <= 51200);
        assert_true(valid_utf8(o, R.output.len));
        assert_int_equal((notice - o) % 2, 0); /* whole characters only */
        assert_contains(o, "[Line 1 is 78.1KB, over the 50KB limit: showing its first 50KB. See "
                           "the rest with bash: sed -n '1p' utf.txt | cut -b 51201-. Use "
                           "offset=2 to continue.]");
    }
    assert_int_equal(R.next_offset, 2);
    callv("read", "s:path", "utf.txt", "i:offset", 2, NULL);
    assert_string_equal(strbuf_cstr(&R.output), "end");
    strbuf_release(&sb);
    put("bin.dat", "a\0b", 3);
    callv("read", "s:path", "bin.dat", NULL);
    assert_class("validation");
    assert_contains(strbuf_cstr(&R.output), "a binary file");
    puts_file("empty", "");
    callv("read", "s:path", "empty", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), "[The file is empty.]");
    callv("read", "s:path", "missing", NULL);
    assert_class("not_found");
    {
        char fifo[1200];
        snprintf(fifo, sizeof(fifo), "%s/fifo", root);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        callv("read", "s:path", "fifo", NULL); /* refused, not blocked */
        assert_class("policy");
        assert_contains(strbuf_cstr(&R.output), "fifo: a FIFO");
        callv("grep", "s:pattern", "x", "s:path", "fifo", NULL);
        assert_class("policy");
        callv("write", "s:path", "fifo", "s:content", "x", NULL);
        assert_class("policy");
        callv("write", "s:path", "fifo", "s:content", "x", "s:mode", "append", NULL);
        assert_class("policy");
        callv("edit", "s:path", "fifo", "s:old_text", "x", "s:new_text", "y", NULL);
        assert_class("policy");
        callv("ls", "s:path", "fifo", NULL);
        assert_class("policy");
        /* a FIFO in the spill folder, read by its absolute path */
        snprintf(fifo, sizeof(fifo), "%s/bash-fifo", spill);
        fs_mkdir_p(spill, 0700);
        unlink(fifo);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        callv("read", "s:path", fifo, NULL);
        assert_class("policy");
        unlink(fifo);
    }
    callv("read", "s:path", ".", NULL);
    assert_class("validation");
}

/* --- git metadata, caps, large files ------------------------------------ */

static void test_git_refused(void **state)
{
    static const char *const paths[] = {".git",         ".git/config", ".GIT/config",
                                        ".Git",         "./.git",      "sub/.git/config",
                                        "sub/.gIt",     "a//.git/x",   NULL};
    char p[1200];

    (void)state;
    fresh_root("git");
    puts_file(".git", "gitdir: /somewhere/else\n");
    puts_file("sub/.git/config", "[core]\n");
    puts_file("a/x.txt", "secret-in-git\n");
    for (size_t i = 0; paths[i]; i++) {
        callv("write", "s:path", paths[i], "s:content", "gitdir: /\n", NULL);
        assert_class("policy");
        assert_contains(strbuf_cstr(&R.output), paths[i]);
        assert_contains(strbuf_cstr(&R.output), ".git");
        callv("write", "s:path", paths[i], "s:content", "x", "s:mode", "append", NULL);
        assert_class("policy");
        callv("edit", "s:path", paths[i], "s:old_text", "gitdir", "s:new_text", "x", NULL);
        assert_class("policy");
        callv("read", "s:path", paths[i], NULL);
        assert_class("policy");
        callv("ls", "s:path", paths[i], NULL);
        assert_class("policy");
        callv("grep", "s:pattern", "core", "s:path", paths[i], NULL);
        assert_class("policy");
        callv("find", "s:pattern", "*", "s:path", paths[i], NULL);
        assert_class("policy");
    }
    /* absolute, inside the worktree */
    snprintf(p, sizeof(p), "%s/.git", root);
    callv("write", "s:path", p, "s:content", "gitdir: /\n", NULL);
    assert_class("policy");
    /* ".." is refused before .git is even looked at */
    callv("write", "s:path", "a/../.git", "s:content", "gitdir: /\n", NULL);
    assert_class("policy");
    /* the file is as it was, and no folder .git/... was made */
    {
        size_t len;
        char *d = slurp(".git", &len);
        assert_string_equal(d, "gitdir: /somewhere/else\n");
        free(d);
    }
    /* through a symlink: x -> .git, y -> sub/.git */
    snprintf(p, sizeof(p), "%s/x", root);
    assert_int_equal(symlink(".git", p), 0);
    snprintf(p, sizeof(p), "%s/y", root);
    assert_int_equal(symlink("sub/.git", p), 0);
    callv("write", "s:path", "x", "s:content", "gitdir: /\n", NULL);
    assert_class("policy");
    callv("edit", "s:path", "x", "s:old_text", "gitdir", "s:new_text", "x", NULL);
    assert_class("policy");
    callv("read", "s:path", "x", NULL);
    assert_class("policy");
    callv("write", "s:path", "y/config", "s:content", "[core]\\n", NULL);
    assert_class("policy");
    callv("read", "s:path", "y/config", NULL);
    assert_class("policy");
    callv("ls", "s:path", "y", NULL);
    assert_class("policy");
    /* grep and find never return anything under a .git component */
    puts_file(".GIT/HEAD", "secret-in-git\n");
    puts_file("sub/.git/HEAD", "secret-in-git\n");
    callv("grep", "s:pattern", "secret-in-git", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), "a/x.txt:1: secret-in-git");
    callv("grep", "s:pattern", "secret-in-git", "s:glob", ".GIT/**", NULL);
    assert_true(!strstr(strbuf_cstr(&R.output), ".GIT"));
    callv("grep", "s:pattern", "secret-in-git", "s:glob", "*", "b:ignore_case", 1, NULL);
    assert_true(!strstr(strbuf_cstr(&R.output), "HEAD"));
    callv("find", "s:pattern", "*", NULL);
    assert_ok();
    assert_true(!strstr(strbuf_cstr(&R.output), "HEAD"));
    assert_true(!strstr(strbuf_cstr(&R.output), "config"));
    callv("find", "s:pattern", "**/HEAD", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "No files found matching pattern");
    /* names that only look like it are fine */
    callv("write", "s:path", ".gitignore", "s:content", "x\n", NULL);
    assert_ok();
    callv("write", "s:path", "a/.git2/f", "s:content", "x\n", NULL);
    assert_ok();
    callv("write", "s:path", "a/x.git", "s:content", "x\n", NULL);
    assert_ok();
}

static void test_file_cap(void **state)
{
    char *big, *d, p[1200];
    size_t mib = (size_t)1 << 20, len;
    struct stat st;

    (void)state;
    fresh_root("cap");
    setenv("GOALD_TOOLS_MAX_FILE_MB", "1", 1);
    config_load(NULL);
    big = malloc(mib + 2);
    assert_non_null(big);
    memset(big, 'a', mib + 1);
    big[mib + 1] = '\0';
    /* at the cap: fine */
    big[mib] = '\0';
    call("write", NULL); /* reset R */
    {
        cJSON *o = cJSON_CreateObject();
        char *t;
        cJSON_AddStringToObject(o, "path", "at.txt");
        cJSON_AddStringToObject(o, "content", big);
        t = cJSON_PrintUnformatted(o);
        call("write", t);
        assert_ok();
        cJSON_free(t);
        cJSON_Delete(o);
    }
    snprintf(p, sizeof(p), "%s/at.txt", root);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, (off_t)mib);
    /* one byte over: refused, nothing written */
    big[mib] = 'a';
    {
        cJSON *o = cJSON_CreateObject();
        char *t;
        cJSON_AddStringToObject(o, "path", "over.txt");
        cJSON_AddStringToObject(o, "content", big);
        t = cJSON_PrintUnformatted(o);
        call("write", t);
        assert_class("policy");
        assert_contains(strbuf_cstr(&R.output), "over.txt");
        assert_contains(strbuf_cstr(&R.output), "tools.max_file_mb");
        assert_contains(strbuf_cstr(&R.output), "1.0MB");
        cJSON_free(t);
        cJSON_Delete(o);
    }
    snprintf(p, sizeof(p), "%s/over.txt", root);
    assert_int_equal(stat(p, &st), -1);
    /* overwrite of an existing file: unchanged */
    puts_file("keep.txt", "old\n");
    {
        cJSON *o = cJSON_CreateObject();
        char *t;
        cJSON_AddStringToObject(o, "path", "keep.txt");
        cJSON_AddStringToObject(o, "content", big);
        t = cJSON_PrintUnformatted(o);
        call("write", t);
        assert_class("policy");
        cJSON_free(t);
        cJSON_Delete(o);
    }
    d = slurp("keep.txt", &len);
    assert_string_equal(d, "old\n");
    free(d);
    /* append past the cap: the resulting size counts */
    callv("write", "s:path", "at.txt", "s:content", "b", "s:mode", "append", NULL);
    assert_class("policy");
    assert_contains(strbuf_cstr(&R.output), "tools.max_file_mb");
    snprintf(p, sizeof(p), "%s/at.txt", root);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, (off_t)mib);
    /* append under it: streamed, the lines counted */
    callv("write", "s:path", "keep.txt", "s:content", "more\nlines", "s:mode", "append", NULL);
    assert_ok();
    assert_int_equal(R.total_bytes, 14);
    assert_int_equal(R.total_lines, 3);
    d = slurp("keep.txt", &len);
    assert_string_equal(d, "old\nmore\nlines");
    free(d);
    /* edit whose result passes the cap: refused, the file unchanged */
    memset(big, 'a', mib);
    for (size_t i = 99; i < mib; i += 100)
        big[i] = '\n';
    memcpy(big + 500, "MARKER", 6); /* line 6 */
    put("edit.txt", big, mib - 2);
    callv("edit", "s:path", "edit.txt", "s:old_text", "MARKER", "s:new_text", "MARKER-LONGER",
          NULL);
    assert_class("policy");
    assert_contains(strbuf_cstr(&R.output), "edit.txt");
    assert_contains(strbuf_cstr(&R.output), "tools.max_file_mb");
    snprintf(p, sizeof(p), "%s/edit.txt", root);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, (off_t)(mib - 2));
    /* an edit that stays within it works, and the diff shows the line */
    callv("edit", "s:path", "edit.txt", "s:old_text", "MARKER", "s:new_text", "MARK", NULL);
    assert_ok();
    assert_contains(strbuf_cstr(&R.output), "\n-MARKERaaa");
    assert_contains(strbuf_cstr(&R.output), "\n+MARKaaa");
    assert_contains(strbuf_cstr(&R.output), "@@ -3,7 +3,7 @@");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, (off_t)(mib - 4));
    /* with CRLF the result counts the CRs */
    put("crlf.txt", "a\r\nb\r\n", 6);
    {
        char *nl = malloc(mib);
        assert_non_null(nl);
        memset(nl, '\n', mib / 2);
        nl[mib / 2] = '\0';
        cJSON *o = cJSON_CreateObject();
        char *t;
        cJSON_AddStringToObject(o, "path", "crlf.txt");
        cJSON_AddStringToObject(o, "old_text", "a");
        cJSON_AddStringToObject(o, "new_text", nl);
        t = cJSON_PrintUnformatted(o);
        call("edit", t); /* mib/2 LF become mib/2 CRLF: 1 MiB + 5 bytes */
        assert_class("policy");
        cJSON_free(t);
        cJSON_Delete(o);
        free(nl);
    }
    free(big);
    unsetenv("GOALD_TOOLS_MAX_FILE_MB");
    config_load(NULL);
}

/* read streams: a file far larger than tools.read_max_mb is read (its
 * head, any window) without being loaded whole */
static void test_read_huge(void **state)
{
    char p[1200];
    struct rusage ru0, ru1;
    FILE *f;

    (void)state;
    fresh_root("huge");
    snprintf(p, sizeof(p), "%s/huge.txt", root);
    f = fopen(p, "w");
    assert_non_null(f);
    for (int i = 1; i <= 10000; i++)
        fprintf(f, "line %05d\n", i);
    fclose(f);
    assert_int_equal(truncate(p, (off_t)1 << 30), 0); /* 1 GiB, sparse after the lines */
    getrusage(RUSAGE_SELF, &ru0);
    callv("read", "s:path", "huge.txt", NULL);
    getrusage(RUSAGE_SELF, &ru1);
    assert_ok();
    assert_true(!strncmp(strbuf_cstr(&R.output), "line 00001\nline 00002\n", 22));
    assert_contains(strbuf_cstr(&R.output), "[Showing lines 1-2000 of a 1024MB file");
    assert_contains(strbuf_cstr(&R.output), "Use offset=2001 to continue");
    assert_int_equal(R.next_offset, 2001);
    assert_int_equal(R.total_bytes, (int64_t)1 << 30);
    /* far less than the file: a chunk and the window (ASan's own overhead aside) */
    assert_true(ru1.ru_maxrss - ru0.ru_maxrss < 200 * 1024);
    callv("read", "s:path", "huge.txt", "i:offset", 9999, "i:limit", 2, NULL);
    assert_ok();
    assert_true(!strncmp(strbuf_cstr(&R.output), "line 09999\nline 10000\n", 22));
    /* a small read_max_mb only stops the line count, never the read */
    setenv("GOALD_TOOLS_READ_MAX_MB", "1", 1);
    config_load(NULL);
    callv("read", "s:path", "huge.txt", "i:offset", 5000, "i:limit", 1, NULL);
    assert_ok();
    assert_true(!strncmp(strbuf_cstr(&R.output), "line 05000", 10));
    assert_contains(strbuf_cstr(&R.output), "more than");
    unsetenv("GOALD_TOOLS_READ_MAX_MB");
    config_load(NULL);
    unlink(p);
}

/* Spills land in spill/ beside the database (mode 0700), never in TMPDIR,
 * and the folder stays within tools.spill_total_mb: the oldest go first. */
static void test_spill_state_folder(void **state)
{
    char db[700], dir[800], tmp[700], p[1000];
    struct stat st;
    struct timespec old[2];
    size_t nspill = 0;
    DIR *d;
    struct dirent *de;

    (void)state;
    fresh_root("spillst");
    snprintf(tmp, sizeof(tmp), "%s/hosttmp", testutil_dir);
    fs_remove_tree(tmp);
    assert_int_equal(fs_mkdir_p(tmp, 0755), 0);
    setenv("TMPDIR", tmp, 1);
    snprintf(db, sizeof(db), "%s/state/goald.db", testutil_dir);
    snprintf(dir, sizeof(dir), "%s/state/spill", testutil_dir);
    fs_remove_tree(dir);
    assert_int_equal(fs_mkdir_p(dir, 0755), 0); /* too open: made private */
    assert_int_equal(store_open(&events_store, db), 0);
    default_spill = 1;
    callv("bash", "s:command", "seq 1 100000", NULL);
    assert_ok();
    assert_non_null(R.spill_path);
    assert_true(!strncmp(R.spill_path, dir, strlen(dir)) && R.spill_path[strlen(dir)] == '/');
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* read reaches it by its absolute path */
    callv("read", "s:path", R.spill_path, "i:offset", 99999, NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), "99999\n100000");
    /* the host's TMPDIR stays empty */
    d = opendir(tmp);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        assert_true(de->d_name[0] == '.');
    closedir(d);

    /* the total cap: an old spill of 700 KB goes to make room for 1 MiB */
    setenv("GOALD_TOOLS_SPILL_TOTAL_MB", "1", 1);
    setenv("GOALD_TOOLS_SPILL_MB", "1", 1);
    config_load(NULL);
    snprintf(p, sizeof(p), "%s/bash-0-old.log", dir);
    {
        FILE *f = fopen(p, "w");
        char *z = calloc(1, 700 << 10);
        assert_non_null(f);
        assert_non_null(z);
        fwrite(z, 1, 700 << 10, f);
        fclose(f);
        free(z);
    }
    old[0].tv_sec = old[1].tv_sec = time(NULL) - 3600;
    old[0].tv_nsec = old[1].tv_nsec = 0;
    assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    snprintf(p, sizeof(p), "%s/notes.txt", dir);
    {
        FILE *f = fopen(p, "w");
        fputs("not a spill\n", f);
        fclose(f);
    }
    callv("bash", "s:command", "seq 1 100000", NULL);
    assert_ok();
    callv("bash", "s:command", "seq 1 100000", NULL);
    assert_ok();
    snprintf(p, sizeof(p), "%s/bash-0-old.log", dir);
    assert_int_equal(stat(p, &st), -1);
    snprintf(p, sizeof(p), "%s/notes.txt", dir);
    assert_int_equal(stat(p, &st), 0);
    d = opendir(dir);
    while ((de = readdir(d)) != NULL)
        nspill += !strncmp(de->d_name, "bash-", 5);
    closedir(d);
    assert_int_equal(nspill, 1); /* the newest only */
    assert_true(R.spill_path && stat(R.spill_path, &st) == 0);
    unsetenv("GOALD_TOOLS_SPILL_TOTAL_MB");
    unsetenv("GOALD_TOOLS_SPILL_MB");
    unsetenv("TMPDIR");
    config_load(NULL);
    default_spill = 0;
    store_close(events_store);
    events_store = NULL;
}

/* --- write ----------------------------------------------------------------- */

static void test_write(void **state)
{
    char *d;
    struct stat st;
    char p[1200];

    (void)state;
    fresh_root("write");
    callv("write", "s:path", "deep/er/f.txt", "s:content", "one\n", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), "Wrote 4B to deep/er/f.txt");
    d = slurp("deep/er/f.txt", NULL);
    assert_string_equal(d, "one\n");
    free(d);
    callv("write", "s:path", "deep/er/f.txt", "s:content", "two\n", "s:mode", "append", NULL);
    assert_ok();
    d = slurp("deep/er/f.txt", NULL);
    assert_string_equal(d, "one\ntwo\n");
    free(d);
    callv("write", "s:path", "deep/er/f.txt", "s:content", "new", "s:mode", "overwrite", NULL);
    d = slurp("deep/er/f.txt", NULL);
    assert_string_equal(d, "new");
    free(d);
    /* the mode of an existing file is kept */
    snprintf(p, sizeof(p), "%s/deep/er/f.txt", root);
    chmod(p, 0751);
    callv("write", "s:path", "deep/er/f.txt", "s:content", "x", NULL);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0751);
    callv("write", "s:path", "deep", "s:content", "x", NULL);
    assert_class("validation");
    /* through a symlink that stays inside: the target is written */
    puts_file("target.txt", "old");
    snprintf(p, sizeof(p), "%s/link.txt", root);
    assert_int_equal(symlink("target.txt", p), 0);
    callv("write", "s:path", "link.txt", "s:content", "via link", NULL);
    assert_ok();
    d = slurp("target.txt", NULL);
    assert_string_equal(d, "via link");
    free(d);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
}

static int count_temp_files(const char *dir)
{
    DIR *dd = opendir(dir);
    struct dirent *de;
    int n = 0;

    assert_non_null(dd);
    while ((de = readdir(dd)) != NULL)
        n += strstr(de->d_name, ".goald-tmp") != NULL;
    closedir(dd);
    return n;
}

static void test_write_atomic(void **state)
{
    struct rlimit old, lim;
    char *big = malloc(200000);
    char *d;

    (void)state;
    fresh_root("atomic");
    puts_file("keep.txt", "the old content\n");
    memset(big, 'z', 199999);
    big[199999] = '\0';
    /* a write that fails before the rename: the file size limit */
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 100000;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    callv("write", "s:path", "keep.txt", "s:content", big, NULL);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_class("io");
    d = slurp("keep.txt", NULL);
    assert_string_equal(d, "the old content\n");
    free(d);
    assert_int_equal(count_temp_files(root), 0);
    /* and the same write succeeds without the limit */
    callv("write", "s:path", "keep.txt", "s:content", big, NULL);
    assert_ok();
    d = slurp("keep.txt", NULL);
    assert_int_equal(strlen(d), 199999);
    free(d);
    free(big);
}

/* --- edit ------------------------------------------------------------------ */

static void test_edit_exact(void **state)
{
    char *d;

    (void)state;
    fresh_root("edit");
    puts_file("f.c", "a\nb\nc\nd\ne\nf\ng\nh\n");
    callv("edit", "s:path", "f.c", "s:old_text", "d\n", "s:new_text", "D\nD2\n", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output),
                        "Edited f.c: replaced 1 occurrence.\n\n"
                        "--- a/f.c\n+++ b/f.c\n"
                        "@@ -1,7 +1,8 @@\n a\n b\n c\n-d\n+D\n+D2\n e\n f\n g\n");
    d = slurp("f.c", NULL);
    assert_string_equal(d, "a\nb\nc\nD\nD2\ne\nf\ng\nh\n");
    free(d);
    callv("edit", "s:path", "f.c", "s:old_text", "zzz", "s:new_text", "y", NULL);
    assert_class("not_found");
    assert_contains(strbuf_cstr(&R.output), "f.c: old_text was not found");
    puts_file("g.txt", "x = 1\nx = 1\n");
    callv("edit", "s:path", "g.txt", "s:old_text", "x = 1", "s:new_text", "x = 2", NULL);
    assert_class("validation");
    assert_contains(strbuf_cstr(&R.output), "old_text matches 2 places; it must be unique");
    d = slurp("g.txt", NULL);
    assert_string_equal(d, "x = 1\nx = 1\n");
    free(d);
    callv("edit", "s:path", "g.txt", "s:old_text", "x = 1", "s:new_text", "x = 2", "b:all", 1,
          NULL);
    assert_ok();
    assert_contains(strbuf_cstr(&R.output), "replaced 2 occurrences");
    d = slurp("g.txt", NULL);
    assert_string_equal(d, "x = 2\nx = 2\n");
    free(d);
    callv("edit", "s:path", "g.txt", "s:old_text", "x", "s:new_text", "x", NULL);
    assert_class("validation");
    callv("edit", "s:path", "g.txt", "s:old_text", "", "s:new_text", "x", NULL);
    assert_class("validation");
    callv("edit", "s:path", "nope.txt", "s:old_text", "a", "s:new_text", "b", NULL);
    assert_class("not_found");
}

static void test_edit_normalised(void **state)
{
    char *d;

    (void)state;
    fresh_root("editnorm");
    /* tabs, curly quotes, trailing blanks and an en dash in the file */
    puts_file("m.py",
              "def f():\n\treturn \xe2\x80\x9chello\xe2\x80\x9d  \n# a \xe2\x80\x93 b\nkeep  \n");
    callv("edit", "s:path", "m.py", "s:old_text", "    return \"hello\"\n# a - b", "s:new_text",
          "    return 'bye'\n# c", NULL);
    assert_ok();
    assert_contains(strbuf_cstr(&R.output), "(matched after normalising whitespace and quotes)");
    d = slurp("m.py", NULL);
    assert_string_equal(d, "def f():\n    return 'bye'\n# c\nkeep  \n");
    free(d);
    assert_string_equal(cJSON_GetObjectItem(R.meta, "match")->valuestring, "normalised");
}

static void test_edit_crlf_bom(void **state)
{
    char *d;
    size_t n;

    (void)state;
    fresh_root("editcrlf");
    puts_file("w.txt", "\xef\xbb\xbfone\r\ntwo\r\nthree\r\n");
    callv("edit", "s:path", "w.txt", "s:old_text", "two\nthree", "s:new_text", "2\n3", NULL);
    assert_ok();
    d = slurp("w.txt", &n);
    assert_string_equal(d, "\xef\xbb\xbfone\r\n2\r\n3\r\n");
    free(d);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(R.meta, "crlf")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(R.meta, "bom")));
    /* old_text with CRLF works too */
    callv("edit", "s:path", "w.txt", "s:old_text", "one\r\n2", "s:new_text", "1\r\n2", NULL);
    assert_ok();
    d = slurp("w.txt", NULL);
    assert_string_equal(d, "\xef\xbb\xbf"
                           "1\r\n2\r\n3\r\n");
    free(d);
}

/* A 3,000-line text with lines 11 and 2991 changed: the diff is two
 * small hunks (an LCS that gives up on large inputs printed all 6,000
 * lines, every one deleted and added). */
static void test_edit_diff_small(void **state)
{
    strbuf a = STRBUF_INIT, b = STRBUF_INIT, out = STRBUF_INIT;
    size_t added = 99, removed = 99, lines = 0;
    char *d;

    (void)state;
    for (int i = 1; i <= 3000; i++) {
        assert_int_equal(strbuf_addf(&a, "line %d%s\n", i, i == 11 || i == 2991 ? " MARK" : ""),
                         0);
        assert_int_equal(strbuf_addf(&b, "line %d%s\n", i, i == 11 || i == 2991 ? " DONE" : ""),
                         0);
    }
    assert_int_equal(diff_unified(&out, "big.txt", a.buf, a.len, b.buf, b.len, &added, &removed),
                     0);
    assert_int_equal(added, 2);
    assert_int_equal(removed, 2);
    assert_string_equal(strbuf_cstr(&out),
                        "--- a/big.txt\n+++ b/big.txt\n"
                        "@@ -8,7 +8,7 @@\n line 8\n line 9\n line 10\n-line 11 MARK\n"
                        "+line 11 DONE\n line 12\n line 13\n line 14\n"
                        "@@ -2988,7 +2988,7 @@\n line 2988\n line 2989\n line 2990\n"
                        "-line 2991 MARK\n+line 2991 DONE\n line 2992\n line 2993\n line 2994\n");
    /* the same through edit (all=true: one window over both places) */
    fresh_root("editbig");
    puts_file("big.txt", strbuf_cstr(&a));
    callv("edit", "s:path", "big.txt", "s:old_text", "MARK", "s:new_text", "DONE", "b:all", 1,
          NULL);
    assert_ok();
    assert_int_equal(cJSON_GetObjectItem(R.meta, "lines_added")->valuedouble, 2);
    assert_int_equal(cJSON_GetObjectItem(R.meta, "lines_removed")->valuedouble, 2);
    for (const char *p = strbuf_cstr(&R.output); *p; p++)
        lines += *p == '\n';
    assert_true(lines < 30);
    assert_contains(strbuf_cstr(&R.output), "@@ -2988,7 +2988,7 @@\n");
    d = slurp("big.txt", NULL);
    assert_string_equal(d, strbuf_cstr(&b));
    free(d);
    /* a missing last newline is not a difference; NUL bytes are text */
    strbuf_reset(&out);
    assert_int_equal(diff_unified(&out, "x", "a\nb", 3, "a\nb\n", 4, &added, &removed), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(added + removed, 0);
    assert_int_equal(diff_unified(&out, "x", "a\0b\nc", 5, "a\0B\nc", 5, &added, &removed), 0);
    assert_int_equal(out.len, 45);
    assert_memory_equal(out.buf, "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\0b\n+a\0B\n c\n", 45);
    strbuf_release(&a);
    strbuf_release(&b);
    strbuf_release(&out);
}

/* --- grep and find ---------------------------------------------------------- */

static void test_grep(void **state)
{
    char longline[1200];

    (void)state;
    fresh_root("grep");
    puts_file("a.txt", "hello\nworld\nHello again\n");
    puts_file("src/b.c", "int x;\nint a.b;\nint axb;\n");
    callv("grep", "s:pattern", "world", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), "a.txt:2: world");
    callv("grep", "s:pattern", "hello", "b:ignore_case", 1, "s:path", "a.txt", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "a.txt:1: hello\na.txt:3: Hello again");
    callv("grep", "s:pattern", "a.b", "s:path", "src", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "src/b.c:2: int a.b;\nsrc/b.c:3: int axb;");
    callv("grep", "s:pattern", "a.b", "b:literal", 1, NULL);
    assert_string_equal(strbuf_cstr(&R.output), "src/b.c:2: int a.b;");
    callv("grep", "s:pattern", "int x", "i:context", 1, NULL);
    assert_string_equal(strbuf_cstr(&R.output), "src/b.c:1: int x;\nsrc/b.c-2- int a.b;");
    callv("grep", "s:pattern", "o", "s:glob", "*.c", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "No matches found");
    callv("grep", "s:pattern", "int", "i:limit", 2, NULL);
    assert_ok();
    assert_true(R.truncated);
    assert_string_equal(strbuf_cstr(&R.output),
                        "src/b.c:1: int x;\nsrc/b.c:2: int a.b;\n\n[2 matches limit reached. Use "
                        "limit=4 for more, or refine pattern]");
    callv("grep", "s:pattern", "(unclosed", NULL);
    assert_class("validation");
    callv("grep", "s:pattern", "x", "s:path", "../", NULL);
    assert_class("policy");
    /* a line of 1000 characters is cut at 500 */
    memset(longline, 'q', 1000);
    strcpy(longline + 1000, "\n");
    puts_file("long.txt", longline);
    callv("grep", "s:pattern", "qqq", NULL);
    assert_ok();
    {
        char want[700];
        snprintf(want, sizeof(want),
                 "long.txt:1: %.*s... [truncated]\n\n[Some lines truncated "
                 "to 500 chars. Use read to see full lines]",
                 500, longline);
        assert_string_equal(strbuf_cstr(&R.output), want);
    }
}

static void test_grep_many(void **state)
{
    strbuf sb = STRBUF_INIT;

    (void)state;
    fresh_root("grepmany");
    for (int i = 0; i < 3000; i++)
        assert_int_equal(strbuf_addf(&sb, "match %d %0100d\n", i, 0), 0);
    put("m.txt", sb.buf, sb.len);
    strbuf_release(&sb);
    callv("grep", "s:pattern", "match", "i:limit", 1000, NULL);
    assert_true(R.truncated);
    assert_string_equal(R.truncated_by, "bytes");
    assert_true(R.output.len < 52000);
    assert_contains(strbuf_cstr(&R.output), "[1000 matches limit reached. Use limit=2000 for "
                                            "more, or refine pattern. 50KB limit reached: "
                                            "showing 421 lines]");
}

static void test_find(void **state)
{
    char cmd[1400];

    (void)state;
    fresh_root("find");
    snprintf(cmd, sizeof(cmd), "git -C '%s' init -q", root);
    assert_int_equal(system(cmd), 0);
    puts_file(".gitignore", "ignored/\n*.log\n");
    puts_file("a.c", "");
    puts_file("src/b.c", "");
    puts_file("src/deep/c.c", "");
    puts_file("src/x.h", "");
    puts_file("ignored/d.c", "");
    puts_file("e.log", "");
    puts_file(".hidden.c", "");
    callv("find", "s:pattern", "*.c", NULL);
    assert_ok();
    assert_string_equal(strbuf_cstr(&R.output), ".hidden.c\na.c\nsrc/b.c\nsrc/deep/c.c");
    callv("find", "s:pattern", "*.c", "s:path", "src", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "src/b.c\nsrc/deep/c.c");
    callv("find", "s:pattern", "src/**/*.c", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "src/b.c\nsrc/deep/c.c");
    callv("find", "s:pattern", "*.zzz", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "No files found matching pattern");
    callv("find", "s:pattern", "*.c", "i:limit", 2, NULL);
    assert_true(R.truncated);
    assert_int_equal(cJSON_GetObjectItem(R.meta, "results")->valueint, 2);
    assert_ends(strbuf_cstr(&R.output),
                "\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]");
    callv("find", "s:pattern", "*.c", "s:path", "/", NULL);
    assert_class("policy");
}

/* --- bash -------------------------------------------------------------------- */

static void test_bash(void **state)
{
    char *d;
    size_t n;

    (void)state;
    fresh_root("bash");
    callv("bash", "s:command", "echo out; echo err >&2; echo $PWD", NULL);
    assert_ok();
    {
        char want[1400];
        snprintf(want, sizeof(want), "out\nerr\n%s", root);
        assert_string_equal(strbuf_cstr(&R.output), want);
    }
    assert_int_equal(R.exit_code, 0);
    assert_null(R.spill_path);
    callv("bash", "s:command", "true", NULL);
    assert_string_equal(strbuf_cstr(&R.output), "(no output)");
    callv("bash", "s:command", "echo partial; exit 3", NULL);
    assert_class("exit");
    assert_int_equal(R.exit_code, 3);
    assert_string_equal(strbuf_cstr(&R.output), "partial\n\nCommand exited with code 3");
    callv("bash", "s:command", "echo start; sleep 30", "i:timeout_s", 1, NULL);
    assert_class("timeout");
    assert_string_equal(strbuf_cstr(&R.output), "start\n\nCommand timed out after 1 seconds "
                                                "(the whole process group was killed)");
    /* timeout_s: bounded by the schema and by sandbox.timeout_s */
    callv("bash", "s:command", "true", "i:timeout_s", 100000, NULL);
    assert_class("validation");
    setenv("GOALD_SANDBOX_TIMEOUT_S", "1", 1);
    config_load(NULL);
    callv("bash", "s:command", "sleep 5", "i:timeout_s", 5, NULL);
    unsetenv("GOALD_SANDBOX_TIMEOUT_S");
    config_load(NULL);
    assert_class("timeout");
    assert_int_equal(cJSON_GetObjectItem(R.meta, "timeout_s")->valueint, 1);
    /* tail truncation by lines, the full output spilled */
    callv("bash", "s:command", "seq 1 5000", NULL);
    assert_ok();
    assert_true(R.truncated);
    assert_string_equal(R.truncated_by, "lines");
    assert_non_null(R.spill_path);
    assert_int_equal(R.total_lines, 5000);
    assert_true(!strncmp(strbuf_cstr(&R.output), "3001\n3002\n", 10));
    {
        char want[1200];
        snprintf(want, sizeof(want), "\n5000\n\n[Showing lines 3001-5000 of 5000. Full output: %s]",
                 R.spill_path);
        assert_ends(strbuf_cstr(&R.output), want);
    }
    d = slurp(R.spill_path, &n);
    assert_int_equal(n, 23893); /* the whole of seq 1 5000 */
    assert_true(!strncmp(d, "1\n2\n3\n", 6));
    free(d);
    /* the spill file can be read with the read tool */
    {
        char *sp = strdup(R.spill_path);
        callv("read", "s:path", sp, "i:offset", 2, "i:limit", 2, NULL);
        assert_ok();
        assert_string_equal(strbuf_cstr(&R.output),
                            "2\n3\n\n[4997 more lines in file. Use offset=4 to continue.]");
        free(sp);
    }
    /* by bytes: 1000 lines of 100 bytes */
    callv("bash", "s:command", "for i in $(seq 1 1000); do printf '%099d\\n' $i; done", NULL);
    assert_true(R.truncated);
    assert_string_equal(R.truncated_by, "bytes");
    {
        char want[1200];
        snprintf(want, sizeof(want),
                 "\n\n[Showing lines 489-1000 of 1000 (50KB limit). Full "
                 "output: %s]",
                 R.spill_path);
        assert_ends(strbuf_cstr(&R.output), want);
    }
    /* one long line of 3-byte characters: its tail, never half a character */
    callv("bash", "s:command", "for i in $(seq 1 30000); do printf '\\xe2\\x82\\xac'; done", NULL);
    assert_true(R.truncated);
    assert_true(valid_utf8(strbuf_cstr(&R.output), R.output.len));
    assert_contains(strbuf_cstr(&R.output), "[Showing the last 50.0KB of line 1 (the line is "
                                            "87.9KB). Full output: ");
    assert_true(!strncmp(strbuf_cstr(&R.output), "\xe2\x82\xac", 3));
}

/* --- redaction and events ---------------------------------------------------- */

static void test_redaction(void **state)
{
    const char *o;
    strbuf sb = STRBUF_INIT;
    int n = 0;

    (void)state;
    fresh_root("redact");
    puts_file("env.txt", "aws=AKIAIOSFODNN7EXAMPLE\n"
                         "Authorization: Bearer abcdef0123456789xyz\n"
                         "X_TOKEN=q8Hn2LxZ0pWm-v4\n"
                         "DB_PASSWORD='Hu7nT3r2hUnt'\n"
                         "api_secret: \"L3tM3in9x2Qa\"\n"
                         "key=sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX\n"
                         "url=https://user:pa55word@example.com/x\n"
                         "plain=nothing secret here\n");
    o = callv("read", "s:path", "env.txt", NULL);
    assert_ok();
    assert_null(strstr(o, "AKIAIOSFODNN7EXAMPLE"));
    assert_null(strstr(o, "abcdef0123456789xyz"));
    assert_null(strstr(o, "q8Hn2LxZ0pWm-v4"));
    assert_null(strstr(o, "Hu7nT3r2hUnt"));
    assert_null(strstr(o, "L3tM3in9x2Qa"));
    assert_null(strstr(o, "ABCDEFGHIJKLMNOPQRSTUVWX"));
    assert_null(strstr(o, "pa55word"));
    assert_contains(o, "aws=***REDACTED***\n");
    assert_contains(o, "Authorization: Bearer ***REDACTED***\n");
    assert_contains(o, "X_TOKEN=***REDACTED***\n");
    assert_contains(o, "plain=nothing secret here");
    assert_true(R.redactions >= 7);
    o = callv("bash", "s:command", "echo GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
              NULL);
    assert_string_equal(o, "GITHUB_TOKEN=***REDACTED***\n[goald: 1 secret masked in this output "
                           "as ***REDACTED***; the files hold the real text]");
    /* the API */
    assert_int_equal(redact_text(&sb, "x AKIAABCDEFGHIJKLMNOP y", 24, &n), 0);
    assert_string_equal(strbuf_cstr(&sb), "x ***REDACTED*** y");
    assert_int_equal(n, 1);
    strbuf_release(&sb);
}

struct evs {
    char types[8][64];
    char payloads[8][4096];
    int n;
};

static int collect(const struct store_event *ev, void *arg)
{
    struct evs *e = arg;
    if (e->n < 8) {
        snprintf(e->types[e->n], 64, "%s", ev->type);
        snprintf(e->payloads[e->n], 4096, "%s", ev->payload);
        e->n++;
    }
    return 0;
}

static void test_events(void **state)
{
    char db[700];
    struct evs e;
    cJSON *p;

    (void)state;
    fresh_root("events");
    snprintf(db, sizeof(db), "%s/events.db", testutil_dir);
    assert_int_equal(store_open(&events_store, db), 0);
    callv("write", "s:path", "a.txt", "s:content", "PASSWORD=t0pS3cr3tX99\n", NULL);
    assert_ok();
    callv("read", "s:path", "../etc/passwd", NULL);
    assert_class("policy");
    memset(&e, 0, sizeof(e));
    assert_int_equal(store_event_each(events_store, NULL, 0, 0, collect, &e), 0);
    assert_int_equal(e.n, 4);
    assert_string_equal(e.types[0], "tool_call.started");
    assert_string_equal(e.types[1], "tool_call.completed");
    assert_string_equal(e.types[2], "tool_call.started");
    assert_string_equal(e.types[3], "tool_call.failed");
    assert_null(strstr(e.payloads[0], "t0pS3cr3tX99")); /* arguments are redacted */
    assert_contains(e.payloads[0], "PASSWORD=***REDACTED***");
    p = cJSON_Parse(e.payloads[1]);
    assert_string_equal(cJSON_GetObjectItem(p, "tool")->valuestring, "write");
    assert_non_null(cJSON_GetObjectItem(p, "latency_ms"));
    assert_int_equal(cJSON_GetObjectItem(p, "exit_code")->valueint, 0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(p, "truncated")));
    cJSON_Delete(p);
    p = cJSON_Parse(e.payloads[3]);
    assert_string_equal(cJSON_GetObjectItem(p, "error_class")->valuestring, "policy");
    assert_contains(cJSON_GetObjectItem(p, "error")->valuestring, "\"..\" is not allowed");
    cJSON_Delete(p);
    store_close(events_store);
    events_store = NULL;
}

/* Random UTF-8 text and limits: the kept span is whole characters, within
 * the limits, and cut on line boundaries unless a single line is too long. */
static void test_truncate_random(void **state)
{
    static const char *pieces[] = {
        "a", "b ", "\n", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\n\n", "xyz"};
    unsigned seed = 12345;

    (void)state;
    for (int iter = 0; iter < 3000; iter++) {
        strbuf sb = STRBUF_INIT;
        struct trunc t;
        size_t max_lines, max_bytes;
        int n;
        seed = seed * 1103515245u + 12345u;
        n = (int)((seed >> 16) % 300);
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            assert_int_equal(strbuf_adds(&sb, pieces[(seed >> 16) % 8]), 0);
        }
        seed = seed * 1103515245u + 12345u;
        max_lines = 1 + (seed >> 16) % 40;
        seed = seed * 1103515245u + 12345u;
        max_bytes = 4 + (seed >> 16) % 400;
        for (int mode = 0; mode < 2; mode++) {
            const char *s = strbuf_cstr(&sb);
            if (mode == 0)
                truncate_head(&t, s, sb.len, max_lines, max_bytes);
            else
                truncate_tail(&t, s, sb.len, max_lines, max_bytes);
            assert_true(valid_utf8(s + t.start, t.len));
            assert_true(t.len <= max_bytes);
            assert_true(t.lines <= max_lines);
            assert_int_equal(t.total_lines, text_lines(s, sb.len));
            if (!t.truncated) {
                assert_int_equal(t.len, sb.len);
            } else if (!t.partial_line) {
                if (mode == 0)
                    assert_true(t.len == 0 || s[t.len - 1] == '\n');
                else
                    assert_true(t.start == 0 || s[t.start - 1] == '\n');
            }
            if (mode == 0)
                assert_int_equal(t.start, 0);
            else
                assert_int_equal(t.start + t.len, sb.len);
        }
        strbuf_release(&sb);
    }
}

static void test_check_programs(void **state)
{
    char detail[256];
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");

    (void)state;
    assert_int_equal(tool_check_programs(detail, sizeof(detail)), 0);
    assert_non_null(strstr(detail, "ripgrep "));
    assert_non_null(strstr(detail, "fd"));
    setenv("GOALD_SANDBOX_PATH", "/nonexistent", 1);
    setenv("PATH", "/nonexistent", 1);
    config_load(NULL);
    assert_int_equal(tool_check_programs(detail, sizeof(detail)), ERR_NOTFOUND);
    assert_string_equal(err_last(), "rg is not installed (apt-get install ripgrep)");
    setenv("PATH", path, 1);
    free(path);
    unsetenv("GOALD_SANDBOX_PATH");
    config_load(NULL);
}

static void test_truncate_helpers(void **state)
{
    struct trunc t;
    const char *s = "a\nbb\nccc\n";

    (void)state;
    assert_int_equal(text_lines("a\nb", 3), 2);
    assert_int_equal(text_lines("a\nb\n", 4), 2);
    assert_int_equal(text_lines("", 0), 0);
    truncate_head(&t, s, strlen(s), 2, 100);
    assert_int_equal(t.len, 5);
    assert_string_equal(t.by, "lines");
    truncate_tail(&t, s, strlen(s), 2, 100);
    assert_int_equal(t.start, 2);
    truncate_tail(&t, s, strlen(s), 10, 4);
    assert_int_equal(t.start, 5); /* "ccc\n" */
    assert_string_equal(t.by, "bytes");
    /* utf8_floor never leaves half a character */
    assert_int_equal(utf8_floor("\xc3\xa9\xc3\xa9", 4, 3), 2);
    assert_int_equal(utf8_prefix_chars("\xc3\xa9x\xc3\xa9", 5, 2), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_unknown_and_validation),
        cmocka_unit_test(test_allowed_actions),
        cmocka_unit_test(test_hooked_tools),
        cmocka_unit_test(test_ls),
        cmocka_unit_test(test_ls_bytes_limit),
        cmocka_unit_test(test_read_paging),
        cmocka_unit_test(test_read_bytes_and_utf8),
        cmocka_unit_test(test_git_refused),
        cmocka_unit_test(test_file_cap),
        cmocka_unit_test(test_read_huge),
        cmocka_unit_test(test_spill_state_folder),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_edit_exact),
        cmocka_unit_test(test_edit_normalised),
        cmocka_unit_test(test_edit_crlf_bom),
        cmocka_unit_test(test_edit_diff_small),
        cmocka_unit_test(test_grep),
        cmocka_unit_test(test_grep_many),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_bash),
        cmocka_unit_test(test_redaction),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_truncate_helpers),
        cmocka_unit_test(test_check_programs),
        cmocka_unit_test(test_truncate_random),
    };
    int rc;

    testutil_setup("tools");
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    tool_result_release(&R);
    config_reset();
    return rc;
}
