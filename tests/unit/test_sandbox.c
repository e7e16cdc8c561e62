/* Unit tests: sandbox_run() capture, limits and reporting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/drop.h"
#include "sandbox/sandbox.h"
#include "store/event.h"
#include "tests/unit/testutil.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"

static char root[600];

static void fresh(const char *name)
{
    snprintf(root, sizeof(root), "%s/%s", testutil_dir, name);
    fs_remove_tree(root);
    assert_int_equal(fs_mkdir_p(root, 0755), 0);
}

static int sh(struct sandbox_result *res, const char *cmd, int merge, int timeout_ms)
{
    struct sandbox_spec spec = {0};

    spec.root = root;
    spec.command = cmd;
    spec.merge_stderr = merge;
    spec.timeout_ms = timeout_ms;
    return sandbox_run(&spec, res);
}

static void test_capture(void **state)
{
    struct sandbox_result r;

    (void)state;
    fresh("capture");
    assert_int_equal(sh(&r, "printf 'a\\nb'; printf 'e1\\ne2\\n' >&2; exit 7", 0, 0), 0);
    assert_int_equal(r.exit_code, 7);
    assert_int_equal(r.term_signal, 0);
    assert_false(r.timed_out);
    assert_string_equal(r.out.data, "a\nb");
    assert_int_equal(r.out.total_lines, 2);
    assert_int_equal(r.out.total_bytes, 3);
    assert_string_equal(r.err.data, "e1\ne2\n");
    assert_int_equal(r.err.total_lines, 2);
    assert_false(r.out.truncated);
    sandbox_result_release(&r);
    /* merged: one ordered stream */
    assert_int_equal(sh(&r, "echo 1; echo 2 >&2; echo 3", 1, 0), 0);
    assert_string_equal(r.out.data, "1\n2\n3\n");
    assert_int_equal(r.err.len, 0);
    sandbox_result_release(&r);
    /* killed by a signal */
    assert_int_equal(sh(&r, "kill -KILL $$", 0, 0), 0);
    assert_int_equal(r.exit_code, 137);
    assert_int_equal(r.term_signal, 9);
    sandbox_result_release(&r);
}

static void test_tail_and_spill(void **state)
{
    struct sandbox_spec spec = {0};
    struct sandbox_result r;
    char spill[700];
    strbuf sb = STRBUF_INIT;

    (void)state;
    fresh("tail");
    snprintf(spill, sizeof(spill), "%s/../tail.spill", root);
    spec.root = root;
    spec.command = "seq 1 100000";
    spec.tail_cap = 1000;
    spec.spill_path = spill;
    assert_int_equal(sandbox_run(&spec, &r), 0);
    assert_true(r.out.truncated);
    assert_int_equal(r.out.len, 1000);
    assert_int_equal(r.out.total_lines, 100000);
    assert_int_equal(r.out.total_bytes, 588895);
    assert_true(r.spilled);
    assert_string_equal(r.out.data + 1000 - 13, "99999\n100000\n");
    assert_int_equal(fs_read_file(&sb, spill, 1 << 20), 0);
    assert_int_equal(sb.len, 588895);
    sandbox_result_release(&r);
    strbuf_release(&sb);
    /* a spill cap */
    spec.spill_max = 100;
    assert_int_equal(sandbox_run(&spec, &r), 0);
    assert_false(r.spilled);
    assert_int_equal(fs_read_file(&sb, spill, 1 << 20), 0);
    assert_int_equal(sb.len, 100);
    sandbox_result_release(&r);
    strbuf_release(&sb);
}

static int stop_after(void *arg, const char *data, size_t len)
{
    size_t *seen = arg;
    (void)data;
    *seen += len;
    return *seen > 1000;
}

