/*
 * elaborate_view.h - what the elaborate stage sees of the repository: a
 * read-only view (the file tree with sizes, the README, the files the goal
 * names) and the model's "look" requests (ls, read, grep) for a few turns.
 *
 * Everything is read through the tool registry (tools/tool.h) beneath the
 * repository's work folder, as hostile input: no link followed out of it,
 * git metadata refused, binary files skipped, outputs capped and secrets
 * redacted; every read is a tool_call.* event of the goal's run.  Each part
 * says what was cut.
 */
#ifndef GOALD_LIFECYCLE_ELABORATE_VIEW_H
#define GOALD_LIFECYCLE_ELABORATE_VIEW_H

#include "util/strbuf.h"

struct job_ctx;
struct cJSON;

/* Look turns the model may have, and look requests a turn. */
#define ELAB_LOOK_TURNS 4
#define ELAB_LOOK_CALLS 6

/* Append the view of the folder root (absolute) to user. */
void elaborate_view_add(strbuf *user, struct job_ctx *j, const char *root);

/* Run the look requests (an array of {tool, path, pattern, offset,
 * limit}) beneath root and append their results to user, with turn (1..)
 * and, when last, a note that no look is left.  Returns how many ran. */
int elaborate_view_look(strbuf *user, struct job_ctx *j, const char *root,
                        const struct cJSON *look, int turn, int last);

#endif
