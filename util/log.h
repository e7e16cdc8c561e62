/*
 * log.h - leveled logging to stderr (journald friendly: one line per
 * message, "goald[pid]: level: message", and when systemd connected
 * stderr to the journal (JOURNAL_STREAM) each line starts with its syslog
 * priority, "<3>" error to "<7>" debug).  The level comes from
 * GOALD_LOG_LEVEL (error, warn, info, debug; default warn for commands,
 * the daemon raises it to info).
 */
#ifndef GOALD_UTIL_LOG_H
#define GOALD_UTIL_LOG_H

#include "util/err.h"

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_init(enum log_level dflt); /* reads GOALD_LOG_LEVEL */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
int log_level_parse(const char *s, enum log_level *out); /* 0 or ERR_INVALID */
/* The level a name says (log.level), or dflt when name is NULL or unknown. */
enum log_level log_level_named(const char *name, enum log_level dflt);
const char *log_level_name(enum log_level lvl);

void log_msg(enum log_level lvl, const char *fmt, ...) GOALD_PRINTF(2, 3);

/* Also append every message, as one JSON line {"time","level","pid",
 * "msg"}, to path (`--log-file`); log_reopen() reopens it (SIGUSR1, after
 * logrotate moved it).  0 or ERR_IO.  The file is opened O_APPEND, so
 * several processes may share it. */
int log_open_file(const char *path);
int log_reopen(void);
void log_close_file(void);

/* A structured line: event name and string fields (NULL-terminated
 * key/value pairs; NULL values are left out), to the JSON file and, as
 * "event key=value ...", to stderr.  In the JSON line each key appears
 * once (time, level and pid come first and are not repeated; a later
 * field with an earlier field's name is dropped) and a value that is a
 * decimal integer is written as a JSON number. */
void log_event(enum log_level lvl, const char *event, ...);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