static void test_stop_and_timeout(void **state)
{
    struct sandbox_spec spec = {0};
    struct sandbox_result r;
    size_t seen = 0;

    (void)state;
    fresh("stop");
    spec.root = root;
    spec.command = "yes";
    spec.on_stdout = stop_after;
    spec.on_stdout_arg = &seen;
    spec.timeout_ms = 20000;
    assert_int_equal(sandbox_run(&spec, &r), 0);
    assert_true(r.stopped);
    assert_false(r.timed_out);
    assert_true(r.duration_ms < 5000);
    sandbox_result_release(&r);
    assert_int_equal(sh(&r, "sleep 30", 0, 500), 0);
    assert_true(r.timed_out);
    assert_true(r.duration_ms >= 500 && r.duration_ms < 4000);
    assert_int_equal(r.term_signal, 15);
    sandbox_result_release(&r);
    /* a command that ignores SIGTERM is killed after the grace period */
    setenv("GOALD_SANDBOX_KILL_GRACE_MS", "300", 1);
    config_load(NULL);
    assert_int_equal(sh(&r, "trap '' TERM; sleep 30", 0, 300), 0);
    assert_true(r.timed_out);
    assert_true(r.duration_ms < 4000);
    sandbox_result_release(&r);
    unsetenv("GOALD_SANDBOX_KILL_GRACE_MS");
    config_load(NULL);
}

static void test_describe(void **state)
{
    struct sandbox_spec spec = {0};
    char *text = NULL;
    char want[1400];

    (void)state;
    fresh("describe");
    spec.root = root;
    spec.command = "true";
    /* the environment is bubblewrap's own, never arguments (ps shows those) */
    setenv("GOALD_SANDBOX_ENV", "[\"DESCRIBE_SECRET\"]", 1);
    setenv("DESCRIBE_SECRET", "value-in-argv", 1);
    config_load(NULL);
    assert_int_equal(sandbox_describe(&spec, &text), 0);
    unsetenv("GOALD_SANDBOX_ENV");
    unsetenv("DESCRIBE_SECRET");
    config_load(NULL);
    assert_null(strstr(text, "value-in-argv"));
    assert_null(strstr(text, "--setenv"));
    static const char *flags[] = {
        "--unshare-net\n", "--unshare-pid\n",   "--unshare-user\n", "--die-with-parent\n",
        "--new-session\n", "--cap-drop\nALL\n", "--ro-bind\n/usr\n/usr\n",
        "--tmpfs\n/tmp\n", "--remount-ro\n/\n", "--proc\n/proc\n"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (!strstr(text, flags[i]))
            fail_msg("missing %s in %s", flags[i], text);
    /* as root the worktree reaches bubblewrap through the stage folder */
    if (geteuid() == 0)
        snprintf(want, sizeof(want), "--bind\n%s/0\n%s\n", SANDBOX_STAGE, root);
    else
        snprintf(want, sizeof(want), "--bind\n%s\n%s\n", root, root);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "--chdir\n%s\n", root);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "--\nbash\n-c\ntrue\n"));
    free(text);
}

static void test_selftest_and_refusal(void **state)
{
    char detail[512];
    struct sandbox_result r;

    (void)state;
    assert_int_equal(sandbox_selftest(detail, sizeof(detail)), 0);
    assert_non_null(strstr(detail, "runs `true` in"));
    setenv("GOALD_SANDBOX_BWRAP", "/nonexistent/bwrap", 1);
    config_load(NULL);
    assert_int_equal(sandbox_selftest(detail, sizeof(detail)), ERR_POLICY);
    assert_non_null(strstr(err_last(), "apt-get install bubblewrap"));
    fresh("refuse");
    assert_int_equal(sh(&r, "touch ran", 0, 0), ERR_POLICY);
    {
        char ran[700];
        snprintf(ran, sizeof(ran), "%s/ran", root);
        assert_false(fs_exists(ran));
    }
    unsetenv("GOALD_SANDBOX_BWRAP");
    config_load(NULL);
    assert_int_equal(sh(&r, "true", 0, 0), 0);
    sandbox_result_release(&r);
}

static int count_events(const struct store_event *ev, void *arg)
{
    if (!strcmp(ev->type, "sandbox.unconfined"))
        ++*(int *)arg;
    return 0;
}

