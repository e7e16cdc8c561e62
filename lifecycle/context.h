/*
 * context.h - context packs: where a work item's runs left off, built
 * deterministically from the ledger (events, runs, gate results) after
 * every run, and given to the item's next run.
 *
 * A pack: {"phase", "completed_steps", "next_steps", "open_questions",
 * "files_touched", "gate_status", "last_failures", "summary"}, and after a
 * worktree reset {"worktree", "discarded_steps", "discarded_files"}: the
 * steps and files before the last reset, whose changes the reset took
 * out of the worktree (completed_steps and files_touched are those since).
 */
#ifndef GOALD_LIFECYCLE_CONTEXT_H
#define GOALD_LIFECYCLE_CONTEXT_H

#include "store/store.h"
#include "util/strbuf.h"

struct job_ctx;
struct cJSON;

/* Build the pack of j's item as the ledger stands (model_summary may be
 * NULL); *out is freed with cJSON_Delete(). */
int context_pack_build(store *st, const char *item_id, const char *model_summary,
                       struct cJSON **out);

/* Build and store the pack after j's run (the item's runs only). */
int context_pack_write(struct job_ctx *j, const char *model_summary);

/* Append to sb every answer a human gave to the item's escalations, newest
 * first (at most 20): the action, the question it answered (cut) and the
 * human's input (the retry's words, the alternative, the accepted test
 * cases, ...), after the line intro; nothing when there is none.  Returns
 * how many were listed. */
int context_human_answers(strbuf *sb, store *st, const char *item_id, const char *intro);

/* The latest pack of an item as JSON text (caller frees), *out NULL when
 * there is none. */
int context_pack_latest(store *st, const char *item_id, char **out);

#endif
