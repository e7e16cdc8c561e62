#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "util/jsonw.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

static enum log_level cur_level = LOG_WARN;
static const char *names[] = {"error", "warn", "info", "debug"};
/* syslog priorities (err, warning, info, debug) for journald's "<N>" */
static const char *const prio[] = {"<3>", "<4>", "<6>", "<7>"};
static int journal; /* stderr is connected to the journal */

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected
 * to stderr: when it is still our stderr, each line starts with its
 * priority so that journald files it at the right level. */
static int stderr_is_journal(void)
{
    const char *e = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;

    if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return ERR_INVALID;
}

enum log_level log_level_named(const char *name, enum log_level dflt)
{
    enum log_level l;

    return name && log_level_parse(name, &l) == 0 ? l : dflt;
}

const char *log_level_name(enum log_level lvl)
{
    return (unsigned)lvl < 4 ? names[lvl] : "?";
}

void log_init(enum log_level dflt)
{
    const char *e = getenv("GOALD_LOG_LEVEL");
    enum log_level l;

    cur_level = dflt;
    journal = stderr_is_journal();
    if (e && *e && log_level_parse(e, &l) == 0)
        cur_level = l;
}

void log_set_level(enum log_level lvl)
{
    cur_level = lvl;
}

enum log_level log_get_level(void)
{
    return cur_level;
}

static int file_fd = -1;
static char *file_path;

int log_open_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);

    if (fd < 0)
        return err_set(ERR_IO, "%s: cannot open the log file: %s", path, strerror(errno));
    if (file_fd >= 0)
        close(file_fd);
    file_fd = fd;
    if (file_path != path) {
        free(file_path);
        file_path = xstrdup(path);
    }
    return 0;
}

int log_reopen(void)
{
    if (!file_path)
        return 0;
    return log_open_file(file_path);
}

void log_close_file(void)
{
    if (file_fd >= 0)
        close(file_fd);
    file_fd = -1;
    free(file_path);
    file_path = NULL;
}

/* 1 when s is a JSON integer (-?(0|[1-9][0-9]*), at most 15 digits, so
 * that a double holds it exactly): such values are written as numbers. */
static int is_json_int(const char *s)
{
    size_t n = 0;

    if (*s == '-')
        s++;
    if (!*s || (s[0] == '0' && s[1]))
        return 0;
    for (; *s; s++, n++)
        if (*s < '0' || *s > '9' || n >= 15)
            return 0;
    return 1;
}

/* Append one "key":value field to sb; one that does not fit in the
 * line's cap is left out (sb as it was), the next may fit. */
static void add_field(strbuf *sb, const char *key, const char *value)
{
    size_t len = sb->len;
    int rc;

    if ((rc = strbuf_addc(sb, ',')) == 0 && (rc = json_escape_append(sb, key)) == 0 &&
        (rc = strbuf_addc(sb, ':')) == 0)
        rc = is_json_int(value) ? strbuf_adds(sb, value) : json_escape_append(sb, value);
    if (rc)
        strbuf_setlen(sb, len);
}

/* 1 when field i of kv is to be left out: no value, or its key was
 * written already ("time", "level", "pid" or an earlier field's). */
static int field_skipped(const char *const *kv, size_t i)
{
    if (!kv[i + 1])
        return 1;
    if (!strcmp(kv[i], "time") || !strcmp(kv[i], "level") || !strcmp(kv[i], "pid"))
        return 1;
    for (size_t j = 0; j < i; j += 2)
        if (kv[j + 1] && !strcmp(kv[j], kv[i]))
            return 1;
    return 0;
}

#define LOG_LINE_MAX (1 << 16)

/* Append " key=value" to sb, or nothing when it does not fit in the
 * line's cap (the next may). */
static void add_word(strbuf *sb, const char *key, const char *value)
{
    if (strbuf_addf(sb, " %s=%s", key, value) != 0) {
        /* left out: strbuf_addf leaves sb as it was */
    }
}

/* One JSON line to the log file: time, level, pid, then fields.  A key is
 * written once (a field named like an earlier one, "pid" included, is
 * left out); integer values are JSON numbers, everything else strings.
 * Fields that would pass LOG_LINE_MAX are left out: the line stays JSON. */
static void file_line(enum log_level lvl, const char *const *kv, size_t nkv)
{
    char t[TIME_RFC3339_MAX];
    strbuf sb;
    int rc;

    if (file_fd < 0)
        return;
    strbuf_init(&sb, LOG_LINE_MAX);
    if ((rc = strbuf_adds(&sb, "{\"time\":")) == 0 &&
        (rc = json_escape_append(&sb, time_format_rfc3339_ms(t, sizeof(t), time_now_ms()))) == 0)
        rc = strbuf_addf(&sb, ",\"level\":\"%s\",\"pid\":%ld", names[lvl], (long)getpid());
    for (size_t i = 0; i + 1 < nkv && !rc; i += 2)
        if (!field_skipped(kv, i))
            add_field(&sb, kv[i], kv[i + 1]);
    sb.cap += 2; /* room for the end, whatever the fields took */
    if (!rc && strbuf_adds(&sb, "}\n") == 0 && write(file_fd, sb.buf, sb.len) < 0) {
        /* nowhere left to report it */
    }
    strbuf_release(&sb);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    char line[2048];
    int n;
    va_list ap;

    if (lvl > cur_level)
        return;
    n = snprintf(line, sizeof(line), "%sgoald[%ld]: %s: ", journal ? prio[lvl] : "",
                 (long)getpid(), names[lvl]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    {
        const char *kv[] = {"msg", line + n};
        file_line(lvl, kv, 2);
    }
    n = (int)strlen(line);
    line[n++] = '\n';
    /* one write so that lines of concurrent processes do not interleave */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

void log_event(enum log_level lvl, const char *event, ...)
{
    const char *kv[64];
    size_t n = 0;
    strbuf sb;
    va_list ap;
    int rc;

    if (lvl > cur_level)
        return;
    kv[n++] = "event";
    kv[n++] = event;
    va_start(ap, event);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k || n + 2 > sizeof(kv) / sizeof(kv[0]))
            break;
        kv[n++] = k;
        kv[n++] = va_arg(ap, const char *);
    }
    va_end(ap);
    file_line(lvl, kv, n);
    strbuf_init(&sb, LOG_LINE_MAX);
    rc = strbuf_addf(&sb, "%sgoald[%ld]: %s: %s", journal ? prio[lvl] : "", (long)getpid(),
                     names[lvl], event);
    for (size_t i = 2; i + 1 < n && !rc; i += 2)
        if (kv[i + 1])
            add_word(&sb, kv[i], kv[i + 1]);
    sb.cap += 1; /* room for the newline, whatever the fields took */
    if (!rc && strbuf_addc(&sb, '\n') == 0 && write(STDERR_FILENO, sb.buf, sb.len) < 0) {
        /* stderr is gone */
    }
    strbuf_release(&sb);
}