static void test_unconfined(void **state)
{
    struct sandbox_spec spec = {0};
    struct sandbox_result r;
    char db[700];
    store *st;
    int n = 0;

    (void)state;
    fresh("none");
    snprintf(db, sizeof(db), "%s/../none.db", root);
    assert_int_equal(store_open(&st, db), 0);
    setenv("GOALD_SANDBOX", "none", 1);
    config_load(NULL);
    spec.root = root;
    spec.command = "echo $HOSTNAME; cat /proc/self/status | grep -c NSpid";
    spec.st = st;
    assert_int_equal(sandbox_run(&spec, &r), 0);
    assert_true(r.unconfined);
    assert_int_equal(r.exit_code, 0);
    sandbox_result_release(&r);
    assert_int_equal(sandbox_run(&spec, &r), 0);
    sandbox_result_release(&r);
    assert_int_equal(store_event_each(st, NULL, 0, 0, count_events, &n), 0);
    assert_int_equal(n, 2);
    setenv("GOALD_SANDBOX", "sometimes", 1);
    config_load(NULL);
    assert_int_equal(sandbox_run(&spec, &r), ERR_INVALID);
    unsetenv("GOALD_SANDBOX");
    config_load(NULL);
    store_close(st);
}

static uid_t owner_of(const char *rel)
{
    char p[800];
    struct stat st;

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(lstat(p, &st), 0);
    return st.st_uid;
}

static void put(const char *rel, const char *text)
{
    char p[800];

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(fs_write_atomic(p, text, strlen(text), 0644), 0);
}

/* As root, the tree a command writes is given to the sandbox user: folders
 * and files goald's user owns, never the top `.git`, a link or what it
 * names, a file with a second link, or another user's file; the top folder
 * stays root's with the sandbox group allowed to write. */
static void test_drop_give(void **state)
{
    char p[800], q[800];
    struct stat st;

    (void)state;
    if (geteuid() != 0)
        skip();
    fresh("give");
    put("a.txt", "a");
    snprintf(p, sizeof(p), "%s/sub/deeper", root);
    assert_int_equal(fs_mkdir_p(p, 0755), 0);
    put("sub/deeper/b.txt", "b");
    put(".git", "gitdir: /nowhere\n");
    put("theirs.txt", "t");
    snprintf(p, sizeof(p), "%s/theirs.txt", root);
    assert_int_equal(chown(p, 4321, 4321), 0);
    snprintf(p, sizeof(p), "%s/../give-outside", root);
    put("../give-outside", "outside");
    snprintf(q, sizeof(q), "%s/link", root);
    unlink(q);
    assert_int_equal(symlink(p, q), 0);
    snprintf(q, sizeof(q), "%s/hard.txt", root);
    put("linked.txt", "l");
    snprintf(p, sizeof(p), "%s/linked.txt", root);
    assert_int_equal(link(p, q), 0);

    assert_int_equal(sandbox_drop_give(root, 65534, 65534), 0);
    assert_int_equal(owner_of("a.txt"), 65534);
    assert_int_equal(owner_of("sub"), 65534);
    assert_int_equal(owner_of("sub/deeper"), 65534);
    assert_int_equal(owner_of("sub/deeper/b.txt"), 65534);
    assert_int_equal(owner_of(".git"), 0);
    assert_int_equal(owner_of("theirs.txt"), 4321);
    assert_int_equal(owner_of("link"), 0);
    assert_int_equal(owner_of("../give-outside"), 0);
    assert_int_equal(owner_of("linked.txt"), 0);
    assert_int_equal(stat(root, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_gid, 65534);
    assert_int_equal(st.st_mode & 0070, 0070);
    /* a link as the root is refused; so are / and the system's folders */
    snprintf(p, sizeof(p), "%s/link", root);
    assert_int_equal(sandbox_drop_give(p, 65534, 65534), ERR_IO);
    assert_int_equal(sandbox_drop_give("/", 65534, 65534), ERR_POLICY);
    assert_int_equal(sandbox_drop_give("/tmp", 65534, 65534), ERR_POLICY);
    assert_int_equal(sandbox_drop_give("/usr/share", 65534, 65534), ERR_POLICY);
    assert_int_equal(stat("/usr/share", &st), 0);
    assert_int_equal(st.st_uid, 0);
}

/* As root, a command runs as sandbox.uid/sandbox.gid with no other group:
 * it writes its worktree (a file goald made there too), and a root-only
 * file outside is out of its reach even where it is mounted (/etc). */
/* bubblewrap that gives up while it sets the mounts up (a mount made
 * elsewhere at that moment: its remount fails) ran nothing: the command
 * is run once more.  A stand-in prints bubblewrap's message and exits 1
 * the first time, then runs the real one. */
static void test_setup_race_retried(void **state)
{
    char dir[] = "/tmp/goald-fakebwrap-XXXXXX", fake[64], mark[64], real[4096], script[8192];
    struct sandbox_result r;

    (void)state;
    assert_int_equal(sandbox_find_bwrap(real, sizeof(real)), 0);
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 01777), 0); /* the sandbox user writes its mark too */
    snprintf(fake, sizeof(fake), "%s/bwrap", dir);
    snprintf(mark, sizeof(mark), "%s/raced", dir);
    snprintf(script, sizeof(script),
             "#!/bin/sh\nif [ ! -e %s ]; then : > %s; echo \"bwrap: Can't bind mount "
             "/oldroot/dev/null on /newroot/etc/gshadow: Unable to remount destination "
             "\\\"/newroot/etc/gshadow\\\" with correct flags: Invalid argument\" >&2; "
             "exit 1; fi\nexec %s \"$@\"\n",
             mark, mark, real);
    assert_int_equal(fs_write_atomic(fake, script, strlen(script), 0755), 0);
    setenv("GOALD_SANDBOX_BWRAP", fake, 1);
    config_load(NULL);
    fresh("race");
    assert_int_equal(sh(&r, "echo ran", 1, 0), 0);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.out.data, "ran\n");
    assert_true(fs_exists(mark)); /* the stand-in raced once */
    sandbox_result_release(&r);
    unsetenv("GOALD_SANDBOX_BWRAP");
    config_load(NULL);
    unlink(fake);
    unlink(mark);
    rmdir(dir);
}

static void test_drop_run(void **state)
{
    struct sandbox_result r;
    char secret[] = "/etc/goald-unit-secret-XXXXXX";
    int fd;

    (void)state;
    if (geteuid() != 0)
        skip();
    fresh("droprun");
    put("mine.txt", "goald wrote this\n");
    fd = mkstemp(secret);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "root-only\n", 10), 10);
    close(fd);
    assert_int_equal(chmod(secret, 0600), 0);
    {
        char cmd[600];
        snprintf(cmd, sizeof(cmd),
                 "id -u; id -g; id -G; echo more >>mine.txt && echo new >new.txt && echo wrote; "
                 "cat %s || echo refused",
                 secret);
        assert_int_equal(sh(&r, cmd, 1, 0), 0);
    }
    unlink(secret);
    assert_non_null(strstr(r.out.data, "65534\n65534\n65534\nwrote\n"));
    assert_null(strstr(r.out.data, "root-only"));
    assert_non_null(strstr(r.out.data, "refused"));
    sandbox_result_release(&r);
    assert_int_equal(owner_of("new.txt"), 65534);
    /* another user, and 0 refused */
    setenv("GOALD_SANDBOX_UID", "4321", 1);
    setenv("GOALD_SANDBOX_GID", "4322", 1);
    config_load(NULL);
    assert_int_equal(sh(&r, "id -u; id -g; touch other.txt", 1, 0), 0);
    assert_string_equal(r.out.data, "4321\n4322\n");
    sandbox_result_release(&r);
    assert_int_equal(owner_of("other.txt"), 4321);
    unsetenv("GOALD_SANDBOX_UID");
    unsetenv("GOALD_SANDBOX_GID");
    config_load(NULL);
}

static void test_bad_spec(void **state)
{
    struct sandbox_spec spec = {0};
    struct sandbox_result r;

    (void)state;
    spec.command = "true";
    spec.root = "relative";
    assert_int_equal(sandbox_run(&spec, &r), ERR_INVALID);
    spec.root = "/nonexistent/folder";
    assert_int_equal(sandbox_run(&spec, &r), ERR_INVALID);
    spec.root = "/tmp";
    spec.command = NULL;
    assert_int_equal(sandbox_run(&spec, &r), ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_tail_and_spill),
        cmocka_unit_test(test_stop_and_timeout),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_selftest_and_refusal),
        cmocka_unit_test(test_setup_race_retried),
        cmocka_unit_test(test_unconfined),
        cmocka_unit_test(test_bad_spec),
        cmocka_unit_test(test_drop_give),
        cmocka_unit_test(test_drop_run),
    };
    int rc;

    testutil_setup("sandbox");
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    config_reset();
    return rc;
}
